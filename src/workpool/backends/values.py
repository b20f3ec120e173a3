"""The values the Backend protocol takes and returns: frozen dataclasses and literals.

``base.py`` states what each operation does with them (the spec); this module only
says what each field holds. Import them from ``workpool.backends.base``, which
re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

RunState = Literal["scheduled", "queued", "running", "suspended", "succeeded", "failed", "canceled"]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "canceled"})
ACTIVE_STATES: frozenset[str] = frozenset({"scheduled", "queued", "running", "suspended"})

MAX_RANK_OFFSET = 1e12
"""The largest ``rank_offset`` a backend accepts, either sign (about 31,700 years): with
every storable time, ``available_at - rank_offset`` stays a double that tells apart times
1 ms apart, and above the band of scores Redis keeps for runs to isolate."""

FinishStatus = Literal["succeeded", "failed", "canceled", "retry", "suspend"]
StepKind = Literal["run", "workflow", "emit", "sleep", "event"]
StepStatus = Literal["waiting", "succeeded", "failed", "canceled"]
CancelResult = Literal["canceled", "requested", "finished", "not_found"]
EventSent = Literal["sent", "duplicate", "not_found", "finished"]


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
    max_concurrency: int | None = None
    """The hook run's gate limit (its gate has no concurrency key)."""
    priority: int = 0
    """The hook run's ``priority`` (see ``NewRun``)."""
    rank_offset: float = 0.0
    """The hook run's ``rank_offset`` (see ``NewRun``)."""
    trace_context: str | None = None
    """The hook run's ``trace_context`` (see ``NewRun``), stored with it as given."""


