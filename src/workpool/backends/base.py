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
leases and schedules with a manual clock. Every time a write would store (``now``,
``available_at``, ``retry_at``, ``wake_at``, a step's times, a key's expiry) must be
storable (``workpool.validation.storable_time``: finite, in years 1 to 9999):
``enqueue``, ``finish`` and ``save_step`` check every entry before their first write
and raise ValueError, naming the run and field, writing nothing (``checks.py``).

Run states::

    scheduled --(available_at <= now, promoted by claim)--> queued
    queued --claim--> running
    running --finish(retry)--> scheduled (or queued if retry_at <= now)
    running --lease expired, reaped by claim--> queued   (or failed / canceled, see claim)
    running --release--> queued
    running --finish--> succeeded | failed | canceled    (terminal, final)
    running --finish(suspend)--> suspended (waits on children, events and/or a timer)
    suspended --(an awaited child ends | an awaited event is sent
                 | wake_at <= now, promoted by claim)--> queued
    queued | scheduled | suspended --cancel--> canceled

Terminal transitions fire the run's completion hooks (see ``CompletionHook``) in the
same atomic operation, exactly once. A run that ends ``canceled`` cancels, in the same
operation, every unfinished child it awaits (children stored with a ``parent_step``),
and so on down. A child that ends records its outcome in its parent's step and, if the
parent is ``suspended``, queues the parent again, in the same operation.

Events: ``send_event`` stores an event (a JSON payload) for a run under a key, after the
run's earlier events of that key; ``take_event`` hands the oldest to one step of the run
and removes it, in the operation that saves the step, so each event is taken by exactly
one step and none is lost whatever process dies when. A run that suspends waiting on
keys (``Finish.events``) is queued again by the ``send_event`` of one of them, in the
same operation as the store of the event. Separately, a running run publishes values
under keys (``set_event``) that anyone reads (``get_event``).

Attempts and executions: ``attempts`` never decreases. A claim adds one to it, except
the claim that resumes a run after ``finish(suspend)``: an execution resumed after a
wait is the same attempt as the one that suspended. ``executions`` (the claim count)
grows with every claim, resumes and re-executions after a lost lease included, and
``run_time`` adds up the time of every execution that a ``finish`` ended.

Claim order: a run's rank is ``available_at - rank_offset`` (``NewRun``), kept as its
``available_at`` changes (retries, promotions, requeues, wake-ups). Within a queue,
claims take claimable runs smallest rank first, ties in run id order (best effort across
workflows); gates admit their waiting runs the same way. The backend knows nothing of
priorities: the client turns a priority into an offset (strict, or with a queue's aging).

Concurrency gates: a run with ``max_concurrency`` belongs to the gate of its
(workflow, concurrency_key). A gate admits at most ``max_concurrency`` runs at once,
across every worker: only admitted runs are claimable, and a run stays admitted while
it is ``queued`` (claimable) or ``running``. A run that becomes ``queued`` (enqueue,
promotion, wake-up, requeue) joins its gate's waiting runs (still ``queued``, not
claimable); a run that stops being admitted (it ends, is retried, suspends, or is
requeued) frees its place. After either, in the same operation, the gate admits its
waiting runs smallest rank first (see "Claim order") while it has fewer admitted runs than the
``max_concurrency`` of the run that joined or left (so a changed limit applies from
the next change at that gate). Admitted runs go to their queue like ungated ones and
wake its workers. Claims never look at waiting runs: a full gate costs nothing while
it stays full.

Rate limits: a run with ``rate_limits`` starts no faster than each of them allows,
across every worker. Each limiter (an id shared by the runs it limits) allows ``count``
starts per ``per`` seconds, at most ``count`` at once (GCRA: starts are spaced
``per / count`` apart, with a burst of ``count``). A run reserves its start time when
it becomes ``queued`` without a reservation (enqueue, promotion of a scheduled run,
retry, requeue): the earliest time every one of its limiters allows, each limiter
recording the reservation. If that time is later than now, the run becomes
``scheduled`` at that time instead, keeping the reservation (no attempt is used), and
becomes ``queued`` when due without reserving again. So runs over a limit wait on
timers, each for its own start time, and nothing re-reads them meanwhile. Reservations
go in the order runs become queued: a rank does not reorder them.

Queue limits (``set_queue``): a claim starts no more of a queue's runs than its
``max_parallelism`` minus its running runs, and none while it is paused. A run that
leaves ``running`` in a queue with a ``max_parallelism`` wakes that queue's idle
workers if it has claimable runs; a claim that stopped at the limit does not (so idle
workers do not wake each other in turn while the queue is full).

