"""Runs: a run to store (``NewRun``) and a run as stored (``RunRecord``), with the states
it goes through (see the package docstring) and the completion hooks it fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RunState = Literal[
    "scheduled",
    "queued",
    "running",
    "suspended",
    "needs_attention",
    "paused",
    "succeeded",
    "failed",
    "canceled",
]

TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "canceled"})

ACTIVE_STATES: frozenset[str] = frozenset(
    {"scheduled", "queued", "running", "suspended", "needs_attention", "paused"}
)

MAX_RANK_OFFSET = 1e12
"""The largest ``rank_offset`` a backend accepts, either sign (about 31,700 years): with
every storable time, ``available_at - rank_offset`` stays a double that tells apart times
1 ms apart, and above the band of scores Redis keeps for runs to isolate."""


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
    a hook can never be enqueued twice for one ending; after the owning run was rerun
    from a step (``rerun_from_step``) ``n`` times, ``-<n>`` is appended, so each ending
    fires its hooks once.
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
class GateSpec:
    """A concurrency gate shared by the runs that name it: at most ``limit`` admitted."""

    gate: str
    """Its id (``limit:...``: workflows' own gates are ``<len>:<workflow>:<key>``)."""
    limit: int


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
    """At most this many runs of (workflow, concurrency_key) admitted at once (see ``enqueue.py``);
    None: the run is not gated."""
    concurrency_key: str | None = None
    """Scopes ``max_concurrency``: runs with different keys do not limit each other."""
    rate_limits: tuple[RateLimitSpec, ...] = ()
    """The limiters this run's starts count against (see ``enqueue.py``)."""
    gates: tuple[GateSpec, ...] = ()
    """More gates the run must be admitted at besides its workflow's (shared limits;
    see "Several gates" in ``enqueue.py``); distinct ids, none a workflow's gate."""
    timeout: float | None = None
    """Seconds one attempt may execute (stored, returned with claims); None: the
    worker applies its workflow's limit, if any."""
    priority: int = 0
    """Stored and read back (``RunRecord.priority``); the backend does not interpret it."""
    rank_offset: float = 0.0
    """Seconds, at most ``MAX_RANK_OFFSET`` either way: the run's claim order (its rank)
    is ``available_at - rank_offset``, smallest first, whenever it is claimable or waits
    at its gate (see ``enqueue.py``). The client derives it from the priority."""
    batch_id: str | None = None
    """The batch the run belongs to (see ``NewBatch``; for ``enqueue`` only)."""
    debounce_key: str | None = None
    """With a key, the run is debounced (see "Debounce" in ``enqueue.py``): it collapses
    with the run of (workflow, key) still waiting out its window, if any. Its
    ``available_at`` is the end of its window. For ``enqueue`` only."""
    debounce_until: float | None = None
    """For a debounced run: the latest its start may move to (first enqueue + the most
    wait), or None (no limit)."""
    deadline: float | None = None
    """When the whole run must have ended (seconds since the epoch), across attempts,
    backoffs and suspensions; past it the run fails (see "Deadlines" in ``leases.py``).
    None: no deadline."""
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
    rerun_from: str | None = None
    """JSON text ``{"step", "reason", "at", "count"}`` of the latest ``rerun_from_step``
    (``count``: how many so far), or None."""
    gate: str | None = None
    """The id of its gate (under several: the one it waits at, or last waited at), whose
    limit ``max_concurrency`` is; None: not gated."""
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
    deadline: float | None = None
    """As enqueued (``NewRun.deadline``)."""
