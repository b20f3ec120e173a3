"""Fuzzed values at the API edge: each gives a ConfigurationError and stores nothing.

NaN, infinities, huge numbers, dates a datetime cannot hold, wrong types, empty names,
lone surrogates and control characters, in every option that takes a number, a time or
a name. Afterwards the store is checked untouched (no run listed, nothing pending) and
a worker of the pool still starts and runs work.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tests.integration.conftest import fast_worker
from workpool import (
    ConfigurationError,
    PayloadError,
    RunContext,
    RunFailedError,
    Workflow,
    Workpool,
)

NAN, INF = math.nan, math.inf
YEAR_0_IN_UTC = datetime(1, 1, 1, 3, tzinfo=timezone(timedelta(hours=5)))
YEAR_10000_IN_UTC = datetime(9999, 12, 31, 20, tzinfo=timezone(timedelta(hours=-5)))

BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    *(({"run_after": value}, "run_after") for value in (NAN, INF, -INF, 1e300, -1e300)),
    ({"run_after": "5"}, "run_after"),
    ({"run_after": True}, "run_after"),
    ({"run_after": timedelta.max}, "run_after"),
    ({"run_after": timedelta.min}, "run_after"),
    ({"run_at": 1_700_000_000.0}, "run_at"),
    ({"run_at": "2030-01-01T00:00:00Z"}, "run_at"),
    ({"run_at": datetime(1, 1, 1, tzinfo=UTC)}, "run_at"),
    ({"run_at": YEAR_0_IN_UTC}, "run_at"),
    ({"run_at": datetime(9999, 12, 31, 23, 59, tzinfo=UTC)}, "run_at"),
    ({"run_at": YEAR_10000_IN_UTC}, "run_at"),
    ({"run_at": datetime.max}, "run_at"),
    ({"run_at": datetime.now(UTC), "run_after": 1}, "run_at or run_after"),
    *(({"idempotency_key": "k", "idempotency_ttl": v}, "idempotency_ttl") for v in (NAN, INF)),
    ({"idempotency_key": "k", "idempotency_ttl": -1}, "idempotency_ttl"),
    ({"idempotency_key": "k", "idempotency_ttl": timedelta(0)}, "idempotency_ttl"),
    ({"idempotency_key": "k", "idempotency_ttl": "7d"}, "idempotency_ttl"),
    ({"idempotency_key": "k", "idempotency_ttl": timedelta.max}, "idempotency_ttl"),
    ({"idempotency_key": ""}, "idempotency_key"),
    ({"idempotency_key": 42}, "idempotency_key"),
    ({"idempotency_key": "x" * 201}, "idempotency_key"),
    ({"idempotency_key": "bad \ud800"}, "idempotency_key"),
    ({"queue": ""}, "queue"),
    ({"queue": 42}, "queue"),
    ({"queue": "bad \ud800"}, "queue"),
    ({"queue": "line\nbreak"}, "queue"),
    ({"on_complete": 42}, "on_complete"),
    ({"on_complete": ""}, "on_complete"),
    ({"on_complete": "bad \udfff"}, "on_complete"),
    ({"retry": "yes"}, "retry"),
    ({"retry": 3}, "retry"),
]
OPTION_IDS = [f"{index}-{next(iter(options))}" for index, (options, _) in enumerate(BAD_OPTIONS)]


async def assert_store_untouched(pool: Workpool) -> None:
    """No run is stored and nothing is pending."""
    assert (await pool.list_runs()).runs == []
    stats = await pool.stats()
    assert (stats.total.pending, stats.total.running) == (0, 0)


def define_take(pool: Workpool) -> Workflow[int, int]:
    @pool.workflow()
    async def take(ctx: RunContext, value: int) -> int:
        return value

    return take


@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS, ids=OPTION_IDS)
async def test_bad_run_options_are_refused_and_store_nothing(
    pool: Workpool, options: dict[str, Any], named: str
) -> None:
    take = define_take(pool)
    with pytest.raises(ConfigurationError, match=named):
        take.prepare(1, **options)
    with pytest.raises(ConfigurationError, match=named):
        await take.run(1, **options)
    with pytest.raises(ConfigurationError, match=named):
        await pool.run_by_name("take", 1, **options)
    with pytest.raises(ConfigurationError, match=named):
        await pool.run_by_name("defined_elsewhere", 1, **options)
    with pytest.raises(ConfigurationError, match=named):  # from sync code: a thread here
        await asyncio.to_thread(take.run_sync, 1, **options)
    await assert_store_untouched(pool)


async def test_one_bad_run_in_a_batch_stores_none_of_it(pool: Workpool) -> None:
    take = define_take(pool)
    too_late = take.prepare(3, run_after=3e11)  # finite, but starts after year 9999
    with pytest.raises(ConfigurationError, match="run_after"):
        await pool.enqueue_many([take.prepare(1), take.prepare(2), too_late])
    await assert_store_untouched(pool)


@pytest.mark.parametrize("name", [42, "bad \ud800", "", "\x00", "x" * 201, "tab\tbed"])
async def test_run_by_name_refuses_bad_workflow_names(pool: Workpool, name: Any) -> None:
    with pytest.raises(ConfigurationError, match="workflow name"):
        await pool.run_by_name(name, 1)
    await assert_store_untouched(pool)


async def test_input_with_a_lone_surrogate_is_refused(pool: Workpool) -> None:
    take = define_take(pool)
    with pytest.raises(PayloadError, match="surrogate"):
        await pool.run_by_name("take_text", {"text": "bad \ud800"})
    with pytest.raises(PayloadError, match="surrogate"):
        await take.run(1, on_complete="take", context="bad \udc00")
    await assert_store_untouched(pool)


@pytest.mark.parametrize("name", ["", "bad \ud800", "a\x00b", "x" * 201, 42])
async def test_bad_workflow_names_are_refused_when_defined_and_workers_still_start(
    pool: Workpool, name: Any
) -> None:
    with pytest.raises(ConfigurationError, match="workflow name"):
        pool.workflow(name=name)
    with pytest.raises(ConfigurationError, match="queue name"):
        pool.workflow(queue=name)
    assert dict(pool.workflows) == {}
    take = define_take(pool)
    async with fast_worker(pool):
        assert await (await take.run(5)).result(timeout=10) == 5
    assert [workflow.name for workflow in await pool.list_workflows()] == ["take"]


def test_an_empty_name_is_refused_not_replaced_by_the_function_name(pool: Workpool) -> None:
    with pytest.raises(ConfigurationError, match="non-empty"):

        @pool.workflow(name="")
        async def take(ctx: RunContext, value: int) -> int:
            return value

    assert dict(pool.workflows) == {}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"retries": "yes"}, "retries"),
        ({"on_failure": 42}, "on_failure"),
        ({"rate_limit": 10}, "rate_limit"),
        ({"concurrency_key": "customer"}, "concurrency_key"),
        ({"max_concurrency": True}, "max_concurrency"),
    ],
)
def test_bad_workflow_options_are_refused_when_defined(
    pool: Workpool, arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named):

        @pool.workflow(**arguments)
        async def take(ctx: RunContext, value: int) -> int:
            return value

    assert dict(pool.workflows) == {}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"app": "bad \ud800"}, "app"),
        ({"app": ""}, "app"),
        ({"prefix": ""}, "prefix"),
        ({"prefix": "a\nb"}, "prefix"),
        ({"retention": "3600"}, "retention"),
        ({"max_payload_bytes": 1.5}, "max_payload_bytes"),
        ({"default_retry": 3}, "default_retry"),
    ],
)
def test_bad_pool_arguments_are_refused(
    backend_url: str, arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named):
        Workpool(backend_url, **arguments)


BAD_KEYS = {"empty": "", "surrogate": "bad \ud800", "long": "x" * 201, "control": "a\x00"}


@pytest.mark.parametrize("kind", sorted(BAD_KEYS))
async def test_bad_concurrency_keys_are_refused_at_enqueue(pool: Workpool, kind: str) -> None:
    @pool.workflow(max_concurrency=1, concurrency_key=BAD_KEYS.__getitem__)
    async def invoice(ctx: RunContext, customer: str) -> None:
        return None

    with pytest.raises(ConfigurationError, match="concurrency_key"):
        await invoice.run(kind)
    await assert_store_untouched(pool)


STEP_CASES = {
    "run-timeout-nan": "timeout",
    "run-timeout-negative": "timeout",
    "child-timeout-inf": "timeout",
    "sleep-nan": "duration",
    "sleep-huge": "duration",
    "sleep-text": "duration",
    "sleep-until-text": "when",
    "sleep-until-year-0": "when",
    "emit-run-after-inf": "run_after",
    "emit-run-at-float": "run_at",
    "step-name-surrogate": "step name",
    "step-name-empty": "step name",
}


async def bad_step(ctx: RunContext, case: str) -> None:
    """Call one ctx.step method with one bad argument."""
    step: Any = ctx.step
    calls = {
        "run-timeout-nan": lambda: step.run("s", lambda: 1, timeout=NAN),
        "run-timeout-negative": lambda: step.run("s", lambda: 1, timeout=-1),
        "child-timeout-inf": lambda: step.run_workflow("s", "child", None, timeout=INF),
        "sleep-nan": lambda: step.sleep("s", NAN),
        "sleep-huge": lambda: step.sleep("s", 1e300),
        "sleep-text": lambda: step.sleep("s", "5"),
        "sleep-until-text": lambda: step.sleep_until("s", "2030-01-01"),
        "sleep-until-year-0": lambda: step.sleep_until("s", YEAR_0_IN_UTC),
        "emit-run-after-inf": lambda: step.emit_workflow("s", "child", None, run_after=INF),
        "emit-run-at-float": lambda: step.emit_workflow("s", "child", None, run_at=1e9),
        "step-name-surrogate": lambda: step.run("bad \ud800", lambda: 1),
        "step-name-empty": lambda: step.sleep("", 1),
    }
    await calls[case]()


async def test_bad_step_arguments_fail_the_run_clearly_and_save_nothing(pool: Workpool) -> None:
    bad_steps = pool.workflow(name="bad_steps")(bad_step)
    handles = {case: await bad_steps.run(case) for case in STEP_CASES}
    async with fast_worker(pool):
        for case, named in STEP_CASES.items():
            with pytest.raises(RunFailedError) as failed:
                await handles[case].result(timeout=10)
            assert failed.value.error.type == "ConfigurationError", case
            assert named in failed.value.error.message, case
            assert await pool.get_steps(handles[case].id) == [], case
    listed = (await pool.list_runs()).runs
    assert {run.workflow for run in listed} == {"bad_steps"}  # no child was enqueued
    assert len(listed) == len(STEP_CASES)
