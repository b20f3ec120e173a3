"""``workpool runs pause|resume|run-now RUN_ID``: hold one run back, let it go again, or
start a scheduled run at once."""

from __future__ import annotations

import click

from workpool.cli.common import URL_OPTION, run_with_pool


@click.command()
@click.argument("run_id")
@URL_OPTION
def pause(run_id: str, url: str | None) -> None:
    """Pause queued or scheduled run RUN_ID: no worker starts it until it is resumed.

    It gives up its concurrency place (the next waiting run takes it) and its rate limit
    reservation; it can still be canceled, and its deadline still counts. A running or
    finished run is refused (exit code 1).
    """
    run_with_pool(url, lambda pool: pool.pause_run(run_id))
    click.echo(f"run {run_id}: paused")


@click.command()
@click.argument("run_id")
@URL_OPTION
def resume(run_id: str, url: str | None) -> None:
    """Resume paused run RUN_ID in its place (it keeps the time it was available at,
    so it goes ahead of runs queued since; a scheduled run waits for its time again)."""
    run = run_with_pool(url, lambda pool: pool.resume_run(run_id))
    click.echo(f"run {run_id}: resumed, {run.status}")


@click.command("run-now")
@click.argument("run_id")
@URL_OPTION
def run_now(run_id: str, url: str | None) -> None:
    """Make scheduled run RUN_ID (a later start, or a retry's backoff) available now,
    keeping its attempt count; any other state is refused (exit code 1)."""
    run = run_with_pool(url, lambda pool: pool.run_now(run_id))
    click.echo(f"run {run_id}: {run.status}, available now")
