"""Named leases on Redis: the key layout and one script call per operation; and a batch
of enqueues, whatever each run's outcome, in one script call."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_backend import CommandCounter

from workpool.backends.base import Enqueued, NewRun
from workpool.backends.redis import codec
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys

NOW = 1_700_000_000.123456


async def test_a_lease_is_one_string_with_its_expiry_holder_and_a_real_ttl(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    assert await redis_backend.acquire_lease("cron", "host 1:pid 7", 10, NOW)
    assert await raw.get(keys.lease("cron")) == f"{codec.seconds(NOW + 10)} host 1:pid 7"
    assert 9_000 < await raw.pttl(keys.lease("cron")) <= 10_000
    assert await redis_backend.acquire_lease("cron", "host 1:pid 7", 20, NOW + 5)  # renewed
    assert await raw.get(keys.lease("cron")) == f"{codec.seconds(NOW + 25)} host 1:pid 7"
    assert 19_000 < await raw.pttl(keys.lease("cron")) <= 20_000
    assert [key async for key in raw.scan_iter()] == [keys.lease("cron")]


async def test_a_refused_lease_changes_nothing(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    assert await redis_backend.acquire_lease("cron", "a", 10, NOW)
    held = await raw.get(keys.lease("cron"))
    await raw.pexpire(keys.lease("cron"), 60_000)
    assert not await redis_backend.acquire_lease("cron", "a b", 10, NOW + 9.999)
    assert await raw.get(keys.lease("cron")) == held
    assert await raw.pttl(keys.lease("cron")) > 10_000


async def test_the_callers_clock_decides_not_the_ttl(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    assert await redis_backend.acquire_lease("cron", "a", 10, NOW)
    assert await redis_backend.acquire_lease("cron", "b", 10, NOW + 10)  # key still there
    assert await raw.get(keys.lease("cron")) == f"{codec.seconds(NOW + 20)} b"
    assert await redis_backend.acquire_lease("cron", "c", 0, NOW + 30)  # no lease: 1 ms
    assert await redis_backend.acquire_lease("cron", "d", 10, NOW + 30)


async def test_acquire_lease_is_one_script_call(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.acquire_lease("warm", "a", 10, NOW)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    assert await redis_backend.acquire_lease("cron", "a", 10, NOW)
    assert counter.take() == ["EVALSHA"]
    assert not await redis_backend.acquire_lease("cron", "b", 10, NOW)
    assert counter.take() == ["EVALSHA"]


def a_run(run_id: str, workflow: str = "wf", **fields: Any) -> NewRun:
    return NewRun(id=run_id, workflow=workflow, queue="q", input="{}", available_at=NOW, **fields)


async def test_a_batch_mixes_created_and_found_runs_in_one_script_call(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.enqueue([a_run("warm")], NOW)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    runs = [
        a_run("admitted", max_concurrency=1),
        a_run("waiting", max_concurrency=1),
        a_run("keyed", idempotency_key="k"),
        a_run("same key", idempotency_key="k"),
        a_run("warm"),
        a_run("other gate", max_concurrency=1, concurrency_key="x"),
        a_run("plain"),
    ]
    assert await redis_backend.enqueue(runs, NOW) == [
        Enqueued("admitted", created=True),
        Enqueued("waiting", created=True),
        Enqueued("keyed", created=True),
        Enqueued("keyed", created=False),
        Enqueued("warm", created=False),
        Enqueued("other gate", created=True),
        Enqueued("plain", created=True),
    ]
    assert counter.take() == ["EVALSHA"]
