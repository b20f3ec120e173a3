"""Real worker processes: many at once, killed, poisoned, and shut down gracefully."""

from __future__ import annotations

import asyncio
import collections
import signal
from pathlib import Path

import pytest

from tests.integration import process_app
from tests.integration.processes import Workers
from tests.polling import wait_until
from workpool import RunHandle, Workpool


async def _live(pool: Workpool, count: int) -> bool:
    return len(await pool.live_workers()) >= count


async def enqueue_chores(pool: Workpool, count: int) -> list[RunHandle[int]]:
    handles: list[RunHandle[int]] = []
    for start in range(0, count, 500):
        batch = [
            process_app.chore.prepare(n, on_complete="completed", context=n)
            for n in range(start, min(start + 500, count))
        ]
        handles.extend(await pool.enqueue_many(batch))
    return handles


def expected_outcome(number: int) -> tuple[str, int]:
    if number % 25 == 0:
        return "failed", 3
    if number % 10 == 0:
        return "succeeded", 2
    return "succeeded", 1


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_three_workers_two_thousand_runs(workers: Workers, backend_url: str) -> None:
    pool = Workpool(backend_url)
    runs = 2000
    for _ in range(3):
        workers.start("--concurrency", "20", "--lease-seconds", "5", "--renew-seconds", "0.5")
    # Every process must be up before the runs (they drain in seconds): each says so
    # with its heartbeat as it starts.
    await wait_until(lambda: _live(pool, 3))
    handles = await enqueue_chores(pool, runs)
    for _ in range(1200):
        if len(workers.lines("hook")) >= runs:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # a duplicate hook, if any, would land now
    hooks = collections.Counter(row[0] for row in workers.lines("hook"))
    assert len(hooks) == runs
    assert set(hooks.values()) == {1}, "an on_complete ran more than once"
    executions: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for run_id, attempt, outcome, _pid in workers.lines("run"):
        executions[run_id].append((int(attempt), outcome))
    pids = {row[3] for row in workers.lines("run")}
    # Every process takes part: on SQLite, writers queue for the lock in the kernel
    # (writer_lock.py) instead of sleeping in SQLite's busy handler and losing races.
    assert len(pids) == 3, "workers took part"
    for number, handle in enumerate(handles):
        run = await pool.get_run(handle.id)
        status, attempts = expected_outcome(number)
        assert (run.status, run.attempts) == (status, attempts), number
        outcomes = [outcome for _, outcome in sorted(executions[handle.id])]
        assert len(outcomes) == attempts
        assert "success" not in outcomes[:-1], "a run was executed after it succeeded"
        hook_run = await pool.get_run(f"{handle.id}-0")
        assert hook_run.status == "succeeded"
        assert hook_run.input["result"]["status"] == status
        assert hook_run.input["context"] == number
    await pool.aclose()


@pytest.mark.slow
async def test_killed_worker_run_is_completed_by_another(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    first = workers.start("--lease-seconds", "1", "--renew-seconds", "0.2")
    (handle,) = await pool.enqueue_many([process_app.sleepy.prepare(0.5)])
    await workers.wait_for_line("start", handle.id)
    first.send_signal(signal.SIGKILL)
    first.wait()
    workers.start("--lease-seconds", "1", "--renew-seconds", "0.2")
    assert await handle.result(timeout=30) == 0.5
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts) == ("succeeded", 2)
    assert [row[1] for row in workers.lines("done") if row[0] == handle.id] == ["2"]
    await pool.aclose()


@pytest.mark.slow
async def test_run_that_kills_every_worker_ends_failed(workers: Workers, backend_url: str) -> None:
    pool = Workpool(backend_url)
    (handle,) = await pool.enqueue_many([process_app.poison.prepare(0)])
    for _ in range(6):
        process = workers.start("--lease-seconds", "1", "--renew-seconds", "0.2")
        for _ in range(400):
            if process.poll() is not None or (await pool.get_run(handle.id)).finished:
                break
            await asyncio.sleep(0.05)
        if (await pool.get_run(handle.id)).finished:
            break
    run = await pool.get_run(handle.id)
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.type == "WorkerLostError"
    assert "3" in run.error.message
    assert len(workers.lines("start")) == 3
    await pool.aclose()


