"""A whole-run deadline under a real worker process, on every backend: a run suspended
on a durable sleep past its deadline, and a run retrying past it, each end failed with
DeadlineExceededError, their on_failure hook run once."""

from __future__ import annotations

import pytest

from tests.integration import deadline_app
from tests.integration.processes import Workers
from tests.polling import wait_until
from workpool import DeadlineExceededError, RunFailedError, Workpool

APP = "tests.integration.deadline_app:pool"
QUICK = ("--lease-seconds", "2", "--renew-seconds", "0.2")


@pytest.mark.timeout(120)
async def test_runs_past_their_deadline_fail_in_a_worker_process(
    workers: Workers, backend_url: str
) -> None:
    pool = Workpool(backend_url, app="deadlines")
    try:
        sleeping_workflow, stubborn_workflow = deadline_app.define(pool)
        workers.start(*QUICK, app=APP)
        # Serving before the runs exist: a worker slow to start on a loaded machine
        # would find the sleeper past its deadline while still queued.
        await wait_until(lambda: live(pool), limit=60)
        sleeper = await sleeping_workflow.run(None)
        stubborn = await stubborn_workflow.run(None)

        for handle in (sleeper, stubborn):
            with pytest.raises(DeadlineExceededError) as failure:
                await handle.result(timeout=60)
            assert isinstance(failure.value, RunFailedError)
        sleeping = await pool.get_run(sleeper.id)
        assert sleeping.deadline is not None
        assert sleeping.error is not None
        assert "while suspended" in sleeping.error.message
        retried = await pool.get_run(stubborn.id)
        assert retried.attempts >= 2, retried
        assert retried.finished_at is not None
        assert retried.deadline is not None
        assert retried.finished_at <= retried.deadline + deadline_app.DEADLINE
        await wait_until(lambda: len(workers.lines("failed")) >= 2, limit=30)
        failed = sorted(row[0] for row in workers.lines("failed"))
        assert failed == sorted([sleeper.id, stubborn.id]), workers.errors()
        assert len(workers.lines("sleeper")) == 1  # it never woke
    finally:
        await pool.aclose()
        pool.close()


async def live(pool: Workpool) -> bool:
    return bool(await pool.live_workers())
