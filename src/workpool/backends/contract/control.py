"""An operator's actions (the CLI, the dashboard, the client's admin calls): cancel and
rerun runs, set queue limits, fail runs no worker serves, delete old runs.

Queue limits (``set_queue``): a claim starts no more of a queue's runs than its
``max_parallelism`` minus its running runs, and none while it is paused. A run that
leaves ``running`` in a queue with a ``max_parallelism`` wakes that queue's idle
workers if it has claimable runs; a claim that stopped at the limit does not (so idle
workers do not wake each other in turn while the queue is full).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import EllipsisType
from typing import Literal, Protocol

CancelResult = Literal["canceled", "requested", "finished", "not_found"]

RerunStatus = Literal["created", "exists", "not_found", "not_finished", "succeeded"]

RerunFromStep = Literal["queued", "not_found", "not_stopped", "no_step", "succeeded", "linked"]

RunAction = Literal["pause", "resume", "run_now"]
"""What ``act_on_run`` does to one run."""

ACTS_ON: dict[RunAction, frozenset[str]] = {
    "pause": frozenset({"queued", "scheduled"}),
    "resume": frozenset({"paused"}),
    "run_now": frozenset({"scheduled"}),
}
"""The states each ``act_on_run`` action changes; it leaves a run in any other as is."""


@dataclass(frozen=True, slots=True)
class Rerun:
    """What ``rerun`` returns: ``run_id`` is the new run (``created``), the run made by
    an earlier rerun (``exists``), or None."""

    status: RerunStatus
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """A queue's cluster-wide limits, as stored (never set: no limit, not paused)."""

    name: str
    max_parallelism: int | None = None
    """At most this many runs of the queue running at once, across workers; None: no limit."""
    paused: bool = False
    """A paused queue starts nothing (running runs finish, their outcomes are written)."""


