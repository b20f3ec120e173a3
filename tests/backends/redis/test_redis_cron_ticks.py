"""Cron ticks on Redis: the keys start_tick writes (the trigger's latest run, a capped
list of skipped ticks per trigger), and one script call per operation."""

from __future__ import annotations

import json

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_backend import CommandCounter

from workpool.backends.base import SKIPPED_TICKS_KEPT, NewRun, NewTick
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, trigger_name

NOW = 1_700_000_000.123456
WORKFLOW = "a:b"  # a ':' in the name: the trigger's name keeps it apart from others


def a_tick(trigger: str, at: float) -> NewTick:
    run = NewRun(
        id=f"run-{at!r}",
        workflow=WORKFLOW,
        queue="q",
        input="{}",
        available_at=at,
        max_concurrency=1,
        idempotency_key=f"cron:{trigger}:{at!r}",
    )
    return NewTick(run, trigger, at)


async def test_skipped_ticks_are_a_list_per_trigger_trimmed_to_the_newest_kept(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    first = await redis_backend.start_tick(a_tick("c:d", NOW), NOW)
    assert await raw.hgetall(keys.trigger_runs()) == {trigger_name(WORKFLOW, "c:d"): first.run_id}
    for i in range(1, SKIPPED_TICKS_KEPT + 3):
        await redis_backend.start_tick(a_tick("c:d", NOW + i), NOW + i)
    listed = keys.skipped_ticks(WORKFLOW, "c:d")
    assert listed == "{workpool-test}:trigger:3:a:b:c:d:skipped"
    assert await raw.llen(listed) == SKIPPED_TICKS_KEPT
    stored = await raw.lindex(listed, 0)
    assert stored is not None
    newest = json.loads(stored)
    assert newest == {
        "workflow": WORKFLOW,
        "trigger": "c:d",
        "scheduled_at": repr(NOW + SKIPPED_TICKS_KEPT + 2),
        "reason": "previous_run_active",
        "run_id": first.run_id,
        "recorded_at": repr(NOW + SKIPPED_TICKS_KEPT + 2),
    }
    assert await raw.zrange(keys.skipped_triggers(), 0, -1) == [trigger_name(WORKFLOW, "c:d")]
    # One workflow's name cannot select another's triggers: "a" is not "a:b".
    await redis_backend.start_tick(a_tick("x", NOW), NOW)  # another trigger of a:b
    assert await redis_backend.list_skipped_ticks("a", 10) == []


async def test_start_tick_and_list_skipped_ticks_are_one_script_call_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.list_skipped_ticks(None, 1)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    await redis_backend.start_tick(a_tick("t", NOW), NOW)
    assert counter.take() == ["EVALSHA"]
    await redis_backend.start_tick(a_tick("t", NOW + 1), NOW + 1)  # skipped
    assert counter.take() == ["EVALSHA"]
    assert len(await redis_backend.list_skipped_ticks(WORKFLOW, 10)) == 1
    assert counter.take() == ["EVALSHA"]
