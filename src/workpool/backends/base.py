"""The Backend protocol: every state transition of a run, each one atomic.

This module is the specification both backends implement; the conformance suite in
``tests/conformance`` is its executable form. A backend is the only code that knows
keys, tables, scripts and SQL. It never imports user code or the serializer: inputs,
outputs, errors, retry policies and hook contexts reach it as JSON text, which it
stores and returns unchanged (it only composes the JSON input of completion hooks).

Atomicity: each method below is ONE atomic operation (one Lua script call on Redis,
one ``BEGIN IMMEDIATE`` transaction on SQLite), unless its docstring says it is a
batch of independent atomic operations. No method reads, then writes in a later
round trip.

Time: every time-dependent method takes ``now`` (seconds since the epoch, float) from
the caller's clock; backends never read the wall clock for run state, so tests drive
leases and schedules with a manual clock.

Run states::

    scheduled --(available_at <= now, promoted by claim)--> queued
    queued --claim--> running
    running --finish(retry)--> scheduled (or queued if retry_at <= now)
    running --lease expired, reaped by claim--> queued   (or failed / canceled, see claim)
    running --release--> queued
    running --finish--> succeeded | failed | canceled    (terminal, final)
    queued | scheduled --cancel--> canceled

Terminal transitions fire the run's completion hooks (see ``CompletionHook``) in the
same atomic operation, exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

RunState = Literal["scheduled", "queued", "running", "succeeded", "failed", "canceled"]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "canceled"})
ACTIVE_STATES: frozenset[str] = frozenset({"scheduled", "queued", "running"})

FinishStatus = Literal["succeeded", "failed", "canceled", "retry"]
CancelResult = Literal["canceled", "requested", "finished", "not_found"]


@dataclass(frozen=True, slots=True)
class CompletionHook:
    """A run to enqueue when the owning run reaches a terminal state.

    When the owning run ends (and, if ``on_failure_only``, only when it ends
    ``failed``), the backend enqueues, in the same atomic operation, a new run with
    a fresh id (``hook_run_id`` rule below), ``workflow``/``queue``/``retry`` from
    the hook, ``available_at = now`` and this exact JSON input (keys in this order,
    no whitespace requirements)::

        {"run_id": <owning run id>, "workflow": <owning workflow name>,
         "context": <context JSON>,
         "result": {"status": "succeeded", "output": <output JSON>}
                 | {"status": "failed", "error": <error JSON>}
                 | {"status": "canceled", "reason": <reason string or null>}}

    The hook run's id is ``<owning run id>-<index of the hook in hooks, from 0>``, so
    a hook can never be enqueued twice.
    """

    workflow: str
    queue: str
    context: str
    """JSON text passed through as ``context``."""
    retry: str | None
    """JSON text of the hook run's retry policy, or None (one attempt)."""
    on_failure_only: bool


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run to store. The id is chosen by the caller (so batches need no round trip)."""

    id: str
    workflow: str
    queue: str
    input: str
    """JSON text."""
    available_at: float
    """When the run may start. ``<= now``: stored ``queued``; later: ``scheduled``."""
    retry: str | None = None
    """JSON text of the retry policy, stored and returned with claims; None: one attempt."""
    hooks: tuple[CompletionHook, ...] = ()
    idempotency_key: str | None = None
    """With a key, a second enqueue of (workflow, key) within the TTL stores nothing."""
    idempotency_ttl: float = 7 * 24 * 3600.0
    """Seconds the idempotency key is remembered, from this enqueue."""


@dataclass(frozen=True, slots=True)
class Enqueued:
    """Outcome of enqueueing one NewRun."""

    run_id: str
    """The stored run: the new one, or the earlier run holding the idempotency key."""
    created: bool
    """False when an unexpired idempotency key matched and nothing was stored."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as stored. JSON fields are returned as the text that was stored."""

    id: str
    workflow: str
    queue: str
    status: str
    attempts: int
    """Claims so far (each claim adds one, including reclaims after a lost lease)."""
    input: str
    output: str | None
    error: str | None
    """JSON text ``{"type", "message", "traceback"}`` of the last failure, or None."""
    retry: str | None
    created_at: float
    available_at: float
    started_at: float | None
    """When the latest attempt was claimed."""
    finished_at: float | None
    cancel_requested: bool
    cancel_reason: str | None
    lease_losses: int
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof that a worker holds a running run. Writes with a stale lease are refused."""

    run_id: str
    token: str
    """Unique per claim: a later claim of the same run gets a different token."""


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    """A run handed to a worker by ``claim``; it is ``running`` under ``lease``."""

    lease: Lease
    workflow: str
    queue: str
    input: str
    attempt: int
    """This attempt's number, from 1 (the run's ``attempts`` after the claim)."""
    retry: str | None
    created_at: float
    available_at: float


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What ``claim`` returns."""

    runs: list[ClaimedRun]
    next_wake_at: float | None
    """Earliest future time at which claim could find new work in these queues without
    any new enqueue: the first scheduled run's ``available_at`` or the first lease
    expiry, whichever is sooner; None when there is neither."""


