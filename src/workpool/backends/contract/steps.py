"""The steps of a running run, the children its steps start, and events: sent to a run,
or published by it.

Events: ``send_event`` stores an event (a JSON payload) for a run under a key, after the
run's earlier events of that key; ``take_event`` hands the oldest to one step of the run
and removes it, in the operation that saves the step, so each event is taken by exactly
one step and none is lost whatever process dies when. A run that suspends waiting on
keys (``Finish.events``) is queued again by the ``send_event`` of one of them, in the
same operation as the store of the event. Separately, a running run publishes values
under keys (``set_event``) that anyone reads (``get_event``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from workpool.backends.contract.leases import Lease
from workpool.backends.contract.runs import NewRun

StepKind = Literal["run", "workflow", "emit", "sleep", "event"]

StepStatus = Literal["waiting", "succeeded", "failed", "canceled"]

EventSent = Literal["sent", "duplicate", "not_found", "finished"]


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One saved step of a run, keyed by its name within the run.

    ``kind``: ``run`` (a function's result), ``workflow`` (a child run awaited),
    ``emit`` (a child run started, not awaited), ``sleep`` (a durable timer) or
    ``event`` (an event sent to the run awaited: its payload is the output).
    ``status``: ``waiting`` (a child or timer pending), ``succeeded``, ``failed`` or
    ``canceled`` (an awaited child was canceled; ``error`` then holds
    ``{"type": "RunCanceledError", "message": <reason or "">, "traceback": null}``).
    """

    name: str
    kind: StepKind
    status: StepStatus
    attempts: int
    """How many times the step was executed to an outcome (success or failure)."""
    started_at: float
    output: str | None = None
    """JSON text, for ``succeeded`` (an ``emit`` step: the child run id as a JSON string)."""
    error: str | None = None
    """JSON text ``{"type", "message", "traceback"}`` for ``failed`` and ``canceled``."""
    child_run_id: str | None = None
    wake_at: float | None = None
    """``sleep``: when it ends; ``workflow`` and ``event``: when the wait times out."""
    finished_at: float | None = None
    position: int | None = None
    """Where the execution that saved it reached it among the run's steps, from 0
    (None: saved before steps recorded it)."""
    args_hash: str | None = None
    """A hash of what it was called with (arguments, child and input, event key), where
    the engine has one."""


@dataclass(frozen=True, slots=True)
class EventValue:
    """What ``get_event`` reads: the run's status and the value it published under the
    key (JSON text, None if it has not published one), read together."""

    status: str
    value: str | None


class Steps(Protocol):
    """Steps, children and events."""

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None = None
    ) -> StepRecord | None:
        """Store a step of the leased run, in ONE atomic operation; return it as stored.

        Only the lease holder writes: if the run is not ``running`` under ``lease``,
        change nothing and return None. Otherwise replace the run's step named
        ``step.name`` with ``step`` and mark the run as having steps (see
        ``ClaimedRun.has_steps``).

        With a ``child`` (steps of kind ``workflow`` and ``emit``), also enqueue it as
        ``enqueue`` does (idempotency key, existing id), with ``parent_run_id`` = the
        leased run and, for ``workflow``, ``parent_step`` = ``step.name``. The stored
        step's ``child_run_id`` is the child actually stored or found; an ``emit``
        step's ``output`` is that id as a JSON string. A ``workflow`` step whose child
        (found by its idempotency key) has already ended takes the child's outcome at
        once, as a child ending later would write it (see the package docstring). A run
        found by the key is not re-parented: the deterministic keys the step engine
        uses can only find this run's own child of that step.
        """
        ...

    async def take_event(
        self, lease: Lease, step: StepRecord, key: str, now: float
    ) -> StepRecord | None:
        """Store an ``event`` step of the leased run, taking the oldest event sent to the
        run under ``key`` if there is one, in ONE atomic operation; return it as stored.

        Only the lease holder writes: if the run is not ``running`` under ``lease``,
        change nothing and return None. If the run's step ``step.name`` is already stored
        ``succeeded``, change nothing and return that step (a repeated call, e.g. after an
        outage hid the reply, takes no second event). Else, if an event of ``key`` waits,
        remove the oldest and store ``step`` as ``succeeded`` with that event's payload
        as ``output`` and ``finished_at = now``; otherwise store ``step`` as given (a
        ``waiting`` step, or the ``succeeded`` one of a wait that timed out). Marks the
        run as having steps, as ``save_step`` does.
        """
        ...

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        """Every saved step of a run, oldest ``started_at`` first (none: empty list)."""
        ...

    async def get_children(self, run_id: str) -> list[str]:
        """The ids of the runs started by the run's steps, oldest first."""
        ...

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None = None,
        trace_context: str | None = None,
    ) -> EventSent:
        """Store an event for a run, in ONE atomic operation.

        Unknown run: ``"not_found"``. An ``event_id`` the run was sent before (whatever
        the key, taken or not, the run finished or not): ``"duplicate"``. A terminal
        run: ``"finished"``. None of these stores anything. Otherwise remember
        ``event_id`` (if given) with the run, store ``payload`` (JSON text) after the
        run's earlier events of ``key`` (``take_event`` takes them oldest first) and
        return ``"sent"``; if the run is ``suspended`` and its suspension waits on
        ``key`` (``Finish.events``), it becomes ``queued`` now as when an awaited child
        ends: out of its timer, through its rate limits and gate, its queue's workers
        woken. Events are kept until taken or until ``purge`` deletes the run; ``rerun``
        does not copy them. A run woken so, with a ``trace_context`` (opaque text: the
        sender's span), stores it in the same operation, and its next claim returns it
        as ``ClaimedRun.woken_by``.
        """
        ...

    async def set_event(self, lease: Lease, key: str, value: str) -> bool:
        """Publish ``value`` (JSON text) under ``key`` for the leased run, replacing its
        earlier value, in ONE operation; False (nothing written) if the run is not
        ``running`` under ``lease``. Values stay until ``purge`` deletes the run;
        ``rerun`` does not copy them."""
        ...

    async def get_event(self, run_id: str, key: str) -> EventValue | None:
        """The run's status and the value it published under ``key``, in one read (so a
        terminal status with no value means it never will have one); None if there is
        no such run."""
        ...

    async def list_published(self, run_id: str) -> dict[str, str]:
        """Every value the run published (``set_event``): key -> its latest value (JSON
        text), ordered by key, in one read. Empty if it published none, or if there is
        no such run (``get_run`` tells which). For people (``runs show``, the
        dashboard): a run's keys are few, and the read is O(their number)."""
        ...
