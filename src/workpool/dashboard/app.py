"""``create_dashboard``: the dashboard as an ASGI application (Starlette), to serve on
its own (``workpool dashboard``) or to mount into an existing app at a path."""

from __future__ import annotations

from datetime import timedelta

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from workpool.app import Workpool
from workpool.backends import describe_store
from workpool.dashboard.actions import Actions
from workpool.dashboard.auth import AuthMiddleware
from workpool.dashboard.bulk import Bulk
from workpool.dashboard.headers import SecurityHeadersMiddleware
from workpool.dashboard.options import DashboardOptions
from workpool.dashboard.pages import Pages
from workpool.dashboard.rendering import Renderer
from workpool.errors import (
    BackendUnavailableError,
    ConfigurationError,
    RunNotFoundError,
    RunStateError,
    WorkpoolError,
)
from workpool.validation import as_timedelta

ERROR_STATUS: dict[type[Exception], int] = {
    RunNotFoundError: 404,
    RunStateError: 409,
    ConfigurationError: 400,
    ValueError: 400,
    BackendUnavailableError: 503,
    WorkpoolError: 500,
}
"""The HTTP status of each error a page or action may raise (the first that matches)."""


def create_dashboard(
    pool: Workpool,
    *,
    read_only: bool = False,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    refresh: timedelta | float = timedelta(seconds=2),
) -> Starlette:
    """The web dashboard of ``pool``'s store, as an ASGI application.

    Serve it (``uvicorn``), or mount it into a Starlette or FastAPI app at a path:
    ``app.mount("/workpool", create_dashboard(pool))``. It reads and acts through the
    pool's public API; the pool's own definitions add the rate limits of its
    workflows. ``read_only`` hides and refuses every action; ``token`` or
    ``basic_auth`` (user, password) make every request authenticate (a mounted
    dashboard may rely on its host app's authentication instead); ``refresh`` is how
    often open pages read the backend again (a timedelta or seconds).
    """
    options = DashboardOptions(
        read_only=read_only,
        token=token,
        basic_auth=basic_auth,
        refresh=as_timedelta(refresh, what="refresh", positive=True),
    )
    renderer = Renderer(options, describe_store(pool.url, prefix=pool.prefix))
    pages, actions = Pages(pool, renderer), Actions(pool, renderer)
    bulk = Bulk(pool, renderer)
    routes: list[BaseRoute] = [
        Route("/", pages.overview, name="overview"),
        Route("/runs", pages.runs, name="runs"),
        Route("/runs/{run_id:path}", pages.run, name="run"),
        Route("/workflows", pages.workflows, name="workflows"),
        Route("/failures", bulk.failures, name="failures"),
        Route("/actions/pause", actions.pause, methods=["POST"]),
        Route("/actions/resume", actions.resume, methods=["POST"]),
        Route("/actions/limit", actions.limit, methods=["POST"]),
        Route("/actions/cancel", actions.cancel, methods=["POST"]),
        Route("/actions/retry", actions.retry, methods=["POST"]),
        Route("/actions/rerun", actions.rerun, methods=["POST"]),
        Route("/actions/pause-run", actions.pause_run, methods=["POST"]),
        Route("/actions/resume-run", actions.resume_run, methods=["POST"]),
        Route("/actions/run-now", actions.run_now, methods=["POST"]),
        Route("/actions/bulk", bulk.act, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("workpool.dashboard", "static")]), name="static"),
    ]

    async def error_page(request: Request, error: Exception) -> Response:
        status, message = _status_of(error)
        context = {"nav": "", "status": status, "message": message}
        return renderer.page(request, "error.html", context, status_code=status)

    handlers = dict.fromkeys((HTTPException, *ERROR_STATUS), error_page)
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeadersMiddleware),
            Middleware(AuthMiddleware, options=options),
        ],
        exception_handlers=handlers,
    )


def _status_of(error: Exception) -> tuple[int, str]:
    if isinstance(error, HTTPException):
        return error.status_code, error.detail
    status = next(code for kind, code in ERROR_STATUS.items() if isinstance(error, kind))
    return status, str(error)
