"""Faults of everyday operation, with real worker processes on both backends: a rolling
deploy, two apps on one backend, a poison run among innocent ones, a worker stopped
(SIGSTOP) past its lease and resumed."""

from __future__ import annotations

import asyncio
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration import process_app
from tests.integration.conftest import fast_worker
from tests.integration.processes import Workers, stopped
from tests.polling import wait_until as wait_for
from workpool import RunContext, UnknownWorkflowError, Workpool
from workpool.backends import open_backend

QUICK_LEASE = ("--lease-seconds", "1", "--renew-seconds", "0.2")


@pytest.mark.slow
async def test_a_rolling_deploy_never_fails_a_run_of_a_new_workflow(
    workers: Workers, backend_url: str
) -> None:
    # The new code (it defines "newcomer") enqueues while only old workers run.
    client = Workpool(backend_url, app="tests")

    @client.workflow(name="newcomer", max_concurrency=None)
    async def newcomer(ctx: RunContext, value: int) -> int:
        raise AssertionError("runs in a worker")

    workers.start(*QUICK_LEASE)  # the old version
    handle = await newcomer.run(21)
    (later,) = await client.enqueue_many([process_app.chore.prepare(1)])
    await later.result(timeout=30)  # the old worker claimed past the new run

    waiting = await client.get_run(handle.id)
    assert (waiting.status, waiting.attempts) == ("queued", 0)
    assert (await client.stats()).total.unserved == 1
    assert await client.waiting_reason(waiting) is not None
    workers.start(*QUICK_LEASE, app="tests.integration.process_app_v2:pool")
    assert await handle.result(timeout=30) == 42
    assert (await client.get_run(handle.id)).attempts == 1
    await client.aclose()


async def test_two_apps_on_one_backend_and_queue_never_take_each_others_runs(
    backend_url: str,
) -> None:
    shop, mail = Workpool(backend_url, app="shop"), Workpool(backend_url, app="mail")

    @shop.workflow(max_concurrency=None)
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    @mail.workflow(max_concurrency=None)
    async def send(ctx: RunContext, to: str) -> str:
        return f"sent to {to}"

    letter = await send.run("ada")
    async with fast_worker(shop):
        payment = await charge.run(5)
        assert await payment.result(timeout=10) == 5
        stats = await shop.stats()
        waiting = await mail.get_run(letter.id)
        reason = await mail.waiting_reason(waiting)
    assert (waiting.status, waiting.attempts) == ("queued", 0)
    assert [(item.workflow, item.pending) for item in stats.unserved] == [("send", 1)]
    assert (
        reason == "waiting: no worker defines workflow 'send' on queue 'default' (1 live workers)"
    )
    async with fast_worker(mail):
        assert await letter.result(timeout=10) == "sent to ada"
    for pool in (shop, mail):
        await pool.aclose()


async def test_a_typo_in_run_by_name_is_an_error_once_the_registry_knows_the_apps(
    pool: Workpool,
) -> None:
    @pool.workflow()
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    other_codebase = Workpool(pool.url, app="frontend")
    await other_codebase.run_by_name("chrage", 1)  # an empty registry cannot tell: stored
    async with fast_worker(pool):  # its start registers the app's workflows
        pass
    with pytest.raises(UnknownWorkflowError, match="did you mean 'charge'"):
        await other_codebase.run_by_name("chrage", 1)
    handle = await other_codebase.run_by_name("charge", 2)
    assert (await other_codebase.get_run(handle.id)).workflow == "charge"
    await other_codebase.aclose()


async def test_unserved_runs_fail_after_the_configured_wait(backend_url: str) -> None:
    pool = Workpool(backend_url, app="shop", fail_unserved_after=timedelta(milliseconds=200))

    @pool.workflow(max_concurrency=None)
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    lost = await pool.run_by_name("refund", 1)  # nobody defines it (empty registry)
    worker = pool.worker(housekeeping_every=timedelta(milliseconds=100))
    async with worker:
        deadline = time.monotonic() + 10
        while not (await pool.get_run(lost.id)).finished:
            assert time.monotonic() < deadline, "the unserved run was not failed"
            await asyncio.sleep(0.05)
    run = await pool.get_run(lost.id)
    assert (run.status, run.attempts) == ("failed", 0)
    assert run.error is not None
    assert run.error.type == "UnservedWorkflowError"
    assert "'refund'" in run.error.message
    await pool.aclose()


