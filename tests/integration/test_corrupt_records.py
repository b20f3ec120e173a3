"""A corrupt run record does not stop real worker processes: the runs queued behind it
are served within a deadline, the bad run is logged once (by id, naming the field) and
reading it raises CorruptRecordError (issue 23, defect 3)."""

from __future__ import annotations

import re
import time

import pytest

from tests.conformance.corrupting import corrupt
from tests.integration import process_app
from tests.integration.processes import Workers
from tests.polling import wait_until
from workpool import CorruptRecordError, Workpool

SERVED_WITHIN = 60.0
"""Seconds for 20 small runs behind the bad one on a loaded machine (before the fix,
none was served at all on Redis, nor on SQLite for these fields)."""


@pytest.mark.parametrize(("field", "value"), [("attempts", "many"), ("created_at", "noon")])
async def test_worker_processes_serve_the_runs_queued_behind_a_corrupt_one(
    workers: Workers, backend_url: str, field: str, value: str
) -> None:
    pool = Workpool(backend_url)
    (bad,) = await pool.enqueue_many([process_app.add_one.prepare(0)])
    await corrupt(backend_url, bad.id, field, value)
    behind = await pool.enqueue_many([process_app.add_one.prepare(n) for n in range(1, 21)])
    started = time.monotonic()
    workers.start("--processes", "2", "--concurrency", "4")

    for number, handle in enumerate(behind, start=1):
        left = SERVED_WITHIN - (time.monotonic() - started)
        assert await handle.result(timeout=max(left, 0.1)) == number + 1
    reported = f"run {bad.id} set aside: its stored record is corrupt"
    await wait_until(lambda: reported in workers.errors())

    with pytest.raises(CorruptRecordError, match=f"{bad.id}.*'{field}'"):
        await pool.get_run(bad.id)
    assert workers.errors().count(reported) == 1, workers.errors()
    assert re.search(f"{re.escape(reported)} \\(.*'{field}'", workers.errors())
    await pool.aclose()
