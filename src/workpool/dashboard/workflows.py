"""The registry as the workers of every app wrote it.

The backend's registry holds each workflow's app, queue, ``max_concurrency``, retry
policy, crons and rate limits (the workflow's and its queue's, as its workers define
them). A workflow that a worker of an earlier version registered has no rate limits
recorded; for those, the dashboard's own pool's definition is shown if it has one
(``workpool dashboard MODULE:POOL``, or the pool given to ``create_dashboard``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workpool.app import Workpool
from workpool.backends.base import SKIPPED_TICKS_KEPT
from workpool.client import MAX_PAGE
from workpool.dashboard.crons import Trigger, triggers
from workpool.errors import ConfigurationError
from workpool.models import RegisteredWorkflow
from workpool.options import RetryPolicy
from workpool.registry import registered_rate_limits

CRON_RUNS = 200
"""Newest runs of a cron workflow read to tell which of its last ticks fired."""


@dataclass(frozen=True, slots=True)
class WorkflowView:
    """One registered workflow."""

    registered: RegisteredWorkflow
    retry: str
    rate_limit: str | None
    """Its own and its queue's limits, as registered (else as this pool defines them;
    None: unknown)."""
    defined_here: bool
    triggers: list[Trigger]


async def read_workflows(pool: Workpool) -> list[WorkflowView]:
    """Every registered workflow, by name (one ``list_workflows`` read, and per workflow
    that has crons, one page of ``list_runs`` and its kept skipped ticks)."""
    now = pool.settings.clock.now()
    views = []
    for registered in await pool.list_workflows():
        found: list[Trigger] = []
        if registered.cron:
            page = await pool.list_runs(workflow=registered.name, limit=CRON_RUNS)
            # Judged: the ticks since the definition was registered (a worker of its app
            # started) that the page of runs covers.
            covered = registered.updated_at.timestamp()
            if page.cursor is not None:
                covered = max(covered, page.runs[-1].created_at.timestamp())
            skipped = await pool.list_skipped_ticks(
                workflow=registered.name,
                limit=min(MAX_PAGE, SKIPPED_TICKS_KEPT * len(registered.cron)),
            )
            found = triggers(registered.cron, page.runs, skipped, covered, now)
        views.append(
            WorkflowView(
                registered=registered,
                retry=describe_retry(registered.retry),
                rate_limit=_rate_limits(pool, registered),
                defined_here=registered.name in pool.workflows,
                triggers=found,
            )
        )
    return views


def describe_retry(stored: Any) -> str:
    """A stored retry policy in words."""
    if stored is None:
        return "1 attempt (no retry)"
    try:
        policy = RetryPolicy.from_json(stored)
    except ConfigurationError:
        return f"unreadable policy {stored!r}"
    seconds = policy.backoff.total_seconds()
    return (
        f"{policy.max_attempts} attempts; waits {seconds:g} s, then {policy.base:g} times "
        "longer each time (±50% jitter)"
    )


def _rate_limits(pool: Workpool, registered: RegisteredWorkflow) -> str | None:
    limits = registered.rate_limits
    if limits is None:  # registered by an earlier version: this pool's definition, if any
        definition = pool.workflows.get(registered.name)
        if definition is None:
            return None
        own, of_queue = definition.rate_limit, pool.queue_rate_limits.get(registered.queue)
        limits = registered_rate_limits(own, of_queue)
    return _described(registered.queue, limits)


def _described(queue: str, limits: list[Any]) -> str:
    """Rate limits in words: "5 per 60 s per key (workflow); 100 per 1 s (queue q)"."""
    parts = []
    for limit in limits:
        if not isinstance(limit, dict):
            continue
        scope, count, per = limit.get("scope"), limit.get("count"), limit.get("per")
        period = f"{per:g} s" if isinstance(per, int | float) else repr(per)
        whose = f"queue {queue}" if scope == "queue" else scope
        parts.append(f"{count} per {period}{' per key' if limit.get('keyed') else ''} ({whose})")
    return "; ".join(parts) or "none"
