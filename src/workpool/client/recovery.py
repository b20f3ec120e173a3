"""Recovery: retry, cancel or delete every run a filter selects, a page at a time; the
failed runs grouped by workflow and error type."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import get_args

from workpool.backends.base import ACTIVE_STATES, TERMINAL_STATES, BulkAction
from workpool.backends.base import RunFilter as Selection
from workpool.builder import new_run_id
from workpool.client.enqueueing import Enqueueing
from workpool.errors import ConfigurationError
from workpool.models import FailureGroup, RunFilter, RunState
from workpool.sync import sync_twin
from workpool.validation import check_name, timestamp_of

BULK_PAGE = 500
"""Candidate runs per atomic backend operation of a bulk action."""

YIELD_RATIO = 1.0
"""After each page, a bulk action waits this many times the page's own duration, so the
workers' claims and finishes get the backend (SQLite's one writer, Redis's one script at
a time) about half the time while it runs (docs/benchmarks.md, issue 26)."""

ORDER = get_args(RunState)
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "retry": ("failed", "canceled"),
    "cancel": tuple(state for state in ORDER if state in ACTIVE_STATES),
    "delete": tuple(state for state in ORDER if state in TERMINAL_STATES),
}
"""The states each bulk action can change, and selects when the filter names none."""


class Recovery(Enqueueing):
    """Bulk actions by filter, and the failures view."""

    async def retry_runs(self, run_filter: RunFilter, *, dry_run: bool = False) -> int:
        """Re-run every failed or canceled run ``run_filter`` selects that was not re-run
        yet, each as ``retry_run`` does; return how many (with ``dry_run``: how many
        would be, changing nothing). Done in pages of ``BULK_PAGE`` runs, each one
        atomic operation, so workers keep running meanwhile."""
        return await self._walk("retry", run_filter, dry_run, None)

    async def cancel_runs(
        self, run_filter: RunFilter, *, reason: str | None = None, dry_run: bool = False
    ) -> int:
        """Cancel every unfinished run ``run_filter`` selects, each as ``cancel`` does
        (a running run is stopped by its worker within one lease renewal); return how
        many. Pages and ``dry_run`` as in ``retry_runs``."""
        return await self._walk("cancel", run_filter, dry_run, reason)

    async def delete_runs(self, run_filter: RunFilter, *, dry_run: bool = False) -> int:
        """Delete every finished run ``run_filter`` selects, with its steps, events and
        published values, as retention does; return how many. Pages and ``dry_run`` as
        in ``retry_runs``."""
        return await self._walk("delete", run_filter, dry_run, None)

    async def failures(self) -> list[FailureGroup]:
        """The failed runs stored, grouped by workflow and error type, each with its
        count, first and last failure and latest run; by workflow, then error type.
        Read from counters kept as runs fail and are deleted: its cost does not grow
        with the number of runs."""
        backend = await self.backend()
        return [
            FailureGroup(
                workflow=group.workflow,
                error_type=group.error_type,
                count=group.count,
                first_seen=datetime.fromtimestamp(group.first_seen, UTC),
                last_seen=datetime.fromtimestamp(group.last_seen, UTC),
                example_run_id=group.example_run_id,
            )
            for group in await backend.failure_groups()
        ]

    async def _walk(
        self, kind: str, run_filter: RunFilter, dry_run: bool, reason: str | None
    ) -> int:
        """Every page of bulk action ``kind`` over ``run_filter``: how many runs changed."""
        selection = _selection(kind, run_filter)
        action: BulkAction = f"count_{kind}" if dry_run else kind  # type: ignore[assignment]
        backend = await self.backend()
        total, cursor = 0, None
        while True:
            now = self.settings.clock.now()
            fresh = [new_run_id(now) for _ in range(BULK_PAGE)] if action == "retry" else []
            started = time.monotonic()
            page = await backend.act_on_runs(
                action, selection, cursor, BULK_PAGE, now, reason=reason, new_ids=fresh
            )
            total, cursor = total + page.changed, page.cursor
            if cursor is None:
                return total
            await asyncio.sleep((time.monotonic() - started) * YIELD_RATIO)

    retry_runs_sync = sync_twin(retry_runs, "pool")
    cancel_runs_sync = sync_twin(cancel_runs, "pool")
    delete_runs_sync = sync_twin(delete_runs, "pool")
    failures_sync = sync_twin(failures, "pool")


def _selection(kind: str, run_filter: RunFilter) -> Selection:
    """The backend's filter for bulk action ``kind``; ConfigurationError for bad fields."""
    if not isinstance(run_filter, RunFilter):
        raise ConfigurationError(
            f"a bulk action takes a RunFilter, got {type(run_filter).__name__} {run_filter!r}"
        )
    allowed = APPLIES_TO[kind]
    given = run_filter.status
    statuses = allowed if given is None else (given,) if isinstance(given, str) else given
    refused = [status for status in statuses if status not in allowed]
    if refused or not statuses:
        raise ConfigurationError(
            f"cannot {kind} runs in status {', '.join(map(repr, refused)) or '()'}: "
            f"{kind} applies to {', '.join(allowed)} runs"
        )
    return Selection(
        statuses=tuple(dict.fromkeys(statuses)),
        workflow=_name(run_filter.workflow, "workflow"),
        queue=_name(run_filter.queue, "queue"),
        error_type=run_filter.error_type,
        created_from=None
        if run_filter.since is None
        else timestamp_of(run_filter.since, what="since"),
        created_before=None
        if run_filter.until is None
        else timestamp_of(run_filter.until, what="until"),
    )


def _name(value: str | None, what: str) -> str | None:
    return None if value is None else check_name(value, what=f"{what} name")
