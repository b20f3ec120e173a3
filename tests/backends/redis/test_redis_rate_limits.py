"""Rate limits on Redis: each limiter's TAT key, a run's rate and rate_reserved fields,
reservations made once per "becomes queued", and what they cost."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_gates import commands_run

from workpool.backends.base import CompletionHook, Finish, NewRun, RateLimitSpec
from workpool.backends.redis import codec
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, gate_id

NOW = 1_700_000_000.0
TWO_PER_10S = RateLimitSpec("workflow:send email", 2, 10.0)
ERROR = '{"type": "E"}'


def a_run(run_id: str, *limits: RateLimitSpec, **fields: Any) -> NewRun:
    return NewRun(
        id=run_id,
        workflow="wf",
        queue="q",
        input="{}",
        available_at=NOW,
        rate_limits=limits or (TWO_PER_10S,),
        **fields,
    )


async def tat(raw: Redis, keys: Keys, limiter: str) -> float | None:
    stored = await raw.get(keys.limiter(limiter))
    return None if stored is None else float(stored)


async def test_each_limiter_keeps_its_tat_with_a_ttl(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    one_per_s = RateLimitSpec("queue:q", 1, 1.0)
    await redis_backend.enqueue([a_run(f"r{i}", TWO_PER_10S, one_per_s) for i in range(3)], NOW)
    # Starts at NOW, NOW + 1 and NOW + 5: each limiter is one spacing past the last.
    assert await tat(raw, keys, TWO_PER_10S.limiter) == NOW + 15
    assert await tat(raw, keys, "queue:q") == NOW + 6
    ttl = await raw.pttl(keys.limiter(TWO_PER_10S.limiter))
    assert 25_000 < ttl <= 26_000  # (tat - now + per) seconds, and one more
    assert 7_000 < await raw.pttl(keys.limiter("queue:q")) <= 8_000


async def test_a_run_stores_its_limits_and_its_reservation_until_promoted(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    plain = replace(a_run("plain"), rate_limits=())
    await redis_backend.enqueue([plain, *(a_run(f"r{i}") for i in range(3))], NOW)
    assert not {"rate", "rate_reserved"} & set(await raw.hkeys(keys.run("plain")))
    rate, reserved = await raw.hmget(keys.run("r1"), "rate", "rate_reserved")
    assert (rate, reserved) == ('[["workflow:send email",2,10.0]]', None)
    assert await raw.hget(keys.run("r2"), "rate_reserved") == "1"
    assert await raw.zscore(keys.scheduled("q"), "r2") == NOW + 5
    claimed = (await redis_backend.claim(["q"], "w", 5, 30, 3, NOW + 5)).runs
    assert [run.lease.run_id for run in claimed] == ["plain", "r0", "r1", "r2"]
    assert await raw.hget(keys.run("r2"), "rate_reserved") is None
    assert await tat(raw, keys, TWO_PER_10S.limiter) == NOW + 15  # not reserved again


async def test_a_promoted_run_without_a_reservation_reserves_one(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    runs = [replace(a_run(f"r{i}"), available_at=NOW + 1) for i in range(3)]
    await redis_backend.enqueue(runs, NOW)
    assert await raw.exists(keys.limiter(TWO_PER_10S.limiter)) == 0  # none reserved yet
    claimed = (await redis_backend.claim(["q"], "w", 5, 30, 3, NOW + 1)).runs
    assert [run.lease.run_id for run in claimed] == ["r0", "r1"]
    record = await redis_backend.get_run("r2")
    assert record is not None
    assert (record.status, record.available_at) == ("scheduled", NOW + 6)


@pytest.mark.parametrize("how", ["reaped", "released", "resumed"])
async def test_a_run_queued_again_reserves_again(
    redis_backend: RedisBackend, raw: Redis, keys: Keys, how: str
) -> None:
    await redis_backend.enqueue([a_run("r0"), a_run("r1")], NOW)
    [first] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs  # r1 stays queued
    later = NOW + 31
    if how == "reaped":
        await redis_backend.claim(["q"], "w", 0, 30, 3, later)
    elif how == "released":
        await redis_backend.release([first.lease], later)
    else:
        resume = Finish(first.lease, "suspend", wake_at=later)
        assert await redis_backend.finish([resume], NOW) == [True]
        await redis_backend.claim(["q"], "w", 0, 30, 3, later)
    # The limiter's TAT was NOW + 10: the run may start at NOW + 31, and takes it.
    record = await redis_backend.get_run("r0")
    assert record is not None
    assert (record.status, record.available_at) == ("queued", later)
    assert await tat(raw, keys, TWO_PER_10S.limiter) == later + 5


async def test_a_woken_parent_reserves_a_start(redis_backend: RedisBackend, raw: Redis) -> None:
    await redis_backend.enqueue([a_run("parent"), a_run("other")], NOW)
    claimed = (await redis_backend.claim(["q"], "w", 2, 30, 3, NOW)).runs
    parent = next(run for run in claimed if run.lease.run_id == "parent")
    suspend = Finish(parent.lease, "suspend", waiting_on=("gone",))  # resumable at once
    assert await redis_backend.finish([suspend], NOW + 1) == [True]
    record = await redis_backend.get_run("parent")
    assert record is not None
    assert (record.status, record.available_at) == ("scheduled", NOW + 5)


async def test_a_run_over_its_limit_joins_its_gate_only_when_it_starts(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    runs = [a_run(f"r{i}", max_concurrency=5) for i in range(3)]
    await redis_backend.enqueue(runs, NOW)
    gate = gate_id("wf", None)
    assert await raw.hget(keys.gates(), gate) == "2"
    assert await raw.hget(keys.run("r2"), "admitted") is None
    await redis_backend.claim(["q"], "w", 0, 30, 3, NOW + 5)
    assert await raw.hget(keys.gates(), gate) == "3"
    assert await raw.hget(keys.run("r2"), "admitted") == "1"


async def test_hook_runs_have_no_limits(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    hook = CompletionHook(workflow="h", queue="q", context="{}", retry=None, on_failure_only=False)
    await redis_backend.enqueue([a_run("r0", hooks=(hook,))], NOW)
    [run] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    assert await redis_backend.finish([Finish(run.lease, "succeeded", output="1")], NOW)
    assert await raw.hget(keys.run("r0-0"), "status") == "queued"
    assert await raw.hget(keys.run("r0-0"), "rate") is None


async def test_a_run_within_its_limit_costs_a_get_and_a_set_per_limiter(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    one_per_s = RateLimitSpec("queue:q", 1, 1.0)
    await redis_backend.enqueue([replace(a_run("warm"), rate_limits=())], NOW)
    _, plain = await commands_run(
        raw, redis_backend.enqueue([replace(a_run("p"), rate_limits=())], NOW)
    )
    _, limited = await commands_run(
        raw, redis_backend.enqueue([a_run("l", TWO_PER_10S, one_per_s)], NOW)
    )
    assert limited == plain + 4  # GET and SET of each of its two limiters


@pytest.mark.parametrize(
    "limit", [RateLimitSpec("l", 0, 1.0), RateLimitSpec("l", 1, 0.0), RateLimitSpec("l", 1, -1.0)]
)
def test_limits_that_allow_nothing_are_refused(limit: RateLimitSpec) -> None:
    with pytest.raises(ValueError, match="rate limit 'l'"):
        codec.encode_rate_limits([limit])
