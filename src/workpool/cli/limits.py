"""``workpool limits``: each shared limit's runs in use and waiting, and what it covers."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from workpool.cli.common import JSON_OPTION, URL_OPTION, console, echo_json, run_with_pool
from workpool.cli.formatting import jsonable, table
from workpool.limits import LimitUsage


@click.command()
@JSON_OPTION
@URL_OPTION
def limits(as_json: bool, url: str | None) -> None:
    """List the shared limits (pool.limit) that registered workflows count against.

    A table of name, max concurrency (per key for a keyed limit), rate, runs in use and
    waiting now (every key together), keys in use and the workflows it covers. --json
    prints {"limits": [...]}.
    """
    found: list[LimitUsage] = run_with_pool(url, lambda pool: pool.limit_usage())
    if as_json:
        echo_json({"limits": [jsonable(usage) for usage in found]})
        return
    out = console()
    if not found:
        out.print("no shared limits (a worker registers the limits of its app's workflows)")
        return
    out.print(limits_table(found))


def limits_table(found: list[LimitUsage]) -> Table:
    """The shared limits as a table (``workpool limits``, ``workpool stats``)."""
    grid = table("name", "max conc.", "rate", "in use", "waiting", "keys", "workflows")
    for usage in found:
        concurrency = "-" if usage.max_concurrency is None else str(usage.max_concurrency)
        grid.add_row(
            Text(usage.name),
            concurrency + (" per key" if usage.keyed else ""),
            rate_text(usage.rate),
            str(usage.in_use),
            str(usage.waiting),
            str(usage.keys),
            Text(", ".join(usage.workflows) or "-"),
        )
    return grid


def rate_text(rate: tuple[int, float] | None) -> str:
    """``100/1s`` for a rate of (100, 1.0); ``-`` for none."""
    if rate is None:
        return "-"
    count, per = rate
    return f"{count}/{per:g}s"
