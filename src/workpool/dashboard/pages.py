"""The pages (GET): overview, runs list, one run, workflows. Each reads the backend
through the pool's public API and renders a template; none writes."""

from __future__ import annotations

from typing import cast
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from workpool.app import Workpool
from workpool.dashboard.charts import range_named
from workpool.dashboard.overview import read_overview
from workpool.dashboard.rendering import Renderer
from workpool.dashboard.runs import (
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    STATUSES,
    Filters,
    find_run,
    read_run,
    read_runs,
)
from workpool.dashboard.throughput import read_throughput
from workpool.dashboard.workflows import read_workflows
from workpool.models import RunState
from workpool.validation import parse_count

NOTICES = {
    "paused": "Queue paused: its running runs finish; no new run of it starts.",
    "resumed": "Queue resumed: its runs start again.",
    "limited": "max_parallelism changed: it applies to every worker's next claim.",
    "canceled": "Run canceled.",
    "cancel-requested": "Cancel requested: its worker stops the run within one lease renewal.",
    "finished": "The run had already finished: nothing changed.",
    "retried": "Retried: this new run re-runs the one it is a retry of.",
    "rerun": "Queued again from the chosen step: the steps before it are kept.",
    "run-paused": "Run paused: no worker starts it until it is resumed.",
    "run-resumed": "Run resumed in its place.",
    "run-now": "The run is available now: the next claim of its queue starts it.",
}
"""The messages an action's redirect may show (``?notice=<key>``): fixed texts only."""


PAST = {"retry": "retried", "cancel": "canceled", "delete": "deleted"}


def done_notice(request: Request) -> str | None:
    """What a bulk action's redirect says it did (``?done=<action>&count=<n>``), in fixed
    words around the count; None without one."""
    params = request.query_params
    action, count = params.get("done", ""), params.get("count", "")
    if action not in PAST or not count.isdigit():
        return None
    return f"{int(count)} runs {PAST[action]}."


def base_path(request: Request) -> str:
    """Where the dashboard is mounted ('' at the root)."""
    return str(request.scope.get("root_path") or "").rstrip("/")


def run_path(request: Request, run_id: str) -> str:
    """The path of a run's page."""
    return f"{base_path(request)}/runs/{quote(run_id, safe='')}"


class Pages:
    """The GET endpoints of one dashboard."""

    def __init__(self, pool: Workpool, renderer: Renderer) -> None:
        self.pool = pool
        self.renderer = renderer

    async def overview(self, request: Request) -> Response:
        view = await read_overview(self.pool, range_named(request.query_params.get("range")))
        context = {"nav": "overview", "view": view, "notice": _notice(request)}
        return self.renderer.page(request, "overview.html", context, live="overview_live.html")

    async def runs(self, request: Request) -> Response:
        params = request.query_params
        wanted = params.get("id", "").strip()
        if wanted and await find_run(self.pool, wanted) is not None:
            return RedirectResponse(run_path(request, wanted), 303)
        filters = _filters(request)
        view = await read_runs(
            self.pool, filters, params.get("cursor") or None, missing=wanted or None
        )
        context = {"nav": "runs", "view": view, "done": done_notice(request)}
        return self.renderer.page(request, "runs.html", context)

    async def run(self, request: Request) -> Response:
        view = await read_run(self.pool, str(request.path_params["run_id"]))
        context = {"nav": "runs", "view": view, "notice": _notice(request)}
        return self.renderer.page(request, "run.html", context, live="run_live.html")

    async def workflows(self, request: Request) -> Response:
        views = await read_workflows(self.pool)
        chosen = range_named(request.query_params.get("range"))
        names = [view.registered.name for view in views]
        throughput = await read_throughput(self.pool, chosen, names)
        limits = await self.pool.limit_usage()
        at = self.pool.settings.clock.now()
        context = {
            "nav": "workflows",
            "workflows": views,
            "throughput": throughput,
            "limits": limits,
            "at": at,
        }
        return self.renderer.page(request, "workflows.html", context)


def _filters(request: Request) -> Filters:
    """The runs list's filters from the query; 400 for a bad status or limit."""
    params = request.query_params
    status = params.get("status") or None
    if status is not None and status not in STATUSES:
        raise HTTPException(400, f"unknown status {status!r}: one of {', '.join(STATUSES)}")
    limit = parse_count(
        params.get("limit", str(PAGE_SIZE)), what="limit", minimum=1, maximum=MAX_PAGE_SIZE
    )
    return Filters(
        status=cast(RunState | None, status),
        queue=params.get("queue") or None,
        workflow=params.get("workflow") or None,
        limit=PAGE_SIZE if limit is None else limit,  # (None only where 'none' is allowed)
    )


def _notice(request: Request) -> str | None:
    return NOTICES.get(request.query_params.get("notice", ""))