Listing: every run is indexed by (queue, workflow, status) in run id order, and the
backend remembers every (queue, workflow) pair that has had a run. Run ids begin with
their creation time in milliseconds (see ``NewRun``), so id order is creation order:
``list_runs`` pages walk these indexes newest first, and ``get_stats`` reads the
pairs' active counts, so neither grows with the history size.

Counters: the operations that change a run's state also add to per-minute counters of
the run's (queue, workflow), in the same atomic operation (see ``PairCounters`` for
what counts where). A minute is ``floor(now / 60) * 60``; ``purge`` deletes minutes
older than it is told.

Batches: a batch (``NewBatch``) groups runs for one callback. Its record counts the
runs stored in it (``total``) and those that ended, by outcome. Every terminal
transition of a run with a ``batch_id`` (finish, cancel, ``cancel_many``,
``cancel_batch``, reaping, ``fail_unserved``, ``release``, a parent's cancel...) counts
its outcome in the same atomic operation (and keeps a failed run's id while the batch
holds fewer than ``MAX_FAILED_IDS``), then, if the batch is closed and none of its runs
is left unfinished, completes it in that operation: ``completed_at = now`` and its
callback enqueued, once. A completed batch never changes again; a run re-run
(``rerun``) is not in the batch of the run it copies.

Debounce: a run with a ``debounce_key`` collapses with the run last enqueued with that
(workflow, key) while that one is still waiting out its window: ``scheduled`` for its
first attempt (no rate reservation) with ``available_at > now``. Then the enqueue stores
no run: it replaces that run's input with its own and moves its ``available_at`` to
``min(the new run's available_at, that run's debounce_until)``, and returns
``Enqueued(that run's id, created=False)``. Otherwise the new run is stored (scheduled
at its ``available_at``) and becomes the run of (workflow, key). A run whose window has
ended (due, queued, started, ended) is never changed by a debounced enqueue.

The values it takes and returns (``NewRun``, ``RunRecord``, ``Finish`` ...) live in
``values.py`` and are re-exported here, so ``from workpool.backends.base import NewRun``
is the one import callers need. This module stays over 400 lines because it is one
thing, the spec: the contract of each operation is its method's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Protocol

from workpool.backends.ticks import (
    SKIPPED_TICKS_KEPT,
    TICK_OVERLAPS,
    NewTick,
    SkippedTickRecord,
    SkipReason,
    TickOverlap,
    TickStarted,
)
from workpool.backends.values import (
    ACTIVE_STATES,
    MAX_FAILED_IDS,
    MAX_RANK_OFFSET,
    TERMINAL_STATES,
    BatchRecord,
    CancelResult,
    ClaimedRun,
    ClaimResult,
    CompletionHook,
    Enqueued,
    EventSent,
    EventValue,
    Finish,
    FinishStatus,
    Lease,
    MinuteCounters,
    NewBatch,
    NewRun,
    PairActivity,
    PairCounters,
    QueueSettings,
    RateLimitSpec,
    RenewResult,
    Rerun,
    RerunStatus,
    RunPage,
    RunRecord,
    RunState,
    SetAside,
    StatsSnapshot,
    StepKind,
    StepRecord,
    StepStatus,
    WorkerRecord,
    WorkflowInfo,
)

__all__ = [
    "Backend",
    "RunState",
    "TERMINAL_STATES",
    "ACTIVE_STATES",
    "MAX_RANK_OFFSET",
    "MAX_FAILED_IDS",
    "FinishStatus",
    "StepKind",
    "StepStatus",
    "CancelResult",
    "EventSent",
    "EventValue",
    "CompletionHook",
    "RateLimitSpec",
    "NewRun",
    "NewBatch",
    "BatchRecord",
    "Enqueued",
    "RunRecord",
    "RunPage",
    "PairActivity",
    "PairCounters",
    "MinuteCounters",
    "WorkerRecord",
    "StatsSnapshot",
    "RerunStatus",
    "Rerun",
    "Lease",
    "ClaimedRun",
    "WorkflowInfo",
    "QueueSettings",
    "ClaimResult",
    "SetAside",
    "RenewResult",
    "Finish",
    "StepRecord",
    "NewTick",
    "TickOverlap",
    "TICK_OVERLAPS",
    "SkipReason",
    "SkippedTickRecord",
    "SKIPPED_TICKS_KEPT",
    "TickStarted",
]


class Backend(Protocol):
    """Storage and every state transition of runs. Implementations: sqlite, redis."""

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        *,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """Store runs, all in ONE atomic operation; results in input order.

        Each run is stored ``queued`` if ``available_at <= now`` else ``scheduled``,
        with ``attempts = 0``, ``created_at = now`` and every index updated. A run with
        an idempotency key whose (workflow, key) maps to a run id remembered less than
        its TTL ago returns ``Enqueued(that id, created=False)`` and stores nothing,
        even if that run has since finished. Expired keys are replaced. Within one
        batch, a repeated (workflow, key) resolves to the first run of the batch.
        Enqueueing an id that already exists returns ``created=False`` and changes
        nothing, before any debounce key is looked at: so enqueue is idempotent
        by run id, and a client may send a call again when its reply was lost (the
        repeat is not collapsed). A run with a
        ``debounce_key`` may collapse into an earlier one (see "Debounce"). Wakes any
        worker blocked in ``wait_for_work`` on that queue.

        Batches (see "Batches"): either no run has a ``batch_id``, or all have the same
        one (else ValueError). With ``batch``, it is created with the runs (their
        ``batch_id`` must be its id; ValueError if a batch of that id exists, unless it
        holds one of these runs: then the call is a repeat of the one that created it,
        and adds what is not stored yet); closed and without runs stored, it completes
        at once. Without ``batch``, the runs are added
        to their batch, which must exist (else ``BatchNotFoundError``) and be open, or
        closed but ``added_by`` a run of it that has not ended (which keeps it from
        completing: a run adding to its own batch), else ``BatchClosedError``; nothing is
        written when either is raised. ``total`` grows by the runs stored (not those an
        idempotency key or existing id found).
        """
        ...

    async def get_batch(self, batch_id: str) -> BatchRecord | None:
        """Read one batch, or None if there is none (never made, or purged)."""
        ...

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """Close a batch in ONE operation (no more runs may be added) and complete it at
        once if none of its runs is unfinished; return it as now stored (None: no such
        batch). Closing a closed batch changes nothing."""
        ...

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        """Cancel up to ``limit`` unfinished runs of a batch in ONE operation, smallest
        id first, each as ``cancel`` does (running ones not already cancel-requested
        get a request); return how many were canceled or cancel-requested (the count may
        include children canceled along with them), or None if there is no such batch.
        Callers repeat until it returns 0."""
        ...

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
        """In ONE atomic operation: promote, reap, then claim up to ``limit`` runs.

        ``workflows``: the workflows the worker defines; only their runs are claimed
        (None: every workflow's). A run of a workflow no claiming worker defines waits
        queued, untouched: no attempt is used and nobody re-reads it. Finding the
        first claimable runs (smallest rank: see "Claim order") costs O(len(workflows) +
        limit) index reads per queue, whatever the depth of the queue.

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
        3. Claim: if ``alone`` (the worker holds no run) and a run to isolate of the
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
        - ``suspend``: lease dropped, the next claim resumes the attempt; if a run of
          ``waiting_on`` has ended (or does not exist), an event of one of ``events``
          waits to be taken, or ``wake_at <= now``, become ``queued`` now;
          else become ``suspended`` until an awaited child ends (any child with this
          run as parent and a ``parent_step``), an event of one of ``events`` is sent
          (``send_event``) or ``wake_at`` is due (promoted by ``claim`` like a
          scheduled run). The keys count for this suspension only: a later one waits
          on its own ``events``.
        If cancel was requested for the run, ``failed``, ``canceled``, ``retry`` and
        ``suspend`` all end ``canceled`` (with the cancel reason, and the entry's
        error, if any, stored as the last failure); ``succeeded`` stays succeeded.
        Terminal outcomes fire hooks. Every applied entry stores its ``progress``, if
        any. A ``suspend`` adds the execution's time (``now - started_at``) to the
        attempt's ``elapsed``, which the claim that resumes it returns; the claim of a
        new attempt returns 0.
        """
        ...

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
        once, as a child ending later would write it (see the module docstring). A run
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

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        """Every saved step of a run, oldest ``started_at`` first (none: empty list)."""
        ...

    async def get_children(self, run_id: str) -> list[str]:
        """The ids of the runs started by the run's steps, oldest first."""
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

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """Record the workflows a worker of ``app`` defines, in ONE operation.

        First remove every record of ``app`` whose name is not among ``workflows`` and
        whose ``updated_at`` is older than ``now - grace`` (records of other apps, and
        runs, are never touched); then store each given record with ``updated_at =
        now``, replacing any record of that name. Returns the removed names, sorted.
        """
        ...

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """Store each given record of ``app`` whose name has no record, with
        ``updated_at = now``, in ONE operation; a record present (whoever wrote it) is
        left as it is. Returns the restored names, sorted. A live worker calls it when
        its heartbeat finds its records missing (the store lost them)."""
        ...

    async def list_workflows(self) -> list[WorkflowInfo]:
        """Every registered workflow, by name."""
        ...

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """Store ``worker``'s record (replacing its last one) and delete the records
        expired at ``now``, in ONE operation; return the names among
        ``worker.workflows`` that have no registry record, sorted (none: an empty
        list), so the worker can restore them (``restore_registry``)."""
        ...

    async def remove_worker(self, worker_id: str) -> None:
        """Delete a worker's record (it stopped); unknown ids change nothing."""
        ...

    async def list_workers(self, now: float) -> list[WorkerRecord]:
        """The workers whose record has not expired at ``now``, by id."""
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

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """Take or extend the named lease (e.g. ``"cron"``: one leader among workers).

        In ONE operation: if nobody holds ``name``, its holder's lease expired
        (``expires_at <= now``) or ``holder`` holds it, make ``holder`` hold it until
        ``now + seconds`` and return True; else change nothing and return False.
        """
        ...

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """Start a cron tick's run unless its trigger's overlap policy skips it, in ONE
        operation.

        A trigger's latest run is the run that ``start_tick`` last created for its
        (workflow, trigger); it is active unless it ended (or is gone). In order:

        1. The run's idempotency key is held (another leader started this tick): return
           that run, ``created`` False; nothing is written.
        2. ``skip``: the latest run is active; ``buffer_one``: it is active and has not
           started (``queued`` or ``scheduled`` with no execution yet). Then store
           nothing but a ``SkippedTickRecord`` (reason ``previous_run_active`` or
           ``buffer_full``, ``run_id`` the latest run, ``recorded_at`` now), keep the
           newest ``SKIPPED_TICKS_KEPT`` of the (workflow, trigger), and return it in
           ``skipped``. ``allow_all`` never skips. Runs of other triggers, or enqueued
           otherwise, are not looked at: a full gate does not skip a tick.
        3. Else enqueue the run as ``enqueue`` does (it may wait at its gate, or for its
           rate limits), make it the trigger's latest run and return it, ``created``.

        ValueError, writing nothing, for a time that cannot be stored (the run's, now,
        ``scheduled_at``), an empty trigger or an unknown overlap.
        """
        ...

    async def list_skipped_ticks(self, workflow: str | None, limit: int) -> list[SkippedTickRecord]:
        """The newest ``limit`` (>= 1) skipped ticks kept (of ``workflow``, or of every
        workflow), latest ``scheduled_at`` first."""
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

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Read one run, or None if there is no such run."""
        ...

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        """Up to ``limit`` runs matching every filter given, by id descending.

        With a ``cursor`` (the id of the last run of the previous page), only runs
        with a smaller id. The page's ``cursor`` is its last run's id if it holds
        ``limit`` runs, else None. Reads at most ``limit`` entries from each of the
        (queue, workflow, status) indexes the filters match: the cost of a page does
        not grow with the history size. Runs change state between pages; a run is
        listed where it was when its page was read.
        """
        ...

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        """Active counts per (queue, workflow), counters of the minutes from the one
        holding ``since`` to the one holding ``now``, and each queue's oldest claimable
        run. One read; its cost grows with the pairs and the minutes, not the history."""
        ...

    async def get_minute_counters(self, since: float, now: float) -> list[MinuteCounters]:
        """The counters of each minute from the one holding ``since`` to the one holding
        ``now`` that has a count, oldest first: ``get_stats``' counters before they are
        summed. One read; its cost grows with the pairs and the minutes, not the history."""
        ...

    async def purge(self, finished_before: float, limit: int, counters_before: float) -> int:
        """Delete up to ``limit`` terminal runs whose ``finished_at`` is before
        ``finished_before`` (oldest first), in ONE atomic operation; return how many.

        With each run go its steps, its children list, its events not taken and its
        published values, its idempotency key if that still points to it, and its
        entries in every index, so no index names a run that is gone. Runs it started
        and the run that started it are not touched (their own retention deletes them).
        Also deletes up to ``limit`` batches completed before ``finished_before`` (their
        runs ended before, so they go in the same or earlier calls) and the counters of
        minutes before ``counters_before``. Callers repeat while it returns ``limit``.
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

    async def close(self) -> None:
        """Release connections and threads. The backend is unusable afterwards."""
        ...
