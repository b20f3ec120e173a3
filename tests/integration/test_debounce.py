"""End to end: debounced runs through the pool and a worker; bad options refused."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RunContext, Workflow, Workpool
from workpool.clock import ManualClock


def define(pool: Workpool) -> Workflow[dict[str, Any], dict[str, Any]]:
    @pool.workflow(max_concurrency=None)
    async def reindex(ctx: RunContext, change: dict[str, Any]) -> dict[str, Any]:
        return change

    return reindex


async def test_a_burst_becomes_one_run_with_the_last_input(pool: Workpool) -> None:
    reindex = define(pool)
    handles = [
        await reindex.run({"tenant": "acme", "edit": n}, debounce=0.3, debounce_key="acme")
        for n in range(5)
    ]
    other = await reindex.run({"tenant": "zeta", "edit": 0}, debounce=0.3, debounce_key="zeta")

    assert {handle.id for handle in handles} == {handles[0].id}
    assert other.id != handles[0].id
    async with fast_worker(pool):
        assert await handles[-1].result(timeout=20) == {"tenant": "acme", "edit": 4}
        assert await other.result(timeout=20) == {"tenant": "zeta", "edit": 0}
        later = await reindex.run({"tenant": "acme", "edit": 5}, debounce=0.3, debounce_key="acme")
        assert later.id != handles[0].id  # the first window ended: a new run
        assert await later.result(timeout=20) == {"tenant": "acme", "edit": 5}
    assert len((await pool.list_runs()).runs) == 3


async def test_the_window_and_the_most_wait_set_the_start(backend_url: str) -> None:
    clock = ManualClock()
    pool = Workpool(backend_url, app="tests", clock=clock)
    reindex = define(pool)
    start = clock.now()
    first = await reindex.run({"n": 1}, debounce=timedelta(seconds=10), debounce_max=25)
    for _ in range(3):
        clock.advance(8)
        again = await reindex.run({"n": 2}, debounce=timedelta(seconds=10), debounce_max=25)
        assert again.id == first.id
    run = await pool.get_run(first.id)
    assert run.available_at.timestamp() == pytest.approx(start + 25)  # not 8 * 3 + 10
    assert run.input == {"n": 2}
    clock.advance(2)  # its window ended at 25: a new run, with a window of its own
    late = await reindex.run({"n": 3}, debounce=timedelta(seconds=10), debounce_max=25)
    assert late.id != first.id
    assert (await pool.get_run(late.id)).available_at.timestamp() == pytest.approx(start + 36)
    await pool.aclose()


BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"debounce": -1}, "debounce must be positive"),
    ({"debounce": 0}, "debounce must be positive"),
    ({"debounce": math.nan}, "finite"),
    ({"debounce": math.inf}, "finite"),
    ({"debounce": "5s"}, "timedelta or a number"),
    ({"debounce": True}, "timedelta or a number"),
    ({"debounce": timedelta(seconds=-1)}, "debounce must be positive"),
    ({"debounce": 5, "debounce_key": ""}, "debounce_key"),
    ({"debounce": 5, "debounce_key": 42}, "debounce_key"),
    ({"debounce": 5, "debounce_key": "a\nb"}, "control character"),
    ({"debounce_key": "a"}, "give debounce"),
    ({"debounce_max": 5}, "give debounce"),
    ({"debounce": 5, "debounce_max": 2}, "shorter than the debounce window"),
    ({"debounce": 5, "debounce_max": math.nan}, "finite"),
    ({"debounce": 5, "run_after": 5}, "not both"),
    ({"debounce": 5, "run_at": datetime(2030, 1, 1)}, "not both"),
    ({"debounce": 5, "idempotency_key": "k"}, "not both"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
async def test_bad_debounce_options_are_refused_at_the_edge(
    pool: Workpool, options: dict[str, Any], message: str
) -> None:
    reindex = define(pool)
    with pytest.raises(ConfigurationError, match=message):
        await reindex.run({"n": 1}, **options)
    with pytest.raises(ConfigurationError, match=message):
        reindex.prepare({"n": 1}, **options)
    assert (await pool.list_runs()).runs == []
