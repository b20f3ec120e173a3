"""``workpool queues``: read and change a queue's cluster-wide limits."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

import click

from workpool.app import Workpool
from workpool.backends.base import QueueSettings
from workpool.errors import WorkpoolError

URL_OPTION = click.option(
    "--url",
    envvar="WORKPOOL_URL",
    help="Backend URL (default: $WORKPOOL_URL, else sqlite:///workpool.db).",
)


@click.group()
def queues() -> None:
    """Show, pause, resume or limit a queue (across every worker)."""


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
    async def main() -> QueueSettings:
        pool = Workpool(url)
        try:
            return await action(pool)
        finally:
            await pool.aclose()

    try:
        settings = asyncio.run(main())
    except WorkpoolError as error:
        click.echo(f"workpool: {error}", err=True)
        sys.exit(2)
    click.echo(describe(settings))
