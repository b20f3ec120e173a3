"""``workpool runs retry|cancel|delete`` (one run, or every run a filter selects) and
``workpool runs failures``: change runs, and see failures grouped by error type."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click
from rich.text import Text

from workpool.app import Workpool
from workpool.cli.common import (
    JSON_OPTION,
    URL_OPTION,
    console,
    echo_json,
    run_with_pool,
)
from workpool.cli.formatting import NONE, jsonable, short_time, table
from workpool.cli.runs import STATUSES
from workpool.errors import RunStateError
from workpool.models import RunFilter

TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"]


def filter_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that select runs, and --dry-run, --yes and --all."""
    options = [
        click.option("--workflow", help="Only runs of this workflow."),
        click.option("--queue", help="Only runs in this queue."),
        click.option(
            "--status",
            "statuses",
            multiple=True,
            type=click.Choice(STATUSES),
            help="Only runs in this state (repeat for several; default: every state "
            "the action applies to).",
        ),
        click.option("--error-type", help="Only runs whose error is of this type (ValueError)."),
        click.option(
            "--since",
            type=click.DateTime(TIME_FORMATS),
            help="Only runs created at or after this local time (2026-01-31T12:00).",
        ),
        click.option(
            "--until", type=click.DateTime(TIME_FORMATS), help="Only runs created before this."
        ),
        click.option(
            "--all", "every", is_flag=True, help="Select every run (no filter given) on purpose."
        ),
        click.option(
            "--dry-run", is_flag=True, help="Print how many runs would change; change nothing."
        ),
        click.option("--yes", is_flag=True, help="Do not ask before changing the runs."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _run_filter(options: dict[str, Any]) -> RunFilter | None:
    """The filter the options give, or None when none was given (and not --all)."""
    statuses = tuple(options["statuses"])
    fields = {
        "workflow": options["workflow"],
        "queue": options["queue"],
        "status": statuses or None,
        "error_type": options["error_type"],
        "since": options["since"],
        "until": options["until"],
    }
    if all(value is None for value in fields.values()) and not options["every"]:
        return None
    return RunFilter(**fields)


PAST = {"retry": "retried", "cancel": "canceled", "delete": "deleted"}


def _bulk(verb: str, run_id: str | None, options: dict[str, Any], act: Any) -> None:
    """Count the runs the filter selects, then (unless --dry-run, after a confirmation
    unless --yes) act on them; ``act(pool, run_filter, dry_run)`` returns a count."""
    run_filter = _run_filter(options)
    if run_id is not None:
        if run_filter is not None:
            raise click.UsageError(f"give a RUN_ID or filter options to {verb}, not both")
        return
    if run_filter is None:
        one = "a RUN_ID, or " if verb != "delete" else ""
        raise click.UsageError(
            f"give {one}filter options (--workflow, --status ...) to {verb} every run they "
            "select (--all: every run)"
        )
    url = options["url"]
    count = run_with_pool(url, lambda pool: act(pool, run_filter, True))
    if options["dry_run"]:
        click.echo(f"{count} runs would be {PAST[verb]}")
        return
    if count == 0:
        click.echo(f"no runs to {verb}")
        return
    if not options["yes"]:
        click.confirm(f"{count} runs match: {verb} them?", abort=True)
    done = run_with_pool(url, lambda pool: act(pool, run_filter, False))
    click.echo(f"{done} runs {PAST[verb]}")


@click.command()
@click.argument("run_id", required=False)
@filter_options
@URL_OPTION
def retry(run_id: str | None, **options: Any) -> None:
    """Re-run failed or canceled run RUN_ID as a new run and print its id, or re-run
    every run the filter options select.

    The new run has the same workflow, queue, input and retry policy, and is linked to
    the old one (retry_of / retried_as); a run already retried is not retried again. A
    run that is still active or succeeded is refused (exit code 1). With filters, the
    count is printed (--dry-run: only that), then the runs are re-run in pages of 500,
    each one atomic operation, while workers go on.
    """
    _bulk(
        "retry",
        run_id,
        options,
        lambda pool, run_filter, dry: pool.retry_runs(run_filter, dry_run=dry),
    )
    if run_id is None:
        return

    async def rerun(pool: Workpool) -> str:
        try:
            return (await pool.retry_run(run_id)).id
        except RunStateError:
            state = (await pool.get_run(run_id)).status
            said = "succeeded" if state == "succeeded" else f"is {state}"
            raise RunStateError(
                f"run {run_id} {said}: only a failed or canceled run can be retried"
            ) from None

    click.echo(run_with_pool(options["url"], rerun))


@click.command()
@click.argument("run_id", required=False)
@click.option("--reason", help="Why: stored with the run and passed to its hooks.")
@filter_options
@URL_OPTION
def cancel(run_id: str | None, reason: str | None, **options: Any) -> None:
    """Cancel run RUN_ID, or every unfinished run the filter options select.

    A run that has not started ends canceled at once; a running run is stopped by its
    worker within one lease renewal; a finished run is left as it is. With filters, as
    in retry.
    """
    _bulk(
        "cancel",
        run_id,
        options,
        lambda pool, run_filter, dry: pool.cancel_runs(run_filter, reason=reason, dry_run=dry),
    )
    if run_id is None:
        return
    result = run_with_pool(options["url"], lambda pool: pool.cancel(run_id, reason))
    messages = {
        "canceled": "canceled",
        "requested": "cancel requested: the worker stops it within one lease renewal",
        "finished": "already finished",
    }
    click.echo(f"run {run_id}: {messages.get(result, result)}")


@click.command()
@filter_options
@URL_OPTION
def delete(**options: Any) -> None:
    """Delete every finished run the filter options select, with its steps, events and
    published values (as retention does). With filters, as in retry."""
    _bulk(
        "delete",
        None,
        options,
        lambda pool, run_filter, dry: pool.delete_runs(run_filter, dry_run=dry),
    )


@click.command()
@JSON_OPTION
@URL_OPTION
def failures(as_json: bool, url: str | None) -> None:
    """Failed runs grouped by workflow and error type: how many, the first and the last
    failure, and the latest run of each (read from counters: no scan of the runs).

    Under the table, the command that retries one group. --json prints
    {"groups": [...]}.
    """
    groups = run_with_pool(url, lambda pool: pool.failures())
    if as_json:
        echo_json({"groups": [jsonable(group) for group in groups]})
        return
    out = console()
    if not groups:
        out.print("no failed runs")
        return
    now = datetime.now(UTC)
    grid = table("workflow", "error type", "runs", "first", "last", "example", right=("runs",))
    for group in groups:
        grid.add_row(
            Text(group.workflow),
            Text(group.error_type or NONE),
            str(group.count),
            short_time(group.first_seen, now),
            short_time(group.last_seen, now),
            group.example_run_id or NONE,
        )
    out.print(grid)
    first = groups[0]
    words = ["workpool", "runs", "retry", "--workflow", first.workflow, "--status", "failed"]
    words += ["--error-type", first.error_type]
    out.print()
    out.print(Text(f"retry a group: {shlex.join(words)}"), soft_wrap=True)
