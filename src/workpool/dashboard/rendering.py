"""Pages from Jinja2 templates, autoescaped: every value a run carries (input, output,
error text, names) is untrusted and reaches the page as text, never as markup.

A request with the header ``X-Workpool-Live: 1`` (the page's script refreshing itself)
gets only the template's live part, the ``<div id="live">`` it swaps in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from workpool.dashboard.forms import CSRF_FIELD, csrf_token, remember_csrf
from workpool.dashboard.options import DashboardOptions

LIVE_HEADER = "x-workpool-live"
MAX_SHOWN_CHARACTERS = 100_000
"""Longest JSON text or traceback shown in full; longer ones are cut, with a note."""


class Renderer:
    """Renders the dashboard's templates for one dashboard."""

    def __init__(self, options: DashboardOptions, store: str) -> None:
        self.options = options
        self.store = store
        self.environment = Environment(
            loader=PackageLoader("workpool.dashboard", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.environment.filters.update(
            duration=duration,
            ago=ago,
            pretty=pretty,
            compact=compact,
            percent=percent,
            shown=shown,
            utc=utc,
        )

    def page(
        self,
        request: Request,
        template: str,
        context: dict[str, Any],
        *,
        live: str | None = None,
        status_code: int = 200,
    ) -> HTMLResponse:
        """``template`` (or only ``live``, its live part, when the script asks)."""
        token = csrf_token(request)
        chosen = live if live and request.headers.get(LIVE_HEADER) == "1" else template
        values = {
            "base": (request.scope.get("root_path") or "").rstrip("/"),
            "options": self.options,
            "store": self.store,
            "csrf": token,
            "csrf_field": CSRF_FIELD,
            "refresh_ms": int(self.options.refresh.total_seconds() * 1000),
            **context,
        }
        text = self.environment.get_template(chosen).render(values)
        response = HTMLResponse(text, status_code=status_code)
        response.headers["Cache-Control"] = "no-store"
        remember_csrf(request, response, token)
        return response


def duration(delta: timedelta | None) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 10 min``, ``3 d 4 h``; ``-`` for None."""
    if delta is None:
        return "-"
    seconds = max(0.0, delta.total_seconds())
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    minutes, hours, days = whole // 60 % 60, whole // 3600 % 24, whole // 86400
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    if whole < 86400:
        return f"{hours} h {minutes:02d} min"
    return f"{days} d {hours} h"


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """How long ago ``moment`` was (``in ...`` for a future one)."""
    if moment is None:
        return "-"
    delta = (now or datetime.now(UTC)) - moment
    if delta < timedelta(0):
        return f"in {duration(-delta)}"
    return f"{duration(delta)} ago"


def pretty(value: Any) -> str:
    """A JSON value as indented text."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def compact(value: Any) -> str:
    """A JSON value on one line."""
    return json.dumps(value, ensure_ascii=False, default=str)


def shown(text: str | None) -> str:
    """``text`` cut to ``MAX_SHOWN_CHARACTERS``, saying so."""
    if text is None:
        return ""
    if len(text) <= MAX_SHOWN_CHARACTERS:
        return text
    cut = len(text) - MAX_SHOWN_CHARACTERS
    return f"{text[:MAX_SHOWN_CHARACTERS]}\n… ({cut} more characters not shown)"


def utc(seconds: float) -> datetime:
    """Seconds since the epoch as a UTC time."""
    return datetime.fromtimestamp(seconds, UTC)


def percent(rate: float | None) -> str:
    """``12.5%``; ``-`` for None."""
    return "-" if rate is None else f"{rate * 100:.1f}%"