@dataclass(frozen=True, slots=True)
class RateLimitSpec:
    """One limiter a run counts against: ``count`` starts per ``per`` seconds."""

    limiter: str
    """Its id: runs with the same id share the limit (e.g. ``workflow:send_email``)."""
    count: int
    per: float


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run to store. The id is chosen by the caller (so batches need no round trip);
    it must not contain ``:`` (Redis keys of a run's steps and children append to it).
    The client's ids begin with the creation time (12 hex digits of milliseconds), so
    ``list_runs`` (by id, descending) lists newest first."""

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
    max_concurrency: int | None = None
    """At most this many runs of (workflow, concurrency_key) admitted at once (see ``base.py``);
    None: the run is not gated."""
    concurrency_key: str | None = None
    """Scopes ``max_concurrency``: runs with different keys do not limit each other."""
    rate_limits: tuple[RateLimitSpec, ...] = ()
    """The limiters this run's starts count against (see ``base.py``)."""
    timeout: float | None = None
    """Seconds one attempt may execute (stored, returned with claims); None: the
    worker applies its workflow's limit, if any."""
    priority: int = 0
    """Stored and read back (``RunRecord.priority``); the backend does not interpret it."""
    rank_offset: float = 0.0
    """Seconds, at most ``MAX_RANK_OFFSET`` either way: the run's claim order (its rank)
    is ``available_at - rank_offset``, smallest first, whenever it is claimable or waits
    at its gate (see ``base.py``). The client derives it from the priority."""
    batch_id: str | None = None
    """The batch the run belongs to (see ``NewBatch``; for ``enqueue`` only)."""
    debounce_key: str | None = None
    """With a key, the run is debounced (see "Debounce" in ``base.py``): it collapses
    with the run of (workflow, key) still waiting out its window, if any. Its
    ``available_at`` is the end of its window. For ``enqueue`` only."""
    debounce_until: float | None = None
    """For a debounced run: the latest its start may move to (first enqueue + the most
    wait), or None (no limit)."""
    trace_context: str | None = None
    """Opaque text (the tracing module's: the W3C trace context of the span that
    enqueued the run), stored in the enqueue's own write and returned by every claim
    (``ClaimedRun.trace_context``); None: tracing was off. A debounce that collapses
    into an earlier run, or an idempotency key that finds one, keeps the earlier's."""


@dataclass(frozen=True, slots=True)
class Enqueued:
    """Outcome of enqueueing one NewRun."""

    run_id: str
    """The stored run: the new one, or the earlier run holding the idempotency key."""
    created: bool
    """False when nothing was stored: an unexpired idempotency key matched, the id
    existed, or the run collapsed into a debounced one (``run_id`` names that run)."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as stored. JSON fields are returned as the text that was stored."""

    id: str
    workflow: str
    queue: str
    status: str
    attempts: int
    """Attempts started so far: claims, less the ones that resumed a suspended run."""
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
    parent_run_id: str | None = None
    """The run whose step started this one, if any."""
    retry_of: str | None = None
    """The run this one re-runs (``rerun``), if any."""
    retried_as: str | None = None
    """The run that re-runs this one (``rerun``), if any."""
    executions: int = 0
    """Claims so far: every start of the handler (resumes and reclaims included)."""
    run_time: float = 0.0
    """Seconds of every execution that a ``finish`` ended, added up."""
    max_concurrency: int | None = None
    """The limit of the run's concurrency gate, if it has one."""
    waiting_at_gate: bool = False
    """Queued but not admitted: its gate already admits ``max_concurrency`` runs."""
    rate_reserved: bool = False
    """Scheduled at the start its rate limits reserved for it (not yet used): it waits
    for a rate limit, not for a time its enqueuer gave."""
    timeout: float | None = None
    """The run's own limit on one attempt's execution, in seconds, if it was given one."""
    progress: str | None = None
    """JSON text of the latest progress its handler reported (``renew``, ``finish``)."""
    priority: int = 0
    """As enqueued (``NewRun.priority``)."""
    batch_id: str | None = None
    """The batch it belongs to (``NewRun.batch_id``), if any."""


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of ``list_runs``."""

    runs: list[RunRecord]
    cursor: str | None
    """Pass it back for the next page; None when this page was not full (no more)."""


@dataclass(frozen=True, slots=True)
class PairActivity:
    """How many runs of one (queue, workflow) are in each active state, now."""

    queue: str
    workflow: str
    scheduled: int
    queued: int
    """Queued runs, claimable or waiting for a place at a concurrency gate."""
    running: int
    suspended: int


@dataclass(frozen=True, slots=True)
class PairCounters:
    """What happened to runs of one (queue, workflow) in the minutes asked for.

    - ``executions``: attempts that ended: reported by ``finish`` with ``succeeded``,
      ``failed``, ``canceled`` or ``retry`` (not ``suspend``: the attempt goes on,
      even when a cancel request turns the suspend into ``canceled``), or reaped by
      ``claim`` after their lease expired.
    - ``timed``: those reported by ``finish``; ``run_time`` sums their ``now -
      started_at`` in seconds (a reaped attempt's duration is unknown).
    - ``succeeded``, ``failed``, ``canceled``: runs that reached that terminal state
      by any transition (a queued run canceled counts, though it never executed).
    - ``retried``: attempts that ended with the run scheduled or queued again for
      another one: ``finish`` with ``retry`` and lease-expiry requeues by ``claim``.
    """

    queue: str
    workflow: str
    executions: int = 0
    timed: int = 0
    run_time: float = 0.0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    retried: int = 0


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A worker as it announces itself with ``heartbeat``: what it serves, until when."""

    id: str
    app: str
    queues: tuple[str, ...]
    workflows: tuple[str, ...]
    """The workflows it defines: it claims runs of these only."""
    started_at: float
    seen_at: float
    """Its last heartbeat."""
    expires_at: float
    """It counts as gone from then on, unless a heartbeat extends it."""

    def serves(self, queue: str, workflow: str) -> bool:
        """Whether this worker takes runs of ``workflow`` from ``queue``."""
        return queue in self.queues and workflow in self.workflows


@dataclass(frozen=True, slots=True)
class MinuteCounters:
    """The counters of one minute, as ``get_minute_counters`` returns them."""

    minute: float
    """The minute's start: ``floor(t / 60) * 60`` of the transitions it counts."""
    counters: list[PairCounters]
    """Every pair with a count in that minute, sorted by (queue, workflow)."""


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """What ``get_stats`` returns."""

    activity: list[PairActivity]
    """Every (queue, workflow) pair that has had a run, sorted by (queue, workflow)."""
    counters: list[PairCounters]
    """Summed over the minutes asked for; only pairs with a count, sorted likewise."""
    oldest_claimable: dict[str, float]
    """Per queue with claimable runs (queued, not waiting at a gate): the smallest
    ``available_at`` among the first run, in claim order, of each of its (queue,
    workflow) pairs, so ``now - value`` is how long the work next in line has waited for a
    worker. Without priorities that is the queue's oldest claimable run; with them, a
    low-priority run kept waiting behind higher ones does not show here."""
    workers: list[WorkerRecord] = field(default_factory=list)
    """The live workers (unexpired at ``now``), by id."""


RerunStatus = Literal["created", "exists", "not_found", "not_finished", "succeeded"]


@dataclass(frozen=True, slots=True)
class Rerun:
    """What ``rerun`` returns: ``run_id`` is the new run (``created``), the run made by
    an earlier rerun (``exists``), or None."""

    status: RerunStatus
    run_id: str | None = None


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
    woken_by: str | None = None
    """``"<claim> <trace context>"``: the ``trace_context`` given to the ``send_event``
    that last woke the run, after the number of the claim that wake-up led to (compare
    ``fence``: an older one is not this execution's); None if none did."""


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """A workflow definition as a worker registered it (``sync_registry``)."""

    name: str
    app: str
    """The application whose workers define it; only they may remove it."""
    queue: str
    max_concurrency: int | None
    retry: str | None
    """JSON text of the workflow's retry policy, or None (the pool's default applies)."""
    cron: str
    """JSON text of the workflow's cron triggers (a list)."""
    updated_at: float
    rate_limits: str | None = None
    """JSON text of the rate limits the worker's code sets on its runs (a list of
    {"scope": "workflow" or "queue", "count", "per" (seconds), "keyed"}); None when a
    version that did not record them registered it."""


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """A queue's cluster-wide limits, as stored (never set: no limit, not paused)."""

    name: str
    max_parallelism: int | None = None
    """At most this many runs of the queue running at once, across workers; None: no limit."""
    paused: bool = False
    """A paused queue starts nothing (running runs finish, their outcomes are written)."""


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
    run's ``wake_at`` or the first lease expiry, whichever is sooner; None when there
    is none."""
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


@dataclass(frozen=True, slots=True)
class EventValue:
    """What ``get_event`` reads: the run's status and the value it published under the
    key (JSON text, None if it has not published one), read together."""

    status: str
    value: str | None


MAX_FAILED_IDS = 1000
"""The most failed run ids a batch keeps for its callback (the first to fail)."""


@dataclass(frozen=True, slots=True)
class NewBatch:
    """A batch to create with the runs of one ``enqueue`` (see "Batches" in ``base.py``).

    Its id must not contain ``:``. When its last run ends with the batch closed, the
    backend enqueues, in that same atomic operation, the run ``<batch id>-complete`` of
    ``callback`` (if any; ``on_failure_only`` is ignored) with ``available_at = now``
    and this JSON input (keys in this order)::

        {"batch_id": <id>, "context": <callback.context JSON>, "total": <runs>,
         "succeeded": <n>, "failed": <n>, "canceled": <n>,
         "failed_run_ids": [<the first MAX_FAILED_IDS runs to end failed, in that order>]}
    """

    id: str
    callback: CompletionHook | None = None
    open: bool = False
    """Open: runs may be added (``enqueue`` with their ``batch_id``) until it is closed
    (``close_batch``), and it cannot complete before."""


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """A batch as stored: its counts of runs by outcome so far."""

    id: str
    created_at: float
    total: int
    """Runs stored in it (a run an idempotency key found elsewhere is not)."""
    succeeded: int
    failed: int
    canceled: int
    open: bool
    completed_at: float | None = None
    """When it completed: closed with every run ended (its callback enqueued then)."""
    callback_run_id: str | None = None
    """The callback's run, once enqueued."""
