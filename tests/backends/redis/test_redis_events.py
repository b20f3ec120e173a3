"""Redis-specific behaviour of events: one script call each, what they cost inside the
scripts, their keys, and that purge leaves none behind."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_backend import NOW, CommandCounter, a_run
from tests.backends.redis.test_redis_gates import commands_run

from workpool.backends.base import ClaimedRun, EventValue, Finish, StepRecord
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys


def waiting(name: str) -> StepRecord:
    return StepRecord(name, "event", "waiting", 1, NOW)


async def running(backend: RedisBackend, *run_ids: str) -> list[ClaimedRun]:
    await backend.enqueue([a_run(run_id) for run_id in run_ids], NOW)
    claimed = (await backend.claim(["q"], "w", len(run_ids), 30, 3, NOW)).runs
    assert sorted(run.lease.run_id for run in claimed) == sorted(run_ids)
    return sorted(claimed, key=lambda run: run.lease.run_id)


async def test_event_operations_are_one_script_call_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    (claimed,) = await running(redis_backend, "r")
    counter = CommandCounter(redis_backend, monkeypatch)
    assert await redis_backend.send_event("r", "k", "1", NOW) == "sent"
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.take_event(claimed.lease, waiting("w"), "k", NOW)
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.set_event(claimed.lease, "status", '"ok"')
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.get_event("r", "status") == EventValue("running", '"ok"')
    assert counter.take() == ["EVALSHA"]


async def test_waiting_on_events_costs_one_exists_and_nothing_without_them(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    plain, with_events = await running(redis_backend, "a", "b")
    timer = Finish(plain.lease, "suspend", wake_at=NOW + 60)
    _, without = await commands_run(raw, redis_backend.finish([timer], NOW))
    events = Finish(with_events.lease, "suspend", wake_at=NOW + 60, events=("x", "y", "z"))
    _, waiting_on_three = await commands_run(raw, redis_backend.finish([events], NOW))
    assert waiting_on_three == without + 1  # one EXISTS of the three lists


async def test_keys_with_colons_and_reserved_words_stay_apart(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    (claimed,) = await running(redis_backend, "r")
    for key in ("steps", "a:b", "inbox", "a"):
        assert await redis_backend.send_event("r", key, f'"{key}"', NOW) == "sent"
    assert await raw.smembers(keys.inbox_keys("r")) == {"steps", "a:b", "inbox", "a"}
    for key in ("a", "inbox", "a:b", "steps"):
        step = await redis_backend.take_event(claimed.lease, waiting(f"w-{key}"), key, NOW)
        assert step is not None
        assert step.output == f'"{key}"'
    assert await raw.exists(keys.inbox("r", "a:b")) == 0  # an emptied list is gone


async def test_a_purge_leaves_no_key_of_a_run_with_events_and_values(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    (claimed,) = await running(redis_backend, "r")
    for key in ("taken", "left", "left too"):
        await redis_backend.send_event("r", key, "1", NOW)
    assert await redis_backend.take_event(claimed.lease, waiting("w"), "taken", NOW)
    assert await redis_backend.set_event(claimed.lease, "status", '"done"')
    assert await redis_backend.finish([Finish(claimed.lease, "succeeded", output="1")], NOW)
    before = {key async for key in raw.scan_iter(match=f"{keys.run('r')}*")}
    assert {keys.inbox("r", "left"), keys.published("r"), keys.inbox_keys("r")} <= before

    assert await redis_backend.purge(NOW + 1, 10, 0.0) == 1

    assert [key async for key in raw.scan_iter(match=f"{keys.run('r')}*")] == []
