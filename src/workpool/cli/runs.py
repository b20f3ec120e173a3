"""``workpool runs list|show|send-event|get-event`` and ``workpool steps``: find runs
and talk to them (``acting.py`` adds the commands that change runs)."""

from __future__ import annotations

import json
import shlex
import textwrap
from datetime import UTC, datetime
from typing import Any, get_args

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table
from rich.text import Text

from workpool.app import MAX_PAGE, Workpool
from workpool.cli.common import (
    JSON_OPTION,
    URL_OPTION,
    CommandRefusedError,
    WholeNumber,
    console,
    echo_json,
    run_with_pool,
)
from workpool.cli.formatting import (
    NONE,
    duration,
    full_time,
    jsonable,
    one_line_json,
    pretty_json,
    short_time,
    shorten,
    status_text,
    table,
)
from workpool.models import Run, RunList, RunState, Step

STATUSES = list(get_args(RunState))
DEFAULT_LIMIT = 20
CHILD_PREFIX = len("run : ") + 32 + 8
"""Width of a step's result column when a step has a child run: its id and some output."""
OUTPUT_PREVIEW = 200
"""Characters of a step's output or error kept before the table shortens it to fit."""


@click.group()
def runs() -> None:
    """List runs, show one, retry, cancel or delete runs (one, or every run a filter
    selects), pause, resume or run now one run, see failures by error type, send a run
    an event, read a value one published."""


@runs.command(name="list")
@click.option("--status", type=click.Choice(STATUSES), help="Only runs in this state.")
@click.option("--workflow", help="Only runs of this workflow.")
@click.option("--queue", help="Only runs in this queue.")
@click.option(
    "--limit",
    default=DEFAULT_LIMIT,
    show_default=True,
    type=WholeNumber(1, MAX_PAGE),
    help="Runs per page.",
)
@click.option("--cursor", help="Where the next page starts (printed under each full page).")
@JSON_OPTION
@URL_OPTION
def list_runs(
    status: RunState | None,
    workflow: str | None,
    queue: str | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
    url: str | None,
) -> None:
    """List runs, newest first, one page at a time.

    A table of id, workflow, queue, status, attempts, created (local time) and how
    long the run took (finished runs) or how old it is (others). When there are more
    runs, the last line is the command that prints the next page. --json prints
    {"runs": [...], "cursor": ...} (cursor null on the last page).
    """
    page: RunList = run_with_pool(
        url,
        lambda pool: pool.list_runs(
            status=status, workflow=workflow, queue=queue, limit=limit, cursor=cursor
        ),
    )
    if as_json:
        echo_json({"runs": [jsonable(run) for run in page.runs], "cursor": page.cursor})
        return
    out = console()
    if not page.runs:
        out.print("no runs" if cursor is None else "no more runs")
        return
    now = datetime.now(UTC)
    grid = table(
        "id", "workflow", "queue", "status", "attempts", "created", "took/age", right=("attempts",)
    )
    for run in page.runs:
        grid.add_row(
            run.id,
            Text(run.workflow),
            Text(run.queue),
            status_text(run.status),
            str(run.attempts),
            short_time(run.created_at, now),
            _took_or_age(run, now),
        )
    out.print(grid)
    if page.cursor is not None:
        filters = {"--status": status, "--workflow": workflow, "--queue": queue}
        command = _next_page_command(filters, limit, url, page.cursor)
        out.print()
        out.print(Text(f"next page: {command}"), soft_wrap=True)


def _next_page_command(
    filters: dict[str, str | None], limit: int, url: str | None, cursor: str
) -> str:
    """The ``runs list`` command for the page after this one: the same options (and
    ``--url`` if it was typed, not taken from $WORKPOOL_URL), with the cursor."""
    words = ["workpool", "runs", "list"]
    for option, value in filters.items():
        if value is not None:
            words += [option, value]
    if limit != DEFAULT_LIMIT:
        words += ["--limit", str(limit)]
    typed = click.get_current_context().get_parameter_source("url")
    if url and typed is ParameterSource.COMMANDLINE:
        words += ["--url", url]
    return shlex.join([*words, "--cursor", cursor])


def _took_or_age(run: Run, now: datetime) -> str:
    """How long a finished run took (from its last start), or how old an active run is."""
    if run.finished_at is not None:
        if run.started_at is None:
            return NONE  # canceled before it started
        return duration(run.finished_at - run.started_at)
    return f"age {duration(now - run.created_at)}"


