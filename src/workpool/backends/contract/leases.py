"""Executing runs: a worker claims runs, holds each under a lease it renews, and ends
each attempt (``finish``) or hands the run back (``release``).

Attempts and executions: ``attempts`` never decreases. A claim adds one to it, except
the claim that resumes a run after ``finish(suspend)``: an execution resumed after a
wait is the same attempt as the one that suspended. ``executions`` (the claim count)
grows with every claim, resumes and re-executions after a lost lease included, and
``run_time`` adds up the time of every execution that a ``finish`` ended.

Deadlines: a run with a ``deadline`` (``NewRun``) that has not ended by then fails with
the error ``{"type": "DeadlineExceededError", "message": <says the deadline passed while
the run was STATUS, and that it is not retried>, "traceback": null}``, where STATUS is
``scheduled``, ``queued`` or ``suspended``: ``claim`` ends such runs of its queues
(step 3), hooks and batch counts firing as for any failure. A running run is left to
its lease holder, which stops its handler at the deadline (``ClaimedRun.deadline``);
if that worker is gone, the reap queues the run again and the same claim ends it. The
backend keeps active runs with a deadline in an index by (queue, deadline) that leaves
out running ones (or re-scores a running one to its lease expiry), so the step reads
only due entries: O(log n) per queue and claim, plus O(1) per run it ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

FinishStatus = Literal["succeeded", "failed", "canceled", "retry", "suspend", "attention"]


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
    has_steps: bool = False
    """Whether the run has saved steps (a replay): the worker then loads them."""
    fence: int = 0
    """The run's claim count, this claim included: it grows with every claim of the run,
    so a handler can fence its own writes with it (a later holder has a larger one)."""
    isolated: bool = False
    """The run lost its lease before and runs alone: the worker claims nothing else
    until it ends (see ``Backend.claim``)."""
    timeout: float | None = None
    """``NewRun.timeout``, as stored."""
    elapsed: float = 0.0
    """Seconds this attempt has already executed: the executions before its suspensions
    (0 for a new attempt), so a time limit counts execution, not waiting."""
    batch_id: str | None = None
    """The batch the run belongs to, if any."""
    trace_context: str | None = None
    """``NewRun.trace_context``, as stored."""
    deadline: float | None = None
    """``NewRun.deadline``, as stored: the worker stops the handler then."""
    woken_by: str | None = None
    """``"<claim> <trace context>"``: the ``trace_context`` given to the ``send_event``
    that last woke the run, after the number of the claim that wake-up led to (compare
    ``fence``: an older one is not this execution's); None if none did."""


@dataclass(frozen=True, slots=True)
class SetAside:
    """A run set aside because its stored record is corrupt."""

    run_id: str
    problem: str
    """What is wrong, naming the field (e.g. "field 'attempts' is not a number: 'x'")."""


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What ``claim`` returns."""

    runs: list[ClaimedRun]
    next_wake_at: float | None
    """Earliest future time at which claim could find new work in these queues without
    any new enqueue: the first scheduled run's ``available_at``, the first suspended
    run's ``wake_at``, the first lease expiry or the first deadline of a run that is
    not running, whichever is sooner; None when there is none."""
    isolated_since: float | None = None
    """The earliest ``available_at`` among the first runs to isolate, in claim order, of
    the served workflows in these queues that this claim did not take (None: there are
    none): a busy worker stops claiming to become free for them when they have waited
    too long."""
    set_aside: tuple[SetAside, ...] = ()
    """Runs whose stored record was found corrupt (by this claim or by any operation
    since the last claim that reported some) and set aside: out of every queue index,
    never claimed again, left as stored for inspection. Each is reported once."""


@dataclass(frozen=True, slots=True)
class RenewResult:
    """What ``renew`` returns."""

    lost: frozenset[str]
    """Run ids whose lease the caller no longer holds: stop them without writing."""
    cancel_requested: frozenset[str]
    """Run ids (lease still held) whose cancel was requested: interrupt them."""
    canceled_by: Mapping[str, str] = field(default_factory=dict)
    """For those of ``cancel_requested`` whose cancel was given one: run id -> the
    ``trace_context`` given to the ``cancel`` (the first one, as for the reason)."""


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
    wake_at: float | None = None
    """For ``suspend``: resume at this time at the latest (a durable timer)."""
    waiting_on: tuple[str, ...] = ()
    """For ``suspend``: child run ids; the run resumes as soon as any of them ends."""
    events: tuple[str, ...] = ()
    """For ``suspend``: event keys; the run resumes as soon as an event of one of them is
    sent to it (``send_event``), or at once if one is already waiting to be taken."""
    progress: str | None = None
    """JSON text of the handler's latest progress not yet stored (any status), or None."""


class Leasing(Protocol):
    """Claiming runs, holding their leases and ending their attempts."""

    async def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        *,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        """In ONE atomic operation: promote, reap, expire, then claim up to ``limit`` runs.

        ``workflows``: the workflows the worker defines; only their runs are claimed
        (None: every workflow's). A run of a workflow no claiming worker defines waits
        queued, untouched: no attempt is used and nobody re-reads it. Finding the
        first claimable runs (smallest rank: see "Claim order" in ``enqueue.py``) costs
        O(len(workflows) + limit) index reads per queue, whatever the depth of the queue.

        1. Promote: scheduled runs of these queues with ``available_at <= now``, and
           suspended runs whose ``wake_at <= now``, become ``queued`` (at most a
           bounded batch per call, e.g. 1000, oldest first).
        2. Reap: running runs of these queues whose lease expired (``expiry <= now``)
           get ``lease_losses += 1``, then: if cancel was requested, end ``canceled``;
           else if ``lease_losses >= max_lease_losses``, end ``failed`` with error
           ``{"type": "WorkerLostError", "message": <says the lease was lost N times,
           the worker died or stalled each time, and it will not be retried>,
           "traceback": null}``; else become ``queued`` again (available now), marked
           to run alone (isolated). Both terminal cases fire hooks. At most a bounded
           batch per call.
        3. Expire: scheduled, queued (gate-waiting too) and suspended runs of these
           queues whose ``deadline <= now`` end ``failed`` (see "Deadlines"; any
           workflow, served or not; at most a bounded batch per call).
        4. Claim: if ``alone`` (the worker holds no run) and a run to isolate of the
           served workflows is claimable, take the first such run by rank (queues in
           the order given) and nothing else. Otherwise take up to ``limit`` queued runs
           not to isolate, queues in the order given, smallest rank first within a
           queue, and from each queue no more than its ``max_parallelism`` minus its
           running runs (none if paused). Each taken run becomes ``running``:
           ``attempts += 1``, ``started_at = now``, a new lease token, its claim count
           (``fence``) + 1, lease expiry ``now + lease_seconds``.

        A run whose stored record is corrupt (a field missing or malformed) is set aside,
        never leased, and every other run is served: see ``ClaimResult.set_aside``.

        Isolation: a run whose worker died (or stalled past its lease) may have been
        killed by another run the worker held. Running it alone next attributes its
        next lease loss to it: a poison run reaches ``max_lease_losses`` by itself
        while the runs that shared its worker run alone once and end normally. Any
        applied ``finish`` clears the mark.
        """
        ...

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        *,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        """Extend the given leases to ``now + lease_seconds`` in ONE operation.

        A lease is renewed only if its run is ``running`` with that same token (an
        expired but not yet reaped lease still counts as held and is renewed). Other
        leases are reported ``lost``. Renewed runs with a cancel request are reported
        in ``cancel_requested``, and the ``trace_context`` their cancel was given in
        ``canceled_by`` (nothing more is read or sent for a run without a cancel
        request: the renewal is a hot path). ``progress`` (run id -> JSON text) is stored as the
        run's progress for the runs whose lease is renewed, in the same operation.
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
        - ``attention``: store error (why the run's saved steps no longer fit its code),
          become ``needs_attention``, lease dropped, the run's gate place freed; no
          hooks fire and no parent is woken (the run is not terminal). It stays there
          until ``rerun_from_step`` or ``cancel``.
        - ``suspend``: lease dropped, the next claim resumes the attempt; if a run of
          ``waiting_on`` has ended (or does not exist), an event of one of ``events``
          waits to be taken, or ``wake_at <= now``, become ``queued`` now;
          else become ``suspended`` until an awaited child ends (any child with this
          run as parent and a ``parent_step``), an event of one of ``events`` is sent
          (``send_event``) or ``wake_at`` is due (promoted by ``claim`` like a
          scheduled run). The keys count for this suspension only: a later one waits
          on its own ``events``.
        If cancel was requested for the run, ``failed``, ``canceled``, ``retry``,
        ``attention`` and ``suspend`` all end ``canceled`` (with the cancel reason, and the entry's
        error, if any, stored as the last failure); ``succeeded`` stays succeeded.
        Terminal outcomes fire hooks. Every applied entry stores its ``progress``, if
        any. A ``suspend`` adds the execution's time (``now - started_at``) to the
        attempt's ``elapsed``, which the claim that resumes it returns; the claim of a
        new attempt returns 0.
        """
        ...

    async def release(
        self, leases: Sequence[Lease], now: float, *, attempt_used: bool = False
    ) -> None:
        """Hand leases back (graceful shutdown, or runs held ahead and never begun): each
        held run becomes ``queued`` now.

        One operation; no lease loss is counted. A hand-back is not an attempt: the next
        claim of each run takes the same attempt again, as a resumed run does (its
        ``attempt_time`` kept; ``executions`` counts every claim). ``attempt_used``:
        the attempt counts as used (a handler over its time limit), so the next claim
        starts a new one. A run with a cancel request ends ``canceled`` instead (hooks
        fire).
        """
        ...

    async def wait_for_work(
        self, queues: Sequence[str], timeout: float, *, workflows: Sequence[str] | None = None
    ) -> None:
        """Block up to ``timeout`` seconds or until an enqueue to one of ``queues`` (of one
        of ``workflows``, if given: a worker is not woken for runs it cannot take).

        May return early spuriously; callers claim afterwards anyway. Must not busy
        poll: an idle worker costs the backend at most a few operations per second.
        Once ``close`` has begun, returns at once (or raises BackendUnavailableError).
        """
        ...
