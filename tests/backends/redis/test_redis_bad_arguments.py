"""The scripts check their numeric arguments before their first write.

Called directly (as a caller that skipped the Python checks would), enqueue.lua,
finish.lua and save_step.lua answer an error reply for a time that is not a finite
number, in any entry of a batch, and leave every key exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import ConnectionPool, Redis
from redis.exceptions import ResponseError
from tests.backends.redis.conftest import PREFIX

from workpool.backends.base import ClaimedRun, NewRun, StepRecord
from workpool.backends.redis import codec
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.connection import CommandLink
from workpool.backends.redis.keys import Keys
from workpool.backends.redis.scripts import Scripts

NOW = 1_700_000_000.5
BAD_NUMBERS = ["nan", "inf", "-inf", "1e999", "", "soon"]
AVAILABLE_AT = 4
"""Index of available_at among a run's enqueue fields (see library/enqueueing.lua)."""


@pytest.fixture
async def scripts(backend_url: str) -> AsyncIterator[Scripts]:
    """The scripts of ``redis_backend``, to call with any arguments."""
    link = CommandLink(ConnectionPool.from_url(backend_url, decode_responses=True))
    loaded = Scripts(link, Keys(PREFIX).tag)
    await loaded.load()
    yield loaded
    await link.close()


async def everything(raw: Redis) -> dict[str, Any]:
    """Every key and its value, to compare the whole store before and after."""
    found: dict[str, Any] = {}
    for key in sorted(str(name) for name in await raw.keys("*")):
        kind = await raw.type(key)
        if kind == "hash":
            found[key] = await raw.hgetall(key)
        elif kind == "zset":
            found[key] = await raw.zrange(key, 0, -1, withscores=True)
        elif kind == "list":
            found[key] = await raw.lrange(key, 0, -1)
        elif kind == "set":
            found[key] = sorted(await raw.smembers(key))
        else:
            found[key] = await raw.get(key)
    return found


def a_run(run_id: str, **fields: Any) -> NewRun:
    return NewRun(id=run_id, workflow="wf", queue="q", input="{}", available_at=NOW, **fields)


def with_field(args: list[str], run: int, field: int, value: str) -> list[str]:
    """Enqueue arguments with one field of the run at position ``run`` replaced."""
    changed = list(args)
    changed[run * codec.RUN_FIELDS + field] = value
    return changed


async def running(backend: RedisBackend, count: int) -> list[ClaimedRun]:
    await backend.enqueue([a_run(f"run-{index}") for index in range(count)], NOW)
    claimed = (await backend.claim(["q"], "worker", count, 30.0, 3, NOW)).runs
    assert len(claimed) == count
    return claimed


@pytest.mark.parametrize("bad", BAD_NUMBERS)
async def test_enqueue_refuses_a_bad_start_in_any_run(
    redis_backend: RedisBackend, scripts: Scripts, raw: Redis, bad: str
) -> None:
    await running(redis_backend, 1)
    before = await everything(raw)
    runs = [a_run("first"), a_run("second", idempotency_key="k"), a_run("third")]
    args = with_field(codec.encode_runs(runs, NOW), 2, AVAILABLE_AT, bad)

    with pytest.raises(ResponseError, match=r"third.*available_at"):
        await scripts.enqueue(codec.seconds(NOW), args)

    assert await everything(raw) == before


@pytest.mark.parametrize(
    ("field", "name"), [(8, "idempotency expiry"), (9, "idempotency TTL"), (10, "max_concurrency")]
)
async def test_enqueue_refuses_bad_key_lifetimes_and_limits(
    scripts: Scripts, raw: Redis, field: int, name: str
) -> None:
    runs = [a_run("first"), a_run("second", idempotency_key="k", max_concurrency=2)]
    for bad in ("nan", "inf", "0" if field != 8 else "-inf"):
        args = with_field(codec.encode_runs(runs, NOW), 1, field, bad)
        with pytest.raises(ResponseError, match=f"second.*{name}"):
            await scripts.enqueue(codec.seconds(NOW), args)
    assert await everything(raw) == {}


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize("field", ["retry_at", "wake_at"])
async def test_finish_refuses_a_bad_time_in_any_entry(
    redis_backend: RedisBackend, scripts: Scripts, raw: Redis, bad: str, field: str
) -> None:
    first, second, third = await running(redis_backend, 3)
    before = await everything(raw)
    entries = [
        {"run_id": first.lease.run_id, "token": first.lease.token, "status": "succeeded"},
        {"run_id": second.lease.run_id, "token": second.lease.token, "status": "failed"},
        {
            "run_id": third.lease.run_id,
            "token": third.lease.token,
            "status": "retry" if field == "retry_at" else "suspend",
            field: bad,
        },
    ]

    with pytest.raises(ResponseError, match=f"{third.lease.run_id}.*{field}"):
        await scripts.finish(codec.seconds(NOW), json.dumps(entries))

    assert await everything(raw) == before


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "never"])
async def test_every_script_refuses_a_bad_now(
    redis_backend: RedisBackend, scripts: Scripts, raw: Redis, bad: str
) -> None:
    (claimed,) = await running(redis_backend, 1)
    lease = (claimed.lease.run_id, claimed.lease.token)
    before = await everything(raw)
    finish = [{"run_id": lease[0], "token": lease[1], "status": "succeeded"}]
    step = codec.encode_step(StepRecord("nap", "sleep", "waiting", 1, NOW, wake_at=NOW + 9))

    with pytest.raises(ResponseError, match="now"):
        await scripts.enqueue(bad, codec.encode_runs([a_run("new")], NOW))
    with pytest.raises(ResponseError, match="now"):
        await scripts.finish(bad, json.dumps(finish))
    with pytest.raises(ResponseError, match="now"):
        await scripts.save_step(bad, lease, "nap", step, None)

    assert await everything(raw) == before


@pytest.mark.parametrize("bad", BAD_NUMBERS)
async def test_save_step_refuses_a_child_with_a_bad_start(
    redis_backend: RedisBackend, scripts: Scripts, raw: Redis, bad: str
) -> None:
    (claimed,) = await running(redis_backend, 1)
    lease = (claimed.lease.run_id, claimed.lease.token)
    before = await everything(raw)
    step = codec.encode_step(StepRecord("ship", "workflow", "waiting", 1, NOW))
    child = with_field(
        codec.encode_runs([a_run("child", idempotency_key="step:k")], NOW), 0, AVAILABLE_AT, bad
    )

    with pytest.raises(ResponseError, match=r"child.*available_at"):
        await scripts.save_step(codec.seconds(NOW), lease, "ship", step, ("workflow", child))

    assert await everything(raw) == before