@pytest.mark.slow
async def test_sigterm_finishes_short_runs_and_hands_back_long_ones_without_an_attempt(
    workers: Workers, backend_url: str, tmp_path: Path
) -> None:
    pool = Workpool(backend_url)
    log = tmp_path / "first.log"
    options = ("--shutdown-grace", "1", "--lease-seconds", "30")
    first = workers.start(*options, "--log-level", "INFO", stderr=log)
    short, long = await pool.enqueue_many(
        [process_app.sleepy.prepare(0.3), process_app.slow_once.prepare(str(tmp_path / "once"))]
    )
    await workers.wait_for_line("start", short.id)
    await workers.wait_for_line("start", long.id)
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=20) == 0
    assert (await pool.get_run(short.id)).status == "succeeded"
    handed_back = await pool.get_run(long.id)
    assert (handed_back.status, handed_back.attempts) == ("queued", 1)
    text = log.read_text()
    assert f"run {long.id} handed back" in text
    assert f"run {long.id} abandoned" not in text  # (its thread is, and says so)
    workers.start(*options)
    # One attempt allowed, and one used: the hand-back was not an attempt.
    assert await long.result(timeout=30) == 1
    run = await pool.get_run(long.id)
    assert (run.status, run.attempts, run.executions) == ("succeeded", 1, 2)
    assert [attempt for run_id, attempt, _ in workers.lines("start") if run_id == long.id] == [
        "1",
        "1",
    ]
    await pool.aclose()


@pytest.mark.slow
async def test_a_crash_at_step_nine_replays_without_redoing_steps_one_to_eight(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    first = workers.start("--lease-seconds", "1", "--renew-seconds", "0.2")
    (handle,) = await pool.enqueue_many([process_app.ten_steps.prepare(9)])
    first.wait(timeout=30)  # killed by step 9
    workers.start("--lease-seconds", "1", "--renew-seconds", "0.2")
    assert await handle.result(timeout=30) == 55
    executions = collections.Counter(row[1] for row in workers.lines("step") if row[0] == handle.id)
    assert executions == {str(index): 2 if index == 9 else 1 for index in range(1, 11)}
    await pool.aclose()


@pytest.mark.slow
async def test_a_sleep_survives_the_death_of_the_worker_that_started_it(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    first = workers.start()
    (handle,) = await pool.enqueue_many([process_app.napper.prepare(2.0)])
    await workers.wait_for_line("before", handle.id)
    for _ in range(200):  # kill it once the run waits in the backend, not in the worker
        if (await pool.get_run(handle.id)).status == "suspended":
            break
        await asyncio.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait()
    workers.start()
    assert await handle.result(timeout=30) == "rested"
    assert len(workers.lines("before")) == 1
    [after] = workers.lines("after")
    assert after[1] != str(first.pid)
    steps = await pool.get_steps(handle.id)
    assert [(step.name, step.status) for step in steps] == [
        ("before", "succeeded"),
        ("nap", "succeeded"),
        ("after", "succeeded"),
    ]
    assert steps[2].started_at >= steps[1].wake_at  # type: ignore[operator]
    await pool.aclose()


@pytest.mark.slow
async def test_max_concurrency_holds_across_four_worker_processes(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    for _ in range(4):
        workers.start("--concurrency", "10")
    handles = await pool.enqueue_many([process_app.limited.prepare(n) for n in range(500)])
    for handle in handles:
        await handle.result(timeout=60)
    seen = [int(row[1]) for row in workers.lines("concurrent")]
    assert len(seen) == 500
    assert max(seen) == 3  # never more, and reached
    await pool.aclose()
