"""What every command shares: the ``--url`` option, the pool runner and the output."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import click
from click.core import ParameterSource
from rich.console import Console

from workpool.app import Workpool
from workpool.backends import sqlite_path
from workpool.errors import ConfigurationError, RunNotFoundError, RunStateError, WorkpoolError
from workpool.validation import MAX_COUNT, MAX_TIMEOUT, parse_count, short_repr

T = TypeVar("T")

PIPE_WIDTH = 100
"""Width of tables written to a pipe or file (unless $COLUMNS says otherwise)."""


def _inherit_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A subcommand's ``--url`` falls back to one given to its group on the command line
    (``workpool queues --url X show Q``): a flag typed by the user beats $WORKPOOL_URL."""
    if ctx.get_parameter_source(param.name or "url") is ParameterSource.COMMANDLINE:
        return value
    parent = ctx.parent
    while parent is not None:
        if parent.get_parameter_source("url") is ParameterSource.COMMANDLINE:
            inherited: str | None = parent.params.get("url")
            return inherited
        parent = parent.parent
    return value


URL_OPTION = click.option(
    "--url",
    envvar="WORKPOOL_URL",
    callback=_inherit_url,
    help="Backend URL (default: $WORKPOOL_URL, else sqlite:///workpool.db).",
)
JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead (for scripts)."
)


class WholeNumber(click.ParamType[int | None, Any]):
    """A whole number from ``minimum`` to ``maximum`` (with ``none``: or 'none', which
    gives None); anything else (a float, NaN, a number too large to store) is a usage
    error naming the range, never a traceback."""

    name = "integer"

    def __init__(
        self, minimum: int = 0, maximum: int = MAX_COUNT, *, none: str | None = None
    ) -> None:
        self.minimum, self.maximum, self.none = minimum, maximum, none

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | None:
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value  # a default
        try:
            return parse_count(
                str(value), what="", minimum=self.minimum, maximum=self.maximum, none=self.none
            )
        except ConfigurationError as error:
            self.fail(str(error), param, ctx)


class Seconds(click.ParamType[float, Any]):
    """A number of seconds from ``minimum`` to ``maximum`` (NaN and infinities are
    usage errors, not a traceback from ``timedelta``)."""

    name = "seconds"

    def __init__(self, minimum: float = 0.0, maximum: float = MAX_TIMEOUT) -> None:
        self.minimum, self.maximum = minimum, maximum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        if not self.minimum <= seconds <= self.maximum:  # NaN too
            self.fail(
                f"must be a number of seconds from {self.minimum:g} to {self.maximum:g}, got "
                f"{short_repr(value)}",
                param,
                ctx,
            )
        return seconds


def fail(message: str, code: int) -> NoReturn:
    """Print ``workpool: message`` on stderr and exit with ``code``."""
    click.echo(f"workpool: {message}", err=True)
    sys.exit(code)


class CommandRefusedError(Exception):
    """A command that cannot do what was asked: the message is its one line on stderr,
    and it exits 1."""


def run_with_pool(url: str | None, action: Callable[[Workpool], Awaitable[T]]) -> T:
    """Run ``action`` on a pool opened on ``url``, closing it after; return its result.

    The store must exist: a SQLite file that does not is refused, not created (a
    mistyped path or another current directory would show an empty store). Errors end
    the command with one line on stderr: a missing store, an unknown run, a run in the
    wrong state or an action that raised ``CommandRefusedError`` exits 1; any other
    workpool error (unreachable backend, bad URL, unreadable record) exits 2.
    """

    async def main() -> T:
        pool = Workpool(url)
        require_store(pool.url)
        try:
            return await action(pool)
        finally:
            await pool.aclose()

    try:
        return asyncio.run(main())
    except (RunNotFoundError, RunStateError, CommandRefusedError) as error:
        fail(str(error), 1)
    except WorkpoolError as error:
        fail(str(error), 2)


def require_store(url: str) -> None:
    """Raise ``CommandRefusedError`` if ``url`` names a SQLite file that does not exist."""
    if not url.lower().startswith("sqlite:"):
        return
    path = sqlite_path(url).resolve()
    if not path.exists():
        raise CommandRefusedError(f"no workpool database at {path}; check --url / $WORKPOOL_URL")


def console() -> Console:
    """A console on stdout: colours on a terminal, plain text in a pipe (100 columns)."""
    wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    return Console(highlight=False, width=None if wide else PIPE_WIDTH)


def echo_json(value: Any) -> None:
    """Print ``value`` (already JSON-compatible) as indented JSON."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))