@pytest.mark.slow
async def test_a_poison_run_fails_alone_and_the_runs_beside_it_succeed(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url)
    innocent = await pool.enqueue_many([process_app.steady.prepare(0.4) for _ in range(5)])
    (poison,) = await pool.enqueue_many([process_app.poison.prepare(0)])
    runs = [*innocent, poison]

    async def all_ended() -> bool:
        return all([(await pool.get_run(handle.id)).finished for handle in runs])

    deadline = time.monotonic() + 90
    while not await all_ended():  # a worker each time the last one died
        process = workers.start("--concurrency", "10", *QUICK_LEASE)
        while process.poll() is None and not await all_ended():
            assert time.monotonic() < deadline, "the runs did not all end"
            await asyncio.sleep(0.05)
    first_deaths = [row for row in workers.lines("start") if row[0] == poison.id]
    assert len(first_deaths) == 3
    for handle in innocent:
        run = await pool.get_run(handle.id)
        assert run.status == "succeeded", run
    lost = await pool.get_run(poison.id)
    assert lost.status == "failed"
    assert lost.error is not None
    assert lost.error.type == "WorkerLostError"
    assert len({row[0] for row in workers.lines("start") if row[0] != poison.id}) == 5
    await pool.aclose()


@pytest.mark.slow
async def test_a_worker_stopped_past_its_lease_does_nothing_more_for_the_run_when_resumed(
    workers: Workers, backend_url: str, tmp_path: Path
) -> None:
    pool = Workpool(backend_url)
    stderr = tmp_path / "stalled.log"
    stalled = workers.start(*QUICK_LEASE, stderr=stderr)
    (handle,) = await pool.enqueue_many([process_app.paced.prepare(1.0)])
    await wait_for(lambda: [row for row in workers.lines("step") if row[1] == "one"])

    async def step_one_saved() -> bool:  # its function logs before the step is saved
        return [step.name for step in await pool.get_steps(handle.id)] == ["one"]

    await wait_for(step_one_saved)
    stalled.send_signal(signal.SIGSTOP)  # between its steps, for longer than its lease
    try:
        rescuer = workers.start(*QUICK_LEASE)
        assert await handle.result(timeout=30) == "done"
    finally:
        stalled.send_signal(signal.SIGCONT)
    await wait_for(lambda: "lease not renewed in time" in stderr.read_text())
    steps = [row for row in workers.lines("step") if row[0] == handle.id]
    assert [(name, pid) for _, name, pid, _ in steps] == [
        ("one", str(stalled.pid)),
        ("two", str(rescuer.pid)),
    ]
    fences = [int(fence) for *_, fence in steps]
    assert fences[1] > fences[0]  # the rescuer's claim has the larger fencing token
    assert stalled.poll() is None  # it lives on and serves other runs
    (after,) = await pool.enqueue_many([process_app.chore.prepare(1)])
    rescuer.kill()
    assert await after.result(timeout=30) == 1
    await pool.aclose()


@pytest.mark.slow
async def test_a_worker_stopped_between_a_claim_and_the_start_starts_nothing_when_resumed(
    workers: Workers, backend_url: str, tmp_path: Path
) -> None:
    pool = Workpool(backend_url)
    marker = str(tmp_path / "frozen")
    _, handle = await pool.enqueue_many(
        [process_app.freezer.prepare(marker, priority=10), process_app.steady.prepare(0.01)]
    )
    stderr = tmp_path / "stalled.log"
    # One claim takes both; the freezer starts first and stops its process (SIGSTOP)
    # before the other run's handler starts.
    stalled = workers.start(*QUICK_LEASE, stderr=stderr)
    try:
        await wait_for(lambda: stopped(stalled.pid))
        assert (await pool.get_run(handle.id)).status == "running"
        rescuer = workers.start(*QUICK_LEASE)
        assert await handle.result(timeout=30) == 0.01
    finally:
        stalled.send_signal(signal.SIGCONT)

    def starts() -> list[str]:
        return [pid for run_id, _, pid in workers.lines("start") if run_id == handle.id]

    await wait_for(lambda: "did not start its handler" in stderr.read_text() or len(starts()) > 1)
    assert starts() == [str(rescuer.pid)]
    assert stalled.poll() is None  # it lives on
    await pool.aclose()


async def test_a_busy_worker_makes_room_for_a_run_that_waits_to_run_alone(
    pool: Workpool, backend_url: str
) -> None:
    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    suspect = await chore.run(0.01)
    thief = await open_backend(backend_url)  # a worker that claims it, then dies
    try:
        await thief.claim(["default"], "doomed", 1, 0.5, 3, time.time(), alone=True)
    finally:
        await thief.close()
    backlog = await pool.enqueue_many([chore.prepare(0.2) for _ in range(60)])
    async with fast_worker(pool, concurrency=2):  # never idle: 6 s of backlog
        assert await suspect.result(timeout=20) == 0.01
        left = [(await pool.get_run(handle.id)).status for handle in backlog]
    assert (await pool.get_run(suspect.id)).executions == 2
    assert left.count("queued") > 0  # it ran before the backlog was done
