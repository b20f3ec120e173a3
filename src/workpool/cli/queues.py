"""``workpool queues``: list queues, read and change a queue's cluster-wide limits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import click
from rich.text import Text

from workpool.app import Workpool
from workpool.backends.base import QueueSettings
from workpool.cli.common import (
    JSON_OPTION,
    URL_OPTION,
    CommandRefusedError,
    WholeNumber,
    console,
    echo_json,
    run_with_pool,
)
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


CREATE_OPTION = click.option(
    "--create",
    is_flag=True,
    help="Accept a queue that is not known yet (no runs, settings, registered workflow "
    "or live worker), to pause or limit it before its first run.",
)


@queues.command()
@click.argument("queue")
@URL_OPTION
def show(queue: str, url: str | None) -> None:
    """Print QUEUE's settings."""
    _run(url, queue, lambda pool: pool.get_queue(queue))


@queues.command()
@click.argument("queue")
@CREATE_OPTION
@URL_OPTION
def pause(queue: str, create: bool, url: str | None) -> None:
    """Start no more runs of QUEUE; running runs finish."""
    _run(url, queue, lambda pool: pool.pause(queue), create=create, verb="pause")


@queues.command()
@click.argument("queue")
@URL_OPTION
def resume(queue: str, url: str | None) -> None:
    """Start runs of QUEUE again."""
    _run(url, queue, lambda pool: pool.resume(queue))


@queues.command(name="set")
@click.argument("queue")
@click.argument("max_parallelism", metavar="MAX_PARALLELISM", type=WholeNumber(0, none="no limit"))
@CREATE_OPTION
@URL_OPTION
def set_limit(queue: str, max_parallelism: int | None, create: bool, url: str | None) -> None:
    """Let at most MAX_PARALLELISM runs of QUEUE run at once ('none': no limit)."""
    limit = max_parallelism
    _run(
        url, queue, lambda pool: pool.set_max_parallelism(queue, limit), create=create, verb="limit"
    )


def describe(settings: QueueSettings) -> str:
    """One line: the queue, its limit and whether it is paused."""
    limit = "no limit" if settings.max_parallelism is None else str(settings.max_parallelism)
    state = "paused" if settings.paused else "running"
    return f"queue {settings.name}: max_parallelism={limit}, {state}"


def _run(
    url: str | None,
    queue: str,
    action: Callable[[Workpool], Awaitable[QueueSettings]],
    *,
    create: bool = False,
    verb: str | None = None,
) -> None:
    """Run ``action`` on QUEUE and print its settings; refuse an unknown queue unless
    ``create`` (``verb``: what --create would let the command do, if it takes it)."""

    async def checked(pool: Workpool) -> QueueSettings:
        if not create:
            await _require_known(pool, queue, verb)
        return await action(pool)

    click.echo(describe(run_with_pool(url, checked)))


async def _require_known(pool: Workpool, queue: str, verb: str | None) -> None:
    """Raise CommandRefusedError unless QUEUE has settings (a limit or a pause), has had
    runs, or is named by a registered workflow or a live worker."""
    settings = await pool.get_queue(queue)
    if settings.paused or settings.max_parallelism is not None:
        return
    known = await _known_queues(pool)
    if queue in known:
        return
    listed = f"known queues: {', '.join(sorted(known))}" if known else "no queue is known yet"
    hint = f"; pass --create to {verb} it before its first run" if verb else ""
    raise CommandRefusedError(
        f"unknown queue {queue!r}: it has had no runs and no settings, and no registered "
        f"workflow or live worker names it ({listed}){hint}"
    )


async def _known_queues(pool: Workpool) -> set[str]:
    """The queues that have had runs, and those registered workflows and live workers name."""
    backend = await pool.backend()
    now = pool.clock.now()
    snapshot = await backend.get_stats(now - 60, now)
    names = {pair.queue for pair in snapshot.activity}
    names.update(queue for worker in snapshot.workers for queue in worker.queues)
    names.update(workflow.queue for workflow in await backend.list_workflows())
    return names