@runs.command()
@click.argument("run_id")
@JSON_OPTION
@URL_OPTION
def show(run_id: str, as_json: bool, url: str | None) -> None:
    """Print every field of run RUN_ID.

    Its state and attempts, times (local, and how long ago), cancel request,
    idempotency key, parent and children runs, retry links (retry of / retried as),
    then the input and output as indented JSON and the error with its traceback.
    --json prints the run as one JSON object (times in UTC, ISO 8601).
    """
    run, waiting, events = run_with_pool(url, lambda pool: _run_and_reason(pool, run_id))
    if as_json:
        echo_json({**jsonable(run), "waiting": waiting, "events": events})
        return
    _print_run(console(), run, datetime.now(UTC), waiting, events)


async def _run_and_reason(pool: Workpool, run_id: str) -> tuple[Run, str | None, dict[str, Any]]:
    run = await pool.get_run(run_id)
    return run, await pool.waiting_reason(run), await pool.get_events(run_id)


def _print_run(
    out: Console,
    run: Run,
    now: datetime,
    waiting: str | None = None,
    events: dict[str, Any] | None = None,
) -> None:
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold", no_wrap=True)
    fields.add_column()
    took = (
        f", last execution took {duration(run.finished_at - run.started_at)}"
        if run.finished_at is not None and run.started_at is not None
        else ""
    )
    cancel = NONE
    if run.cancel_requested or run.cancel_reason:
        cancel = "requested" + (f": {run.cancel_reason}" if run.cancel_reason else "")
    rows: list[tuple[str, str | Text]] = [
        ("run", run.id),
        ("workflow", Text(run.workflow)),
        ("queue", Text(run.queue)),
        ("priority", str(run.priority)),
        (
            "status",
            status_text(run.status) + (Text(f" ({waiting})", style="yellow") if waiting else ""),
        ),
        ("attempts", f"{run.attempts} ({run.executions} executions, resumes included)"),
        ("ran", f"{duration(run.run_time)} in all"),
        (
            "timeout",
            f"{duration(run.timeout)} per attempt" if run.timeout else "- (its workflow's)",
        ),
        ("deadline", full_time(run.deadline, now)),
        ("created", full_time(run.created_at, now)),
        ("available", full_time(run.available_at, now)),
        ("started", full_time(run.started_at, now)),
        ("finished", full_time(run.finished_at, now) + took),
        ("cancel", Text(cancel)),
        ("idempotency key", Text(run.idempotency_key or NONE)),
        ("parent", run.parent_run_id or NONE),
        ("children", "\n".join(run.children) or NONE),
        ("retry of", run.retry_of or NONE),
        ("retried as", run.retried_as or NONE),
    ]
    if run.rerun_from:
        note = run.rerun_from
        rows.append(("rerun", Text(f"from step {note['step']!r}: {note['reason'] or NONE}")))
    for name, value in rows:
        fields.add_row(name, value)
    out.print(fields)
    sections: list[tuple[str, str]] = [("input", pretty_json(run.input))]
    if run.status == "succeeded" or run.output is not None:
        sections.append(("output", pretty_json(run.output)))
    if run.progress is not None:
        sections.append(("progress", pretty_json(run.progress)))
    if events:
        lines = (f"{key}: {one_line_json(value)}" for key, value in events.items())
        sections.append(("events", "\n".join(lines)))
    if run.error is not None:
        error = f"{run.error.type}: {run.error.message}"
        if run.error.traceback:
            error += "\n\n" + run.error.traceback.rstrip()
        sections.append(("needs attention" if run.status == "needs_attention" else "error", error))
    for title, body in sections:
        out.print()
        out.print(Text(title, style="bold"))
        out.print(Text(textwrap.indent(body, "  ")), soft_wrap=True)


@runs.command(name="send-event")
@click.argument("run_id")
@click.argument("key")
@click.argument("payload")
@click.option(
    "--event-id",
    default=None,
    help="Name the event: sending the same id to the run again stores nothing.",
)
@URL_OPTION
def send_event(run_id: str, key: str, payload: str, event_id: str | None, url: str | None) -> None:
    """Send run RUN_ID an event of KEY with PAYLOAD, a JSON value.

    A ctx.step.wait_for_event of the run takes it (one wait per event, in send order,
    also if the event comes first); a run waiting on KEY starts again at once. A
    finished or unknown run is refused (exit code 1). With --event-id, an id the run
    was sent before is reported and not sent again (exit code 0).
    """
    try:
        value = json.loads(payload)
    except ValueError as error:
        raise click.BadParameter(
            f"{payload!r} is not JSON ({error}); quote a string as '\"yes\"'",
            param_hint="'PAYLOAD'",
        ) from None
    sent = run_with_pool(url, lambda pool: pool.send_event(run_id, key, value, event_id=event_id))
    if sent:
        click.echo(f"run {run_id}: event {key!r} sent")
    else:
        click.echo(f"run {run_id}: event {event_id!r} was sent before; not sent again")


