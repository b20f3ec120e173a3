"""The actions (POST, with a CSRF token): pause, resume and limit a queue; cancel, retry,
rerun from a step, pause, resume and run now a run. Each answers with a redirect to the
page it was taken from (so a reload does not repeat it), or, for cancel, retry and rerun
without ``confirmed``, a page that asks first (the script asks with a dialog instead
when JavaScript is on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from workpool.app import Workpool
from workpool.dashboard.forms import read_form
from workpool.dashboard.pages import base_path, run_path
from workpool.dashboard.rendering import Renderer
from workpool.models import Run
from workpool.validation import parse_count

CANCEL_REASON = "canceled from the dashboard"
RERUN_REASON = "rerun from the dashboard"
CANCEL_NOTICES = {"canceled": "canceled", "requested": "cancel-requested", "finished": "finished"}


class Actions:
    """The POST endpoints of one dashboard."""

    def __init__(self, pool: Workpool, renderer: Renderer) -> None:
        self.pool = pool
        self.renderer = renderer

    async def pause(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        await self.pool.pause(_field(form, "queue"))
        return _back_to_overview(request, "paused")

    async def resume(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        await self.pool.resume(_field(form, "queue"))
        return _back_to_overview(request, "resumed")

    async def limit(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        limit = parse_count(  # ConfigurationError: 400 with its message
            form.get("max_parallelism", ""), what="max_parallelism", none="empty: no limit"
        )
        await self.pool.set_max_parallelism(_field(form, "queue"), limit)
        return _back_to_overview(request, "limited")

    async def cancel(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        run_id = _field(form, "run_id")
        if form.get("confirmed") != "1":
            return self._confirm(request, "cancel", run_id)
        result = await self.pool.cancel(run_id, CANCEL_REASON)
        return RedirectResponse(f"{run_path(request, run_id)}?notice={CANCEL_NOTICES[result]}", 303)

    async def retry(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        run_id = _field(form, "run_id")
        if form.get("confirmed") != "1":
            return self._confirm(request, "retry", run_id)
        handle = await self.pool.retry_run(run_id)
        return RedirectResponse(f"{run_path(request, handle.id)}?notice=retried", 303)

    async def rerun(self, request: Request) -> Response:
        form = await read_form(request, self.renderer.options)
        run_id, step = _field(form, "run_id"), _field(form, "step")
        if form.get("confirmed") != "1":
            return self._confirm(request, "rerun", run_id, step)
        await self.pool.rerun(run_id, from_step=step, reason=RERUN_REASON)
        return RedirectResponse(f"{run_path(request, run_id)}?notice=rerun", 303)

    async def pause_run(self, request: Request) -> Response:
        return await self._act_on_run(request, self.pool.pause_run, "run-paused")

    async def resume_run(self, request: Request) -> Response:
        return await self._act_on_run(request, self.pool.resume_run, "run-resumed")

    async def run_now(self, request: Request) -> Response:
        return await self._act_on_run(request, self.pool.run_now, "run-now")

    async def _act_on_run(
        self, request: Request, act: Callable[[str], Awaitable[Run]], notice: str
    ) -> Response:
        """Pause, resume or run now (no confirmation: each is undone by another)."""
        form = await read_form(request, self.renderer.options)
        run_id = _field(form, "run_id")
        await act(run_id)  # RunStateError: 409 with its message
        return RedirectResponse(f"{run_path(request, run_id)}?notice={notice}", 303)

    def _confirm(self, request: Request, action: str, run_id: str, step: str = "") -> Response:
        context = {"nav": "runs", "action": action, "run_id": run_id, "step": step}
        return self.renderer.page(request, "confirm.html", context)


def _field(form: dict[str, str], name: str) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise HTTPException(400, f"the form has no {name}")
    return value


def _back_to_overview(request: Request, notice: str) -> Response:
    return RedirectResponse(f"{base_path(request)}/?notice={notice}", 303)
