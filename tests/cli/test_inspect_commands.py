"""The inspection commands (`runs`, `steps`, `stats`, `workflows`, `queues`), invoked as a
user would, against a real backend seeded through the Python API."""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import workpool
from workpool import Cron, RunContext, RunFailedError, Workpool

WIDTH = 100


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    """The command's stdout, once it is known to have exited 0 with nothing on stderr."""
    assert (result.returncode, result.stderr) == (0, ""), result
    return result.stdout


def rows(output: str) -> list[list[str]]:
    """The body of the first table in ``output``: each line after the header rule, split
    on whitespace, up to the first blank line."""
    lines = output.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("─")) + 1
    body: list[list[str]] = []
    for line in lines[start:]:
        if not line.strip():
            break
        body.append(line.split())
    return body


@dataclass(frozen=True)
class Seeded:
    """What the seeded store holds (ids of runs, by what happened to them)."""

    url: str
    greeted: list[str]
    """Succeeded runs of greet in queue default, the child of stepped included."""
    greeted_elsewhere: str
    """A succeeded run of greet in queue risky."""
    scheduled: str
    """A run of greet in default due in an hour."""
    refused: str
    """A run of judge (queue risky) that failed, without retries."""
    accepted: str
    """A run of judge (queue risky) that succeeded."""
    stepped: str
    """A run of stepper (default) with two steps and a child run of greet."""
    child: str


@pytest.fixture
async def seeded(backend_url: str) -> Seeded:
    """A store with finished, failed, scheduled and held runs, steps and a registry."""
    pool = Workpool(backend_url, app="cli-tests")
    pool.queue("risky", max_parallelism=2)

    @pool.workflow(max_concurrency=None)
    async def greet(ctx: RunContext, name: str) -> str:
        return f"hello {name}"

    @pool.workflow(queue="risky", max_concurrency=None, retries=False)
    async def judge(ctx: RunContext, claim: dict[str, Any]) -> str:
        await ctx.set_progress({"checked": claim["who"]})
        if not claim["ok"]:
            raise ValueError(f"refused: {claim['who']}")
        return "accepted"

    @pool.workflow(max_concurrency=None)
    async def stepper(ctx: RunContext, n: int) -> int:
        items = await ctx.step.run("fetch", lambda: list(range(n)))
        doubled: int = await ctx.step.run("double", lambda: 2 * len(items))
        await ctx.step.run_workflow("greet", greet, "child")
        return doubled

    @pool.workflow(queue="reports", cron=[Cron("0 3 1 1 *")])
    async def nightly(ctx: RunContext, _: None) -> None: ...

    try:
        greetings = [await greet.run(name) for name in ("ann", "bob", "cy")]
        elsewhere = await greet.run("dee", queue="risky")
        refused = await judge.run({"ok": False, "who": "mallory"}, timeout=90, priority=-5)
        accepted = await judge.run({"ok": True, "who": "alice"})
        stepped = await stepper.run(3)
        async with pool.worker(queues=["default", "risky"], concurrency=8):
            for handle in [*greetings, elsewhere, refused, accepted, stepped]:
                with contextlib.suppress(RunFailedError):
                    await handle.result(timeout=10)
        scheduled = await greet.run("later", run_after=timedelta(hours=1))
        await nightly.run(None)  # held: its queue is not served, and paused
        await pool.pause("reports")
        (child,) = (await pool.get_run(stepped.id)).children
    finally:
        await pool.aclose()
    return Seeded(
        url=backend_url,
        greeted=[handle.id for handle in greetings] + [child],
        greeted_elsewhere=elsewhere.id,
        scheduled=scheduled.id,
        refused=refused.id,
        accepted=accepted.id,
        stepped=stepped.id,
        child=child,
    )


def test_runs_list_filters_and_pages_newest_first(seeded: Seeded) -> None:
    filters = ["--status", "succeeded", "--workflow", "greet", "--queue", "default"]
    first = succeeded(workpool(seeded.url, "runs", "list", *filters, "--limit", "3"))
    assert all(len(line) <= WIDTH for line in first.splitlines()[:-1])  # all but the command
    assert first.splitlines()[0].split() == [
        "id",
        "workflow",
        "queue",
        "status",
        "attempts",
        "created",
        "took/age",
    ]
    newest_first = sorted(seeded.greeted, reverse=True)
    assert [row[:5] for row in rows(first)] == [
        [run_id, "greet", "default", "succeeded", "1"] for run_id in newest_first[:3]
    ]
    prefix = "next page: "
    last_line = first.splitlines()[-1]
    assert last_line.startswith(prefix)
    command = shlex.split(last_line.removeprefix(prefix))
    assert command[:3] == ["workpool", "runs", "list"]
    assert command[3:-2] == [*filters, "--limit", "3"]
    assert command[-2] == "--cursor"

    second = json.loads(succeeded(workpool(seeded.url, *command[1:], "--json")))
    assert [run["id"] for run in second["runs"]] == newest_first[3:]
    assert second["cursor"] is None
    last = second["runs"][0]
    assert (last["workflow"], last["status"], last["input"]) == ("greet", "succeeded", "ann")
    assert last["output"] == "hello ann"
    assert last["created_at"].endswith("+00:00")


