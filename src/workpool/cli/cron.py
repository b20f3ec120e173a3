"""``workpool cron skipped``: the cron ticks that started no run, and why."""

from __future__ import annotations

from datetime import UTC

import click
from rich.text import Text

from workpool.cli.common import JSON_OPTION, URL_OPTION, console, echo_json, run_with_pool
from workpool.cli.formatting import jsonable, table
from workpool.models import SkippedTick


@click.group()
def cron() -> None:
    """Read what the cron leader recorded."""


@cron.command()
@click.option("--workflow", help="Only ticks of this workflow.")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="Show at most this many, newest first.",
)
@JSON_OPTION
@URL_OPTION
def skipped(workflow: str | None, limit: int, as_json: bool, url: str | None) -> None:
    """List the cron ticks that started no run, latest tick first.

    Each with its tick time (UTC), workflow, trigger (its name, else its expression and
    time zone), reason and the trigger's run that was active: previous_run_active (the
    trigger's overlap is skip, and that run had not ended) or buffer_full (buffer_one,
    and that run, the one it buffers, had not started). The newest 100 of each trigger
    are kept. --json prints {"skipped": [...]}.
    """
    found: list[SkippedTick] = run_with_pool(
        url, lambda pool: pool.list_skipped_ticks(workflow=workflow, limit=limit)
    )
    if as_json:
        echo_json({"skipped": [jsonable(tick) for tick in found]})
        return
    out = console()
    if not found:
        out.print("no skipped cron ticks recorded")
        return
    grid = table("tick (UTC)", "workflow", "trigger", "reason", "active run")
    for tick in found:
        grid.add_row(
            tick.scheduled_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            Text(tick.workflow),
            Text(tick.trigger),
            tick.reason,
            tick.run_id,
        )
    out.print(grid)
