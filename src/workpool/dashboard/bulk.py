"""The failures page (failed runs grouped by workflow and error type, from the pool's
counters) and the bulk actions (POST): retry, cancel or delete every run a filter
selects, after a page that shows how many runs it selects (a dry run)."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from workpool.app import Workpool
from workpool.dashboard.forms import read_form
from workpool.dashboard.pages import base_path, done_notice
from workpool.dashboard.rendering import Renderer
from workpool.models import RunFilter, RunState

BULK_ACTIONS = ("retry", "cancel", "delete")
FILTER_FIELDS = ("workflow", "queue", "status", "error_type")
CANCEL_REASON = "canceled from the dashboard"


class Bulk:
    """The failures page and the bulk action endpoint of one dashboard."""

    def __init__(self, pool: Workpool, renderer: Renderer) -> None:
        self.pool = pool
        self.renderer = renderer

    async def failures(self, request: Request) -> Response:
        groups = await self.pool.failures()
        context = {"nav": "failures", "groups": groups, "done": done_notice(request)}
        return self.renderer.page(request, "failures.html", context)

    async def act(self, request: Request) -> Response:
        """Without ``confirmed``: a page with the count and a button to go on. With it:
        the action, then a redirect to where the form came from, saying how many."""
        form = await read_form(request, self.renderer.options)
        action = form.get("action", "")
        if action not in BULK_ACTIONS:
            raise HTTPException(
                400, f"unknown bulk action {action!r}: one of retry, cancel, delete"
            )
        fields = {name: form.get(name, "").strip() or None for name in FILTER_FIELDS}
        if not any(fields.values()):
            raise HTTPException(
                400, "a bulk action needs a filter (workflow, queue, status or error type)"
            )
        run_filter = RunFilter(
            workflow=fields["workflow"],
            queue=fields["queue"],
            status=cast(RunState | None, fields["status"]),
            error_type=fields["error_type"],
        )
        back = "failures" if form.get("back") == "failures" else "runs"
        if form.get("confirmed") != "1":
            count = await self._run(action, run_filter, dry_run=True)
            context = {
                "nav": back,
                "action": action,
                "count": count,
                "fields": {name: value for name, value in fields.items() if value},
                "back": back,
            }
            return self.renderer.page(request, "confirm_bulk.html", context)
        count = await self._run(action, run_filter, dry_run=False)
        query: dict[str, Any] = {"done": action, "count": count}
        if back == "runs":
            query.update(
                {name: fields[name] for name in ("workflow", "queue", "status") if fields[name]}
            )
        return RedirectResponse(f"{base_path(request)}/{back}?{urlencode(query)}", 303)

    async def _run(self, action: str, run_filter: RunFilter, *, dry_run: bool) -> int:
        if action == "retry":
            return await self.pool.retry_runs(run_filter, dry_run=dry_run)
        if action == "cancel":
            return await self.pool.cancel_runs(run_filter, reason=CANCEL_REASON, dry_run=dry_run)
        return await self.pool.delete_runs(run_filter, dry_run=dry_run)
