"""The `workpool queues` command, invoked as a user would, against a real backend."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from tests.cli.helpers import workpool
from workpool import RunContext, Workpool


def queues(url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return workpool(url, "queues", *arguments)


async def a_run_on(url: str, queue: str) -> None:
    """Enqueue one run on ``queue`` (which creates the store, on SQLite)."""
    pool = Workpool(url)

    @pool.workflow(queue=queue)
    async def send(ctx: RunContext, to: str) -> None: ...

    await send.run("someone@example.com")
    await pool.aclose()


async def test_pause_resume_and_limit_a_queue(backend_url: str) -> None:
    await a_run_on(backend_url, "emails")
    assert queues(backend_url, "show", "emails").stdout == (
        "queue emails: max_parallelism=no limit, running\n"
    )
    assert queues(backend_url, "set", "emails", "10").stdout == (
        "queue emails: max_parallelism=10, running\n"
    )
    assert queues(backend_url, "pause", "emails").stdout == (
        "queue emails: max_parallelism=10, paused\n"
    )
    assert queues(backend_url, "resume", "emails").stdout == (
        "queue emails: max_parallelism=10, running\n"
    )
    assert queues(backend_url, "set", "emails", "none").stdout == (
        "queue emails: max_parallelism=no limit, running\n"
    )


def test_a_bad_limit_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    result = queues(f"sqlite:///{tmp_path}/q.db", "set", "emails", "many")
    assert result.returncode == 2
    assert "must be a whole number from 0 to 9007199254740991, or 'none'" in result.stderr


def test_an_unreachable_backend_exits_2_with_one_line() -> None:
    result = queues("redis://127.0.0.1:1/0", "show", "emails")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("workpool: ")


UNKNOWN = "workpool: unknown queue 'nosuchqueue': it has had no runs and no settings"


async def test_an_unknown_queue_is_refused_and_left_alone(backend_url: str) -> None:
    await a_run_on(backend_url, "emails")
    for command in (["show"], ["pause"], ["resume"], ["set", "nosuchqueue", "3"]):
        arguments = command if command[0] == "set" else [*command, "nosuchqueue"]
        result = queues(backend_url, *arguments)
        assert (result.returncode, result.stdout) == (1, ""), (command, result)
        assert result.stderr.startswith(UNKNOWN), result.stderr
        assert "known queues: emails" in result.stderr
        assert "--create" in result.stderr or command[0] in ("show", "resume")
        assert len(result.stderr.splitlines()) == 1
    pool = Workpool(backend_url)
    settings = await pool.get_queue("nosuchqueue")
    await pool.aclose()
    assert (settings.paused, settings.max_parallelism) == (False, None)


async def test_create_pauses_or_limits_a_queue_before_its_first_run(backend_url: str) -> None:
    await a_run_on(backend_url, "emails")  # the store exists
    paused = queues(backend_url, "pause", "newsletters", "--create")
    assert (paused.returncode, paused.stderr) == (0, ""), paused
    assert paused.stdout == "queue newsletters: max_parallelism=no limit, paused\n"
    shown = queues(backend_url, "show", "newsletters")
    assert shown.stdout == "queue newsletters: max_parallelism=no limit, paused\n"
    resumed = queues(backend_url, "resume", "newsletters")
    assert resumed.stdout == "queue newsletters: max_parallelism=no limit, running\n"
    limited = queues(backend_url, "set", "reports", "2", "--create")
    assert limited.stdout == "queue reports: max_parallelism=2, running\n", limited


async def test_a_queue_a_registered_workflow_or_a_live_worker_names_is_known(
    backend_url: str,
) -> None:
    pool = Workpool(backend_url, app="mailer")

    @pool.workflow(queue="mail")
    async def send(ctx: RunContext, to: str) -> None: ...

    async with pool.worker(queues=["mail", "bulk"]):
        for queue in ("mail", "bulk"):  # no run yet: the registry, the worker's queues
            result = await asyncio.to_thread(queues, backend_url, "pause", queue)
            assert (result.returncode, result.stderr) == (0, ""), result
            assert result.stdout == f"queue {queue}: max_parallelism=no limit, paused\n"
            await pool.resume(queue)
    await pool.aclose()
