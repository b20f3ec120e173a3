"""Named leases and skip_if_busy enqueues on Redis: the key layout, what a skipped run
leaves behind (nothing), and one script call per operation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.conftest import PREFIX
from tests.backends.redis.test_redis_backend import CommandCounter
from tests.backends.redis.test_redis_gates import commands_run

from workpool.backends.base import Enqueued, Finish, NewRun, StepRecord
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


def a_tick(run_id: str, workflow: str = "wf", **fields: Any) -> NewRun:
    return a_run(run_id, workflow, max_concurrency=1, skip_if_busy=True, **fields)


async def snapshot(raw: Redis) -> dict[str, bytes | None]:
    """Every key and its serialized value."""
    return {key: await raw.dump(key) async for key in raw.scan_iter()}


async def test_a_skipped_run_leaves_nothing_behind_not_even_its_idempotency_key(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.enqueue([a_run("first", max_concurrency=1)], NOW)
    before = await snapshot(raw)
    later = replace(a_tick("later", idempotency_key="k"), available_at=NOW + 60)
    # The gate is per (workflow, key), whatever the queue: a tick of a new pair is busy too.
    elsewhere = replace(a_tick("elsewhere"), queue="new-queue")
    ticks = [a_tick("tick", idempotency_key="k"), later, elsewhere]
    assert await redis_backend.enqueue(ticks, NOW) == [
        Enqueued(run.id, created=False, skipped=True) for run in ticks
    ]
    assert await snapshot(raw) == before
    assert await raw.exists(keys.idempotency("wf", "k")) == 0
    [claimed] = (await redis_backend.claim(["q"], "w", 5, 30, 3, NOW)).runs
    await redis_backend.finish([Finish(claimed.lease, "succeeded", output="1")], NOW)
    assert await redis_backend.enqueue([ticks[0]], NOW) == [Enqueued("tick", created=True)]
    assert await raw.get(keys.idempotency("wf", "k")) is not None


async def test_a_batch_mixes_created_found_and_skipped_runs_in_one_script_call(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.enqueue([a_run("warm")], NOW)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    runs = [
        a_tick("admitted"),
        a_tick("busy"),
        a_run("keyed", idempotency_key="k"),
        a_run("same key", idempotency_key="k"),
        a_run("warm"),
        a_tick("other gate", concurrency_key="x"),
        a_run("plain"),
        a_run("ungated tick", skip_if_busy=True),
    ]
    assert await redis_backend.enqueue(runs, NOW) == [
        Enqueued("admitted", created=True),
        Enqueued("busy", created=False, skipped=True),
        Enqueued("keyed", created=True),
        Enqueued("keyed", created=False),
        Enqueued("warm", created=False),
        Enqueued("other gate", created=True),
        Enqueued("plain", created=True),
        Enqueued("ungated tick", created=True),
    ]
    assert counter.take() == ["EVALSHA"]


async def test_a_skipped_child_is_named_by_its_step_but_not_stored(
    redis_backend: RedisBackend,
) -> None:
    await redis_backend.enqueue([a_run("parent"), a_run("busy", max_concurrency=1)], NOW)
    claimed = (await redis_backend.claim(["q"], "w", 2, 30, 3, NOW)).runs
    [parent] = [run for run in claimed if run.lease.run_id == "parent"]
    step = StepRecord(name="s", kind="emit", status="succeeded", attempts=1, started_at=NOW)
    stored = await redis_backend.save_step(parent.lease, step, NOW, a_tick("child"))
    assert stored == replace(step, child_run_id="child", output='"child"')
    assert await redis_backend.get_run("child") is None
    assert await redis_backend.get_children("parent") == []


async def test_skip_if_busy_costs_one_gate_read_and_ungated_runs_nothing(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    """A skipped run costs one HGET of its gate's count and nothing else (a batch looks
    its ids up with one EXISTS first); a tick that is stored costs what the same gated
    run without the flag does plus that HGET; the flag costs an ungated run nothing."""

    async def cost(runs: list[NewRun]) -> int:
        for workflow in ("wf", "g", "t"):  # each batch wakes each of its pairs once
            await raw.delete(Keys(PREFIX).signal("q", workflow))
        _, commands = await commands_run(raw, redis_backend.enqueue(runs, NOW))
        return commands

    plain = await cost([a_run(f"p{i}") for i in range(5)])
    assert await cost([a_run(f"u{i}", skip_if_busy=True) for i in range(5)]) == plain
    gated = await cost([a_run("g", workflow="g", max_concurrency=1)])
    assert await cost([a_tick("t", workflow="t")]) == gated + 1
    skipped = redis_backend.enqueue([a_tick(f"t{i}", workflow="t") for i in range(5)], NOW)
    assert await commands_run(raw, skipped) == (
        [Enqueued(f"t{i}", created=False, skipped=True) for i in range(5)],
        1 + 5,
    )
