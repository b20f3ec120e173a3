"""A shared limit under real worker processes, on every backend: three workflows in two
queues under one limit of 3, served by two workers with more slots than that; then a
worker killed (SIGKILL) or stopped (SIGSTOP) past its lease while it holds the limit's
places."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.integration import shared_limit_app
from tests.integration.processes import Workers, stopped
from tests.polling import wait_until
from workpool import RunHandle, Workpool

APP = "tests.integration.shared_limit_app:pool"
SERVE = ("--queues", "crm,billing", "--concurrency", "4")
TWO_SLOTS = ("--queues", "crm,billing", "--concurrency", "2")
QUICK = ("--lease-seconds", "1", "--renew-seconds", "0.2")


def most_in_flight(workers: Workers, pids: Sequence[int] | None = None) -> int:
    """The most runs between their start and end lines at once, in the log's order
    (a handler writes its end line before its finish frees the place)."""
    lines = [
        line.split()
        for line in workers.log_path.read_text().splitlines()
        if line.startswith(("start ", "end "))
    ]
    running = most = 0
    for kind, _, pid in lines:
        if pids is None or int(pid) in pids:
            running += 1 if kind == "start" else -1
            most = max(most, running)
    return most


async def enqueue(pool: Workpool, seconds: float, each: int) -> list[RunHandle[None]]:
    workflows = shared_limit_app.define(pool)
    return await pool.enqueue_many(
        [
            workflows[name].prepare(seconds)
            for _ in range(each)
            for name in ("sync", "refund", "invoice")
        ]
    )


async def idle(pool: Workpool) -> bool:
    (usage,) = await pool.limit_usage()
    return (usage.in_use, usage.waiting) == (0, 0)


@pytest.mark.timeout(120)
async def test_a_shared_limit_holds_across_two_worker_processes(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url, app="shared-limits")
    try:
        # Two slots each: the limit of 3 is reached only by both workers at once, and a
        # run waiting at it would keep the unlimited run out if it held a slot.
        workers.start(*TWO_SLOTS, app=APP)
        workers.start(*TWO_SLOTS, app=APP)

        async def both_live() -> bool:
            return len(await pool.live_workers()) == 2

        await wait_until(both_live, limit=30)
        handles = await enqueue(pool, 0.2, each=6)
        (free,) = await pool.enqueue_many([pool.workflows["unlimited"].prepare(0)])
        await free.result(timeout=60)
        for handle in handles:
            await handle.result(timeout=60)
        assert most_in_flight(workers) == shared_limit_app.LIMIT, workers.errors()
        starts = [line[0] for line in workers.lines("start")]
        assert sorted(starts) == sorted(handle.id for handle in handles)
        kinds = [line.split()[0] for line in workers.log_path.read_text().splitlines()]
        assert kinds.index("free") < len(kinds) - 1 - kinds[::-1].index("start")
        (usage,) = await pool.limit_usage()
        assert usage.workflows == ("invoice", "refund", "sync")
        assert await idle(pool)
    finally:
        await pool.aclose()
        pool.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP])
async def test_a_lost_worker_gives_back_its_places_when_its_lease_expires(
    workers: Workers,
    backend_url: str,
    fault: signal.Signals,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = Workpool(backend_url, app="shared-limits")
    stderr = tmp_path / "lost.log"
    try:
        handles = await enqueue(pool, 1.0, each=3)
        if fault == signal.SIGSTOP:  # its third handler stops it (shared_limit_app)
            monkeypatch.setenv("WORKPOOL_TEST_FREEZE", str(tmp_path / "frozen"))
        lost = workers.start(*SERVE, *QUICK, app=APP, stderr=stderr)
        await wait_until(lambda: len(workers.lines("start")) >= shared_limit_app.LIMIT)
        if fault == signal.SIGSTOP:
            await wait_until(lambda: stopped(lost.pid))
        else:
            lost.send_signal(fault)
        rescuer = workers.start(*SERVE, *QUICK, app=APP)
        try:
            for handle in handles:
                await handle.result(timeout=60)
        finally:
            lost.send_signal(signal.SIGCONT)
        assert most_in_flight(workers, [rescuer.pid]) == shared_limit_app.LIMIT
        done = {line[0] for line in workers.lines("end") if int(line[1]) == rescuer.pid}
        assert done == {handle.id for handle in handles}, workers.errors()
        if fault == signal.SIGSTOP:  # resumed, it learns its leases are gone
            await wait_until(lambda: "lease not renewed in time" in stderr.read_text(), limit=30)
        for handle in handles:
            assert (await pool.get_run(handle.id)).status == "succeeded"
        assert await idle(pool)
    finally:
        await pool.aclose()
        pool.close()