class Control(Protocol):
    """Acting on runs and queues from outside their execution."""

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """Cancel one run in ONE operation.

        ``queued``/``scheduled``/``suspended``: set ``cancel_requested``, end
        ``canceled`` now, store the reason, fire hooks, return ``"canceled"``. ``running``: set
        ``cancel_requested``, the reason and ``trace_context`` (opaque text: the
        caller's span), return ``"requested"`` (the lease holder learns of it on its
        next renew, ``RenewResult.canceled_by``); a second cancel keeps the first reason
        and context. A run ended at once keeps no ``trace_context``: it never executes
        again, so nothing would read it.
        Terminal: change nothing, return ``"finished"``. Unknown id: ``"not_found"``.
        """
        ...

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """Cancel up to ``limit`` non-terminal runs in ONE operation; return how many.

        Selects runs that are scheduled, queued, suspended or running (running ones
        not already cancel-requested), created before ``before`` (if given), of ``workflow`` (if
        given), and treats each as ``cancel`` does. Callers repeat until it returns 0;
        the count may include children canceled along with a selected parent.
        """
        ...

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """Enqueue a ``failed`` or ``canceled`` run again as a new run, in ONE operation.

        The new run ``new_id`` copies the old one's workflow, queue, input, retry
        policy, hooks, concurrency gate and rate limits, has ``retry_of = run_id`` and
        no parent or idempotency key, and becomes queued as ``enqueue`` stores a run
        available now (rate reservation, gate admission, wake-up). The old run gets
        ``retried_as = new_id``. A run already re-run returns ``exists`` with the id of
        the run made then and changes nothing; ``not_found``, ``not_finished`` (active)
        and ``succeeded`` change nothing either.
        """
        ...

    async def rerun_from_step(
        self, run_id: str, step: str, reason: str, now: float
    ) -> RerunFromStep:
        """Execute a ``needs_attention``, ``failed`` or ``canceled`` run again from one
        of its saved steps, as the same run, in ONE operation validated before its
        first write.

        Deletes step ``step`` and every later one (a position at least its position;
        where either has no position, a ``started_at`` at least its), keeps the earlier
        ones, stores ``rerun_from`` = ``{"step": step, "reason": reason, "at": now,
        "count": <reruns from a step so far, this one included>}`` (JSON) on the run and
        queues it as a woken suspended run is queued (available now, through its rate
        limits and gate, its queue's workers woken). A ``needs_attention`` run's attempt
        goes on. A ``failed`` or ``canceled`` run starts afresh: ``attempts`` 0 (its next
        claim is attempt 1, a whole retry budget), ``finished_at``, ``error``,
        ``output``, ``cancel_reason`` and ``cancel_requested`` cleared, out of the
        finished runs (retention, listings) and out of its failure group. When it ends
        again its hooks fire again, their run ids suffixed with the count
        (``hook_run_id`` in ``backends/rerunning.py``).

        Nothing changes on ``not_found`` (no run), ``not_stopped`` (an active run not in
        needs_attention), ``succeeded``, ``linked`` (a finished run that is a child of
        another run, in a batch, or already re-run as a new run by ``rerun``: its
        ending was already counted by them) and ``no_step`` (no step of that name).
        """
        ...

    async def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        """Pause, resume or run now one run, in ONE operation validated before its first
        write; return the run's status before it (None: no such run). The run changes
        only if that status is in ``ACTS_ON[action]``:

        - ``pause`` (queued or scheduled) -> ``paused``: out of every queue index (never
          claimed, promoted or admitted); a gate place it held is freed and the gate
          admits its next waiting run; a rate reservation it held is dropped (not given
          back: the limiter's times are not rewound). ``available_at`` is kept. Its
          deadline still counts: a claim of its queue ends it ``failed`` when due.
        - ``resume`` (paused) -> queued at its kept ``available_at`` (so at its old rank),
          through its rate limits and gate as a promoted run is, or ``scheduled`` if
          ``available_at`` is later than ``now``; its queue's workers are woken.
        - ``run_now`` (scheduled: a future start or a retry's backoff) -> queued with
          ``available_at = now``, through its gate, using a rate reservation it holds
          (without one, it reserves as a promoted run does); attempts are unchanged.
        """
        ...

    async def set_queue(
        self,
        queue: str,
        *,
        max_parallelism: int | EllipsisType | None = ...,
        paused: bool | None = None,
        only_if_new: bool = False,
    ) -> QueueSettings:
        """Change a queue's settings in ONE operation; return them as now stored.

        ``...`` / None leave ``max_parallelism`` / ``paused`` unchanged. With
        ``only_if_new``, change nothing if the queue already has settings (a worker
        declaring its defaults must not undo an operator's change). When the change
        can let more runs start, wake the queue's idle workers.
        """
        ...

    async def get_queue(self, queue: str) -> QueueSettings:
        """A queue's settings (defaults if it has none)."""
        ...

    async def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        """End ``failed`` with ``error`` (JSON text) up to ``limit`` claimable runs of
        (``queue``, ``workflow``) that became available before ``available_before``,
        in claim order, in ONE operation (hooks fire, gates admit the next); return how
        many. The caller decides that no worker serves the pair. It reads the pair's
        claimable runs in claim order, so it may pass over runs of a higher priority
        that became available later."""
        ...

    async def purge(
        self,
        finished_before: float,
        limit: int,
        counters_before: float,
        hours_before: float = 0.0,
    ) -> int:
        """Delete up to ``limit`` terminal runs whose ``finished_at`` is before
        ``finished_before`` (oldest first), in ONE atomic operation; return how many.

        With each run go its steps, its children list, its events not taken and its
        published values, its idempotency key if that still points to it, and its
        entries in every index, so no index names a run that is gone. Runs it started
        and the run that started it are not touched (their own retention deletes them).
        Also deletes up to ``limit`` batches completed before ``finished_before`` (their
        runs ended before, so they go in the same or earlier calls), the counters of
        minutes before ``counters_before`` and those of hours before ``hours_before``
        (0: none). Callers repeat while it returns ``limit``.
        """
        ...
