"""``workpool stats`` (backlog and recent outcomes) and ``workpool workflows`` (registry)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from workpool.app import Workpool
from workpool.cli.common import JSON_OPTION, URL_OPTION, console, echo_json, run_with_pool
from workpool.cli.formatting import NONE, duration, jsonable, percent, short_time, table
from workpool.cli.limits import limits_table
from workpool.limits import LimitUsage
from workpool.models import RegisteredWorkflow
from workpool.stats import MAX_WINDOW, Figures, Stats
from workpool.validation import short_repr

WINDOW_FORM = re.compile(r"(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")


def parse_window(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    """``30s``, ``5m``, ``1h`` or ``1h30m`` as a timedelta, more than 0 and at most 24h;
    anything else is a usage error."""
    text = value.strip().lower()
    match = WINDOW_FORM.fullmatch(text)
    if not text or match is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 30s, 5m, 1h or 1h30m")
    parts = match.groups()
    if any(len(part or "") > 6 for part in parts):  # timedelta would overflow
        raise click.BadParameter(f"{short_repr(value)} must be more than 0 and at most 24h")
    hours, minutes, seconds = (int(part or 0) for part in parts)
    window = timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if not timedelta(0) < window <= MAX_WINDOW:
        raise click.BadParameter(f"{value!r} must be more than 0 and at most 24h")
    return window


@click.command()
@click.option(
    "--window",
    default="5m",
    callback=parse_window,
    show_default=True,
    help="How far back to count outcomes: 30s, 5m, 1h... (at most 24h).",
)
@click.option("--queue", help="Only runs of this queue.")
@click.option("--workflow", help="Only runs of this workflow.")
@JSON_OPTION
@URL_OPTION
def stats(
    window: timedelta, queue: str | None, workflow: str | None, as_json: bool, url: str | None
) -> None:
    """Show the backlog now and what happened in the last --window.

    First the totals, then one table per queue and one per workflow: runs pending
    (queued or scheduled), running and suspended now, how long the oldest startable
    run has waited, then for the window: executions (attempts that ended), error rate
    ((retries + failures) / executions), permanent failure rate (failed for good /
    runs that ended) and average run time of an attempt. Outcomes are counted per
    minute: the window covers every minute it touches. Last, the shared limits' runs in
    use and waiting (as ``workpool limits``), if there are any.
    """

    async def read(pool: Workpool) -> tuple[Stats, list[LimitUsage]]:
        return await pool.stats(window, queue=queue, workflow=workflow), await pool.limit_usage()

    figures, limits = run_with_pool(url, read)
    if as_json:
        echo_json({**jsonable(figures), "limits": jsonable(limits)})
        return
    out = console()
    _print_stats(out, figures, queue, workflow)
    if limits:
        out.print()
        out.print(limits_table(limits))


def _print_stats(out: Console, figures: Stats, queue: str | None, workflow: str | None) -> None:
    scope = [f"queue {queue}"] if queue else []
    scope += [f"workflow {workflow}"] if workflow else []
    total = figures.total
    oldest = (
        f", oldest pending waited {duration(total.oldest_pending_age)}"
        if total.oldest_pending_age is not None
        else ""
    )
    out.print(Text(f"{', '.join(scope) or 'all queues'}, last {_window_label(figures.window)}:"))
    out.print(
        f"  now: {total.pending} pending ({total.queued} queued, {total.scheduled} "
        f"scheduled), {total.running} running, {total.suspended} suspended{oldest}"
    )
    out.print(
        f"  ended: {total.executions} executions, {total.completed} runs ended "
        f"({total.succeeded} succeeded, {total.failed} failed, {total.canceled} canceled), "
        f"{total.retries} retried"
    )
    out.print(
        f"  error rate {percent(total.error_rate)}, permanent failure rate "
        f"{percent(total.permanent_failure_rate)}, average run time "
        f"{duration(total.average_run_time)}"
    )
    if figures.by_queue:
        out.print()
        out.print(_breakdown("queue", figures.by_queue, with_oldest=True))
    if figures.by_workflow:
        out.print()
        out.print(_breakdown("workflow", figures.by_workflow, with_oldest=False))


def _window_label(window: timedelta) -> str:
    """``30s``, ``5m``, ``1h30m``: the window as it may be typed."""
    whole = int(window.total_seconds())
    parts = [(whole // 3600, "h"), (whole % 3600 // 60, "m"), (whole % 60, "s")]
    return "".join(f"{amount}{unit}" for amount, unit in parts if amount) or "0s"


def _breakdown(kind: str, rows: dict[str, Figures], *, with_oldest: bool) -> Table:
    """A table of figures per queue or workflow (the oldest pending age is kept per
    queue only, so the workflow table has no such column)."""
    headers = [kind, "pending", "running", "suspended"]
    headers += ["oldest\npending"] if with_oldest else []
    headers += ["executions", "error\nrate", "permanent\nfailures", "average\nrun time"]
    grid = table(*headers, right=tuple(headers[1:]))
    for name, row in rows.items():
        cells: list[str | Text] = [
            Text(name),
            str(row.pending),
            str(row.running),
            str(row.suspended),
        ]
        cells += [duration(row.oldest_pending_age)] if with_oldest else []
        cells += [
            str(row.executions),
            percent(row.error_rate),
            percent(row.permanent_failure_rate),
            duration(row.average_run_time),
        ]
        grid.add_row(*cells)
    return grid


@click.command()
@JSON_OPTION
@URL_OPTION
def workflows(as_json: bool, url: str | None) -> None:
    """List the workflows registered by the workers of every app.

    A table of name, app, queue, max concurrency, retry policy, cron triggers and when a
    worker of the app last started with that definition. --json prints
    {"workflows": [...]}, with each workflow's rate limits too.
    """
    found: list[RegisteredWorkflow] = run_with_pool(url, lambda pool: pool.list_workflows())
    if as_json:
        echo_json({"workflows": [jsonable(workflow) for workflow in found]})
        return
    out = console()
    if not found:
        out.print("no workflows registered (a worker registers its app's workflows at start)")
        return
    now = datetime.now(UTC)
    grid = table("name", "app", "queue", "max conc.", "retry", "cron", "updated")
    for workflow in found:
        grid.add_row(
            Text(workflow.name),
            Text(workflow.app),
            Text(workflow.queue),
            "no limit" if workflow.max_concurrency is None else str(workflow.max_concurrency),
            Text(_retry_summary(workflow.retry)),
            Text(_cron_summary(workflow.cron)),
            short_time(workflow.updated_at, now),
        )
    out.print(grid)


def _retry_summary(policy: Any) -> str:
    """``5 attempts, 1s backoff x2`` for a stored policy; ``no retry`` for None."""
    if not isinstance(policy, dict):
        return "no retry"
    try:
        attempts = int(policy["max_attempts"])
        backoff = duration(timedelta(seconds=float(policy["initial_backoff"])))
        base = float(policy["base"])
    except (KeyError, TypeError, ValueError):
        return str(policy)
    if attempts <= 1:
        return "no retry"
    return f"{attempts} attempts, {backoff} backoff x{base:g}"


def _cron_summary(triggers: list[Any]) -> str:
    """The cron expressions, one per line, each with its time zone unless UTC, and its
    overlap policy unless skip (the default)."""
    parts = []
    for trigger in triggers:
        if not isinstance(trigger, dict):
            parts.append(str(trigger))
            continue
        zone = trigger.get("timezone") or "UTC"
        expression = str(trigger.get("expression", "?"))
        part = expression if zone == "UTC" else f"{expression} ({zone})"
        overlap = trigger.get("overlap") or "skip"
        parts.append(part if overlap == "skip" else f"{part} {overlap}")
    return "\n".join(parts) or NONE
