"""``workpool queues``: list queues, read and change a queue's cluster-wide limits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import click
from rich.text import Text

from workpool.app import Workpool
from workpool.backends.base import QueueSettings
from workpool.cli.common import JSON_OPTION, URL_OPTION, console, echo_json, run_with_pool
from workpool.cli.formatting import jsonable, table
from workpool.stats import Figures, Unserved


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One line of ``workpool queues``: a queue's runs now and its settings."""

    name: str
    pending: int
    unserved: int
    """Pending runs of workflows no live worker defines on this queue."""
    running: int
    suspended: int
    max_parallelism: int | None
    paused: bool


@click.group(invoke_without_command=True)
@JSON_OPTION
@URL_OPTION
@click.pass_context
def queues(ctx: click.Context, as_json: bool, url: str | None) -> None:
    """List queues, or show, pause or limit one.

    A queue's pause and max_parallelism apply across every worker. Without a
    subcommand: every queue that has had runs, with its runs pending
    (queued or scheduled), running and suspended now, its max_parallelism and whether
    it is paused; then a line for each workflow whose pending runs no live worker
    defines. --json prints {"queues": [...], "unserved": [...]}.
    """
    if ctx.invoked_subcommand is not None:
        return
    rows, unserved = run_with_pool(url, _queue_rows)
    if as_json:
        echo_json(
            {"queues": [jsonable(row) for row in rows], "unserved": [jsonable(u) for u in unserved]}
        )
        return
    out = console()
    if not rows:
        out.print("no queues have had runs yet")
        return
    grid = table(
        "queue",
        "pending",
        "unserved",
        "running",
        "suspended",
        "max parallelism",
        "paused",
        right=("pending", "unserved", "running", "suspended", "max parallelism"),
    )
    for row in rows:
        grid.add_row(
            Text(row.name),
            str(row.pending),
            Text(str(row.unserved), style="yellow") if row.unserved else "0",
            str(row.running),
            str(row.suspended),
            "no limit" if row.max_parallelism is None else str(row.max_parallelism),
            Text("paused", style="yellow") if row.paused else "no",
        )
    out.print(grid)
    if unserved:
        out.print()
    for item in unserved:
        out.print(Text(item.describe(), style="yellow"))


async def _queue_rows(pool: Workpool) -> tuple[list[QueueRow], list[Unserved]]:
    """The queues known to stats, each with its settings, and the unserved workflows."""
    stats = await pool.stats(timedelta(minutes=1))
    by_queue: dict[str, Figures] = stats.by_queue
    rows = []
    for name, figures in by_queue.items():
        settings = await pool.get_queue(name)
        rows.append(
            QueueRow(
                name=name,
                pending=figures.pending,
                unserved=figures.unserved,
                running=figures.running,
                suspended=figures.suspended,
                max_parallelism=settings.max_parallelism,
                paused=settings.paused,
            )
        )
    return rows, stats.unserved


@queues.command()
@click.argument("queue")
@URL_OPTION
def show(queue: str, url: str | None) -> None:
    """Print QUEUE's settings."""
    _run(url, lambda pool: pool.get_queue(queue))


@queues.command()
@click.argument("queue")
@URL_OPTION
def pause(queue: str, url: str | None) -> None:
    """Start no more runs of QUEUE; running runs finish."""
    _run(url, lambda pool: pool.pause(queue))


@queues.command()
@click.argument("queue")
@URL_OPTION
def resume(queue: str, url: str | None) -> None:
    """Start runs of QUEUE again."""
    _run(url, lambda pool: pool.resume(queue))


@queues.command(name="set")
@click.argument("queue")
@click.argument("max_parallelism", metavar="MAX_PARALLELISM")
@URL_OPTION
def set_limit(queue: str, max_parallelism: str, url: str | None) -> None:
    """Let at most MAX_PARALLELISM runs of QUEUE run at once ('none': no limit)."""
    if max_parallelism.lower() == "none":
        limit = None
    elif max_parallelism.isdigit():
        limit = int(max_parallelism)
    else:
        raise click.BadParameter(
            f"{max_parallelism!r} is not a whole number >= 0 or 'none'",
            param_hint="MAX_PARALLELISM",
        )
    _run(url, lambda pool: pool.set_max_parallelism(queue, limit))


def describe(settings: QueueSettings) -> str:
    """One line: the queue, its limit and whether it is paused."""
    limit = "no limit" if settings.max_parallelism is None else str(settings.max_parallelism)
    state = "paused" if settings.paused else "running"
    return f"queue {settings.name}: max_parallelism={limit}, {state}"


def _run(url: str | None, action: Callable[[Workpool], Awaitable[QueueSettings]]) -> None:
    click.echo(describe(run_with_pool(url, action)))