def test_show_retry_and_cancel_a_run(seeded: Seeded) -> None:
    retried = succeeded(workpool(seeded.url, "runs", "retry", seeded.refused)).strip()
    assert len(retried) == 32
    assert retried != seeded.refused

    shown = succeeded(workpool(seeded.url, "runs", "show", seeded.refused))
    fields = {line[:17].strip(): line[17:].strip() for line in shown.split("\n\n")[0].splitlines()}
    assert fields["run"] == seeded.refused
    assert (fields["workflow"], fields["queue"], fields["status"]) == ("judge", "risky", "failed")
    assert fields["priority"] == "-5"
    assert (fields["retried as"], fields["retry of"], fields["parent"]) == (retried, "-", "-")
    assert "last execution took" in fields["finished"]
    assert fields["attempts"] == "1 (1 executions, resumes included)"
    assert fields["ran"].endswith(" in all")
    assert fields["timeout"] == "1m30s per attempt"
    assert '\ninput\n  {\n    "ok": false,\n    "who": "mallory"\n  }\n' in shown
    assert "\nerror\n  ValueError: refused: mallory\n" in shown
    assert '\nprogress\n  {\n    "checked": "mallory"\n  }\n' in shown
    assert "  Traceback (most recent call last):\n" in shown
    assert "\noutput\n" not in shown  # a failed run has none

    refused = workpool(seeded.url, "runs", "retry", seeded.accepted)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"workpool: run {seeded.accepted} succeeded: only a failed or canceled run can be retried\n"
    )

    canceled = workpool(seeded.url, "runs", "cancel", retried, "--reason", "not today")
    assert succeeded(canceled) == f"run {retried}: canceled\n"
    pool = Workpool(seeded.url)
    try:
        run = pool.get_run_sync(retried)
    finally:
        pool.close()
    assert (run.status, run.cancel_reason, run.retry_of) == (
        "canceled",
        "not today",
        seeded.refused,
    )


def test_steps_of_a_run(seeded: Seeded) -> None:
    output = succeeded(workpool(seeded.url, "steps", seeded.stepped))
    assert all(len(line) <= WIDTH for line in output.splitlines())
    steps = rows(output)
    assert [row[:4] for row in steps] == [
        ["fetch", "run", "succeeded", "1"],
        ["double", "run", "succeeded", "1"],
        ["greet", "workflow", "succeeded", "1"],
    ]
    assert steps[0][6:] == ["[0,", "1,", "2]"]
    assert steps[1][6:] == ["6"]
    assert steps[2][6:8] == ["run", f"{seeded.child}:"]  # the output is cut to fit
    assert steps[2][8].startswith('"hel')


def test_stats_of_a_queue(seeded: Seeded) -> None:
    output = succeeded(workpool(seeded.url, "stats", "--window", "1h", "--queue", "risky"))
    assert all(len(line) <= WIDTH for line in output.splitlines())
    lines = output.splitlines()
    assert lines[:4] == [
        "queue risky, last 1h:",
        "  now: 0 pending (0 queued, 0 scheduled), 0 running, 0 suspended",
        "  ended: 3 executions, 3 runs ended (2 succeeded, 1 failed, 0 canceled), 0 retried",
        lines[3],  # the average run time varies
    ]
    assert lines[3].startswith("  error rate 33.3%, permanent failure rate 33.3%, average")
    by_queue = rows(output)
    assert [row[:8] for row in by_queue] == [
        ["risky", "0", "0", "0", "-", "3", "33.3%", "33.3%"],
    ]
    by_workflow = rows(output.split("\n\n", 2)[2])
    assert [row[:7] for row in by_workflow] == [
        ["greet", "0", "0", "0", "1", "0.0%", "0.0%"],
        ["judge", "0", "0", "0", "2", "50.0%", "50.0%"],
    ]


def test_workflows_and_queues(seeded: Seeded) -> None:
    registry = succeeded(workpool(seeded.url, "workflows"))
    assert all(len(line) <= WIDTH for line in registry.splitlines())
    assert [row[:4] for row in rows(registry)] == [
        ["greet", "cli-tests", "default", "no"],
        ["judge", "cli-tests", "risky", "no"],
        ["nightly", "cli-tests", "reports", "1"],
        ["stepper", "cli-tests", "default", "no"],
    ]
    nightly = next(row for row in rows(registry) if row[0] == "nightly")
    assert nightly[4:11] == ["no", "retry", "0", "3", "1", "1", "*"]

    listing = succeeded(workpool(seeded.url, "queues"))
    assert rows(listing) == [  # the worker stopped: no live worker serves what waits
        ["default", "1", "1", "0", "0", "no", "limit", "no"],
        ["reports", "1", "1", "0", "0", "no", "limit", "paused"],
        ["risky", "0", "0", "0", "0", "2", "no"],
    ]
    assert "waiting: no worker defines workflow 'nightly'" in listing
    # A subcommand takes the group's --url over $WORKPOOL_URL (here unreachable).
    shown = workpool("redis://127.0.0.1:1/0", "queues", "--url", seeded.url, "show", "risky")
    assert succeeded(shown) == "queue risky: max_parallelism=2, running\n"


@pytest.mark.parametrize(
    "command", [["runs", "list"], ["stats"], ["queues"]], ids=["runs", "stats", "queues"]
)
def test_an_unreachable_backend_exits_2_with_one_line(command: list[str]) -> None:
    result = workpool("redis://127.0.0.1:1/0", *command)
    assert (result.returncode, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("workpool: ")


def test_an_unknown_run_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()  # an empty SQLite database: a store with no runs
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "runs", "show", "nope")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "workpool: no run with id 'nope' exists\n"


def test_a_bad_window_is_a_usage_error(tmp_path: Path) -> None:
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "stats", "--window", "2d")
    assert (result.returncode, result.stdout) == (2, "")
    assert "Invalid value for '--window': '2d' is not a duration such as 30s" in result.stderr
