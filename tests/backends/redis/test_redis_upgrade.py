"""A store written by earlier versions keeps working: the key layout did not change, and
what this version stopped writing is still read where it matters."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from workpool.backends.base import Finish, NewRun
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, pair

NOW = 1_700_000_040.5  # 40.5 s into its minute


def a_run(run_id: str, workflow: str = "wf") -> NewRun:
    return NewRun(id=run_id, workflow=workflow, queue="q", input="{}", available_at=NOW)


async def test_cancel_many_finds_runs_named_only_by_the_legacy_workflows_set(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    """Versions before the pairs set named workflows in a set of their own, which
    cancel_many walked; this version walks the pairs and still reads that set."""
    await redis_backend.enqueue([a_run("old", "before-pairs"), a_run("new")], NOW)
    await raw.srem(keys.pairs(), pair("q", "before-pairs"))  # as such a store had it
    await raw.sadd(keys.legacy_workflows(), "before-pairs")

    assert await redis_backend.cancel_many(None, None, None, 10, NOW) == 2
    assert await raw.hget(keys.run("old"), "status") == "canceled"
    assert not await raw.exists(keys.workflow_cancelable("before-pairs"))


@pytest.mark.parametrize("status", ["succeeded", "retry"])
async def test_a_run_time_an_earlier_version_added_to_is_added_to(
    redis_backend: RedisBackend, raw: Redis, keys: Keys, status: str
) -> None:
    """Earlier versions added run_time with HINCRBYFLOAT and deleted the lease token;
    this one writes the sum and an empty token in the HSET that ends the lease."""
    await redis_backend.enqueue([a_run("run")], NOW)
    [claimed] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    await raw.hset(keys.run("run"), "run_time", "0.125")  # an earlier attempt's
    done = Finish(claimed.lease, status, output="1", retry_at=NOW + 5)  # type: ignore[arg-type]

    assert await redis_backend.finish([done], NOW + 0.25) == [True]
    stored = await raw.hmget(keys.run("run"), "run_time", "lease_token")
    assert stored == ["0.375", ""]


async def test_counters_an_earlier_version_added_to_are_summed_on(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    """Earlier versions wrote counters with HINCRBY, once per counter and call; this one
    reads and writes a minute's counters once per call: the same fields, the same sums."""
    minute = int(NOW // 60 * 60)
    name = pair("q", "wf")
    await raw.hset(keys.stats(minute), mapping={f"timed:{name}": 5, f"run_time:{name}": 1.5})
    await raw.zadd(keys.stats_minutes(), {str(minute): minute})
    await redis_backend.enqueue([a_run("run")], NOW)
    [claimed] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    await redis_backend.finish([Finish(claimed.lease, "succeeded", output="1")], NOW + 0.5)

    [counters] = (await redis_backend.get_stats(NOW, NOW + 1)).counters
    assert (counters.timed, counters.run_time, counters.succeeded) == (6, 2.0, 1)