@dataclass(frozen=True, slots=True)
class RenewResult:
    """What ``renew`` returns."""

    lost: frozenset[str]
    """Run ids whose lease the caller no longer holds: stop them without writing."""
    cancel_requested: frozenset[str]
    """Run ids (lease still held) whose cancel was requested: interrupt them."""


@dataclass(frozen=True, slots=True)
class Finish:
    """The end of one attempt, reported by the lease holder."""

    lease: Lease
    status: FinishStatus
    output: str | None = None
    """JSON text, for ``succeeded``."""
    error: str | None = None
    """JSON text ``{"type", "message", "traceback"}``, for ``failed`` and ``retry``."""
    retry_at: float | None = None
    """For ``retry``: when the next attempt may start."""


class Backend(Protocol):
    """Storage and every state transition of runs. Implementations: sqlite, redis."""

    async def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store runs, all in ONE atomic operation; results in input order.

        Each run is stored ``queued`` if ``available_at <= now`` else ``scheduled``,
        with ``attempts = 0``, ``created_at = now`` and every index updated. A run with
        an idempotency key whose (workflow, key) maps to a run id remembered less than
        its TTL ago returns ``Enqueued(that id, created=False)`` and stores nothing,
        even if that run has since finished. Expired keys are replaced. Within one
        batch, a repeated (workflow, key) resolves to the first run of the batch.
        Enqueueing an id that already exists returns ``created=False`` and changes
        nothing. Wakes any worker blocked in ``wait_for_work`` on that queue.
        """
        ...

    async def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
    ) -> ClaimResult:
        """In ONE atomic operation: promote, reap, then claim up to ``limit`` runs.

        1. Promote: scheduled runs of these queues with ``available_at <= now`` become
           ``queued`` (at most a bounded batch per call, e.g. 1000, oldest first).
        2. Reap: running runs of these queues whose lease expired (``expiry <= now``)
           get ``lease_losses += 1``, then: if cancel was requested, end ``canceled``;
           else if ``lease_losses >= max_lease_losses``, end ``failed`` with error
           ``{"type": "WorkerLostError", "message": <says the lease was lost N times,
           the worker died or stalled each time, and it will not be retried>,
           "traceback": null}``; else become ``queued`` again (available now). Both
           terminal cases fire hooks. At most a bounded batch per call.
        3. Claim: take up to ``limit`` queued runs, queues in the order given, oldest
           ``available_at`` first within a queue, and make each ``running``:
           ``attempts += 1``, ``started_at = now``, a new lease token, lease expiry
           ``now + lease_seconds``.
        """
        ...

    async def renew(self, leases: Sequence[Lease], lease_seconds: float, now: float) -> RenewResult:
        """Extend the given leases to ``now + lease_seconds`` in ONE operation.

        A lease is renewed only if its run is ``running`` with that same token (an
        expired but not yet reaped lease still counts as held and is renewed). Other
        leases are reported ``lost``. Renewed runs with a cancel request are reported
        in ``cancel_requested``.
        """
        ...

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """End attempts; a batch of independent transitions in ONE round trip.

        Each entry is applied only if its lease is held (run ``running``, same token),
        else it changes nothing and its result is False. Applied entries return True:
        - ``succeeded``: store output, ``finished_at = now``, end ``succeeded``.
        - ``failed`` or ``canceled``: store error (for failed), end in that state.
        - ``retry``: store error, become ``scheduled`` at ``retry_at`` (or ``queued``
          if ``retry_at <= now``), lease dropped.
        If cancel was requested for the run, ``failed``, ``canceled`` and ``retry``
        all end ``canceled`` (with the cancel reason, and the entry's error, if any,
        stored as the last failure); ``succeeded`` stays succeeded.
        Terminal outcomes fire hooks.
        """
        ...

    async def release(self, leases: Sequence[Lease], now: float) -> None:
        """Hand leases back (graceful shutdown): each held run becomes ``queued`` now.

        One operation; ``attempts`` is not changed back; no lease loss is counted. A run
        with a cancel request ends ``canceled`` instead (hooks fire).
        """
        ...

    async def cancel(self, run_id: str, reason: str | None, now: float) -> CancelResult:
        """Cancel one run in ONE operation.

        ``queued``/``scheduled``: set ``cancel_requested``, end ``canceled`` now, store
        the reason, fire hooks, return ``"canceled"``. ``running``: set
        ``cancel_requested`` and the reason, return ``"requested"`` (the lease holder
        learns of it on its next renew); a second cancel keeps the first reason.
        Terminal: change nothing, return ``"finished"``. Unknown id: ``"not_found"``.
        """
        ...

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """Cancel up to ``limit`` non-terminal runs in ONE operation; return how many.

        Selects runs that are scheduled, queued or running (running ones not already
        cancel-requested), created before ``before`` (if given), of ``workflow`` (if
        given), and treats each as ``cancel`` does. Callers repeat until it returns 0.
        """
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Read one run, or None if there is no such run."""
        ...

    async def wait_for_work(self, queues: Sequence[str], timeout: float) -> None:
        """Block up to ``timeout`` seconds or until an enqueue to one of ``queues``.

        May return early spuriously; callers claim afterwards anyway. Must not busy
        poll: an idle worker costs the backend at most a few operations per second.
        """
        ...

    async def close(self) -> None:
        """Release connections and threads. The backend is unusable afterwards."""
        ...