@runs.command(name="get-event")
@click.argument("run_id")
@click.argument("key")
@click.option(
    "--timeout",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds to wait for a value while the run is active (0: read once).",
)
@URL_OPTION
def get_event(run_id: str, key: str, timeout: float, url: str | None) -> None:
    """Print the value run RUN_ID published under KEY (ctx.set_event), as JSON.

    The latest value; with --timeout, waits up to that long for one while the run is
    active. A run that published none under KEY (yet) exits 1, naming the keys it
    did publish; an unknown run exits 1.
    """

    async def read(pool: Workpool) -> Any:
        await pool.get_event(run_id, key, timeout)  # waits, if asked; unknown run: exit 1
        events = await pool.get_events(run_id)  # tells a published null from none
        if key in events:
            return events[key]
        state = (await pool.get_run(run_id)).status
        published = ", ".join(map(repr, events)) or "none"
        raise CommandRefusedError(
            f"run {run_id} published no value under {key!r} (it {_state_words(state)}; "
            f"it published {published})"
        )

    click.echo(pretty_json(run_with_pool(url, read)))


def _state_words(state: str) -> str:
    """``succeeded``, ``was canceled``, ``is running``: a run's state after "it"."""
    if state in ("succeeded", "failed"):
        return state
    return "was canceled" if state == "canceled" else f"is {state}"


@runs.command(name="rerun")
@click.argument("run_id")
@click.option("--from-step", "from_step", required=True, help="The first step to run again.")
@click.option("--reason", default="", help="Why: recorded with the run (rerun_from).")
@URL_OPTION
def rerun_from_step(run_id: str, from_step: str, reason: str, url: str | None) -> None:
    """Execute run RUN_ID (needs_attention, failed or canceled) again from its step
    FROM_STEP.

    The steps saved before it are kept; it and every later one run again. The run keeps
    its id (its parent, children and events); a failed or canceled one gets a fresh
    attempt budget and its hooks fire again when it ends. A succeeded or active run, a
    finished child, batch member or already retried run, or a run without that step,
    is refused (exit code 1).
    """

    async def rerun(pool: Workpool) -> str:
        await pool.rerun(run_id, from_step=from_step, reason=reason)
        return f"run {run_id} queued again from step {from_step!r}"

    click.echo(run_with_pool(url, rerun))


@click.command()
@click.argument("run_id")
@JSON_OPTION
@URL_OPTION
def steps(run_id: str, as_json: bool, url: str | None) -> None:
    """List the saved steps of run RUN_ID (ctx.step.*), oldest first.

    A table of name, kind, status, attempts, start time, duration and result: the
    output or error, shortened to fit, after the child run's id for steps that start
    one ("run <id>: <output>"). --json prints {"run_id": ..., "steps": [...]} in full.
    """
    found: list[Step] = run_with_pool(url, lambda pool: pool.get_steps(run_id))
    if as_json:
        echo_json({"run_id": run_id, "steps": [jsonable(step) for step in found]})
        return
    out = console()
    if not found:
        out.print(f"run {run_id} has no saved steps")
        return
    now = datetime.now(UTC)
    grid = table(
        "name", "kind", "status", "attempts", "started", "took", "result", right=("attempts",)
    )
    grid.expand = True
    result = grid.columns[-1]
    result.ratio, result.no_wrap, result.overflow = 1, True, "ellipsis"
    result.min_width = CHILD_PREFIX if any(step.child_run_id for step in found) else 16
    for step in found:
        grid.add_row(
            Text(step.name),
            step.kind,
            status_text(step.status),
            str(step.attempts),
            short_time(step.started_at, now),
            duration(step.finished_at - step.started_at) if step.finished_at else NONE,
            _step_result(step, now),
        )
    out.print(grid)


def _step_result(step: Step, now: datetime) -> Text:
    """The output or error on one line; a child run's id first (``run <id>``), so that it
    is never cut; a waiting step's wake-up time."""
    parts: list[Text] = []
    if step.child_run_id is not None:
        parts.append(Text(f"run {step.child_run_id}"))
    if step.error is not None:
        error = f"{step.error.type}: {step.error.message}"
        parts.append(Text(shorten(error, OUTPUT_PREVIEW), style="red"))
    elif step.status == "waiting":
        parts.append(Text(f"until {short_time(step.wake_at, now)}" if step.wake_at else "waiting"))
    elif step.kind in ("run", "workflow", "event"):
        parts.append(Text(shorten(one_line_json(step.output), OUTPUT_PREVIEW)))
    return Text(": ").join(parts) if parts else Text(NONE)
