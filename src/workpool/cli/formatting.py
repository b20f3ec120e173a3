"""Formatting shared by the inspection commands: times, durations, rates, JSON."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.table import Table
from rich.text import Text

NONE = "-"
"""Shown for a missing value."""

STATUS_STYLES = {
    "scheduled": "blue",
    "queued": "blue",
    "running": "cyan",
    "suspended": "magenta",
    "needs_attention": "bright_red",
    "paused": "yellow",
    "waiting": "magenta",
    "succeeded": "green",
    "failed": "red",
    "canceled": "yellow",
}


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: dataclasses and models become objects, times ISO
    8601 strings (UTC), durations seconds."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def status_text(status: str) -> Text:
    """A run or step status, coloured on a terminal."""
    return Text(status, style=STATUS_STYLES.get(status, ""))


def duration(delta: timedelta | None) -> str:
    """``850ms``, ``12.3s``, ``4m05s``, ``2h10m``, ``3d04h``; ``-`` for None."""
    if delta is None:
        return NONE
    seconds = max(0.0, delta.total_seconds())
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def short_time(moment: datetime | None, now: datetime) -> str:
    """Local time, short: ``14:03:27`` today, ``11-21 14:03`` this year, else the date."""
    if moment is None:
        return NONE
    local, today = moment.astimezone(), now.astimezone()
    if local.date() == today.date():
        return local.strftime("%H:%M:%S")
    if local.year == today.year:
        return local.strftime("%m-%d %H:%M")
    return local.strftime("%Y-%m-%d")


def full_time(moment: datetime | None, now: datetime) -> str:
    """Local time with its zone, and how long ago (or how far ahead) it is."""
    if moment is None:
        return NONE
    stamp = moment.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    delta = now - moment
    relative = f"{duration(delta)} ago" if delta >= timedelta(0) else f"in {duration(-delta)}"
    return f"{stamp} ({relative})"


def percent(rate: float | None) -> str:
    """``12.5%``; ``-`` when there was nothing to divide by."""
    return NONE if rate is None else f"{rate * 100:.1f}%"


def one_line_json(value: Any) -> str:
    """A JSON value on one line."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def pretty_json(value: Any) -> str:
    """A JSON value indented over several lines."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def table(*headers: str, right: tuple[str, ...] = ()) -> Table:
    """A borderless table with bold headers; columns named in ``right`` align right.

    The first column never wraps (it holds names or ids to copy).
    """
    grid = Table(
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        show_edge=False,
        header_style="bold",
    )
    for index, header in enumerate(headers):
        grid.add_column(
            header,
            justify="right" if header in right else "left",
            no_wrap=index == 0,
        )
    return grid
