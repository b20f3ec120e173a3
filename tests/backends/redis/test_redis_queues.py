"""Queue settings on Redis: the settings hash, one command per call, and exactly when
a queue's idle workers are woken (the signal list of a (queue, workflow) pair gets a
token) or not, so that idle workers of a full or paused queue never wake each other in
turn."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable
from types import EllipsisType
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.conftest import PREFIX
from tests.backends.redis.test_redis_backend import CommandCounter
from tests.backends.redis.test_redis_gates import NOT_RUN_BY_SCRIPTS

from workpool.backends.base import ClaimedRun, Finish, NewRun, QueueSettings
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys
from workpool.errors import CorruptRecordError

NOW = 1_700_000_000.123456
Q = "q"
WF = "wf"


def a_run(run_id: str, available_at: float = NOW, queue: str = Q, workflow: str = WF) -> NewRun:
    return NewRun(id=run_id, workflow=workflow, queue=queue, input="{}", available_at=available_at)


async def enqueue(backend: RedisBackend, count: int, queue: str = Q) -> list[str]:
    """``count`` runs queued now, oldest first."""
    runs = [a_run(f"{queue}-{i}", NOW + i * 0.001, queue) for i in range(count)]
    await backend.enqueue(runs, NOW + 1)
    return [run.id for run in runs]


async def claim(
    backend: RedisBackend, limit: int, now: float = NOW + 1, queue: str = Q, alone: bool = False
) -> list[ClaimedRun]:
    """A claim by a worker that holds runs (it takes no run to isolate), unless ``alone``."""
    return (await backend.claim([queue], "w", limit, 10, 3, now, alone=alone)).runs


async def woken(raw: Redis, keys: Keys, queue: str = Q, workflow: str = WF) -> bool:
    """Whether the pair's signal list holds a token; it is emptied for the next check."""
    tokens = int(await raw.llen(keys.signal(queue, workflow)))
    await raw.delete(keys.signal(queue, workflow))
    return tokens > 0


async def test_settings_live_in_one_hash_per_queue(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    assert await redis_backend.get_queue("mail") == QueueSettings("mail")
    assert await raw.exists(keys.settings("mail")) == 0  # reading stores nothing
    await redis_backend.set_queue("mail", max_parallelism=3)
    assert await raw.hgetall(keys.settings("mail")) == {"max_parallelism": "3", "paused": "0"}
    await redis_backend.set_queue("mail", paused=True)
    assert await raw.hgetall(keys.settings("mail")) == {"max_parallelism": "3", "paused": "1"}
    assert await redis_backend.set_queue("mail", max_parallelism=None, paused=False) == (
        QueueSettings("mail")
    )
    # Back to the defaults, but the queue has settings: declared defaults stay out.
    assert await raw.hgetall(keys.settings("mail")) == {"paused": "0"}
    declared = await redis_backend.set_queue("mail", max_parallelism=5, only_if_new=True)
    assert declared == QueueSettings("mail")
    assert await redis_backend.set_queue("mail", max_parallelism=0) == QueueSettings("mail", 0)


async def test_set_queue_and_get_queue_are_one_command_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.set_queue("warm", paused=False)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    await redis_backend.set_queue(Q, max_parallelism=2, paused=True)
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.get_queue(Q) == QueueSettings(Q, 2, True)
    assert counter.take() == ["HMGET"]


@pytest.mark.parametrize("limit", [-1, True])
async def test_a_limit_that_is_not_a_whole_number_is_refused(
    redis_backend: RedisBackend, raw: Redis, keys: Keys, limit: int
) -> None:
    with pytest.raises(ValueError, match="max_parallelism"):
        await redis_backend.set_queue(Q, max_parallelism=limit)
    assert await raw.exists(keys.settings(Q)) == 0


async def test_a_corrupt_limit_names_the_queue(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await raw.hset(keys.settings(Q), mapping={"max_parallelism": "many", "paused": "0"})
    with pytest.raises(CorruptRecordError, match=f"queue {Q}: .*'many'"):
        await redis_backend.get_queue(Q)


async def test_a_claim_stopped_by_the_limit_wakes_nobody(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    ids = await enqueue(redis_backend, 3)
    await redis_backend.set_queue(Q, max_parallelism=1)
    await woken(raw, keys)
    assert [run.lease.run_id for run in await claim(redis_backend, 5)] == ids[:1]
    assert not await woken(raw, keys)
    assert await claim(redis_backend, 5) == []  # full: another idle worker's claim
    assert not await woken(raw, keys)


async def test_a_claim_that_leaves_room_and_runs_wakes_another_worker(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await enqueue(redis_backend, 3)
    await redis_backend.set_queue(Q, max_parallelism=2)
    await woken(raw, keys)
    assert len(await claim(redis_backend, 1)) == 1  # this worker's own limit stopped it
    assert await woken(raw, keys)
    assert len(await claim(redis_backend, 1)) == 1
    assert not await woken(raw, keys)


async def test_a_paused_queue_is_promoted_and_reaped_but_wakes_nobody(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    [lost] = await enqueue(redis_backend, 1)
    assert len(await claim(redis_backend, 1)) == 1  # lease until NOW + 11
    await redis_backend.enqueue([a_run("later", NOW + 5)], NOW + 1)
    await redis_backend.set_queue(Q, paused=True)
    await woken(raw, keys)
    assert await claim(redis_backend, 5, now=NOW + 20) == []
    assert not await woken(raw, keys)
    for run_id in (lost, "later"):
        record = await redis_backend.get_run(run_id)
        assert record is not None
        assert record.status == "queued"
    assert await raw.zcard(keys.leases(Q)) == 0


async def test_a_reap_that_frees_room_wakes_another_worker_if_room_is_left(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    ids = await enqueue(redis_backend, 3)
    await redis_backend.set_queue(Q, max_parallelism=2)
    assert len(await claim(redis_backend, 2)) == 2  # leases until NOW + 11
    await woken(raw, keys)
    # Both reaped, to run alone: this worker holds runs, so it takes the third one.
    assert [run.lease.run_id for run in await claim(redis_backend, 1, now=NOW + 20)] == ids[2:]
    assert await woken(raw, keys)
    [isolated] = await claim(redis_backend, 1, now=NOW + 20, alone=True)
    assert (isolated.lease.run_id, isolated.isolated) == (ids[0], True)
    assert not await woken(raw, keys)


def leave(run: ClaimedRun, how: str) -> Finish:
    if how == "retry later":
        return Finish(run.lease, "retry", error='{"type": "E"}', retry_at=NOW + 60)
    if how == "suspend":
        return Finish(run.lease, "suspend", wake_at=NOW + 60)
    return Finish(run.lease, how, output="1", error='{"type": "E"}')  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["succeeded", "failed", "canceled", "retry later", "suspend"])
async def test_a_run_leaving_a_limited_queue_wakes_it_if_runs_wait(
    redis_backend: RedisBackend, raw: Redis, keys: Keys, how: str
) -> None:
    await redis_backend.set_queue(Q, max_parallelism=1)
    await enqueue(redis_backend, 2)
    [running] = await claim(redis_backend, 5)
    await woken(raw, keys)
    assert await redis_backend.finish([leave(running, how)], NOW + 2) == [True]
    assert await woken(raw, keys)
    [last] = await claim(redis_backend, 5, now=NOW + 2)
    assert await redis_backend.finish([leave(last, how)], NOW + 3) == [True]
    # Nothing left to claim; a retry wakes its queue anyway (idle workers learn when).
    assert await woken(raw, keys) == (how == "retry later")


async def test_a_released_or_reaped_run_with_a_cancel_request_wakes_its_limited_queue(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.set_queue(Q, max_parallelism=1)
    await enqueue(redis_backend, 3)
    [first] = await claim(redis_backend, 5)
    assert await redis_backend.cancel(first.lease.run_id, None, NOW + 1) == "requested"
    await woken(raw, keys)
    await redis_backend.release([first.lease], NOW + 2)  # ends canceled
    assert await woken(raw, keys)
    [second] = await claim(redis_backend, 5, now=NOW + 2)
    assert await redis_backend.cancel(second.lease.run_id, None, NOW + 2) == "requested"
    [third] = await claim(redis_backend, 5, now=NOW + 20)  # reaped: ends canceled
    assert third.lease.run_id == "q-2"
    assert not await woken(raw, keys)  # the claim took the room the reap made


async def test_a_claim_that_takes_the_last_runs_wakes_nobody(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await enqueue(redis_backend, 2)
    await woken(raw, keys)
    assert len(await claim(redis_backend, 2)) == 2  # room is left, but no run
    assert not await woken(raw, keys)


async def test_runs_leaving_an_unlimited_queue_wake_nobody(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await enqueue(redis_backend, 3)
    running = await claim(redis_backend, 2)
    await woken(raw, keys)  # the claim left a run behind and woke another worker
    ended = [Finish(run.lease, "succeeded", output="1") for run in running]
    assert await redis_backend.finish(ended, NOW + 2) == [True, True]
    assert not await woken(raw, keys)


async def test_a_paused_limited_queue_is_not_woken_by_runs_leaving_it(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.set_queue(Q, max_parallelism=1)
    await enqueue(redis_backend, 2)
    [running] = await claim(redis_backend, 5)
    await redis_backend.set_queue(Q, paused=True)
    await woken(raw, keys)
    assert await redis_backend.finish([leave(running, "succeeded")], NOW + 2) == [True]
    assert not await woken(raw, keys)


SettingsChange = tuple[int | EllipsisType | None, bool | None]


@pytest.mark.parametrize(
    ("before", "change", "running", "expected"),
    [
        ((None, True), (..., False), 0, True),  # resumed
        ((2, True), (..., False), 0, True),
        ((1, False), (2, None), 1, True),  # raised, with room
        ((1, False), (None, None), 1, True),  # removed
        ((0, False), (1, None), 0, True),
        ((2, False), (1, None), 0, False),  # lowered
        ((None, False), (1, None), 0, False),  # a limit set
        ((None, False), (..., True), 0, False),  # paused
        ((1, True), (2, None), 0, False),  # raised, still paused
        ((2, False), (3, None), 3, False),  # raised, still full (it was lowered earlier)
    ],
)
async def test_a_change_wakes_the_queue_when_more_runs_may_start(
    redis_backend: RedisBackend,
    raw: Redis,
    keys: Keys,
    before: SettingsChange,
    change: SettingsChange,
    running: int,
    expected: bool,
) -> None:
    await enqueue(redis_backend, running + 1)
    assert len(await claim(redis_backend, running)) == running
    await redis_backend.set_queue(Q, max_parallelism=before[0], paused=before[1])
    await woken(raw, keys)
    await redis_backend.set_queue(Q, max_parallelism=change[0], paused=change[1])
    assert await woken(raw, keys) == expected


async def test_a_change_wakes_nobody_when_no_run_is_claimable(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.set_queue(Q, paused=True)
    await redis_backend.set_queue(Q, paused=False)
    assert not await woken(raw, keys)


async def test_declared_defaults_wake_nobody_once_the_queue_has_settings(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await enqueue(redis_backend, 1)
    await redis_backend.set_queue(Q, paused=True)
    await woken(raw, keys)
    await redis_backend.set_queue(Q, paused=False, only_if_new=True)
    assert not await woken(raw, keys)
    assert await redis_backend.get_queue(Q) == QueueSettings(Q, None, True)


async def commands_by_name(raw: Redis, operation: Awaitable[Any]) -> tuple[Any, Counter[str]]:
    """The result of ``operation`` and the commands Redis ran inside the scripts it
    called, by name."""
    await raw.config_resetstat()
    result = await operation
    stats: dict[str, dict[str, int]] = await raw.info("commandstats")
    counted = Counter[str]()
    for name, stat in stats.items():
        command = name.removeprefix("cmdstat_")
        if not command.startswith(NOT_RUN_BY_SCRIPTS):
            counted[command] = stat["calls"]
    return result, counted


CLAIM_WITHOUT_SETTINGS = Counter(
    # The first entries of scheduled, leases and deadlines (ZRANGE each: nothing due, and
    # the next wake time); the served workflows' heads (ZRANGE heads); take one run (ZPOPMIN
    # ready, HMGET, HSET); keep the head exact (ZRANGE ready finds none left: ZREM
    # heads); its list entry moves (ZREM, ZADD) and it is leased (ZADD leases). Nothing
    # is left to claim: no wake-up. Runs set aside as corrupt and not yet reported: one
    # LPOP (none here).
    lpop=1,
    zrange=5,
    zpopmin=1,
    hmget=1,
    hset=1,
    zrem=2,
    zadd=2,
)
FINISH_WITHOUT_SETTINGS = Counter(
    # HMGET, HSET (with its run time and spent token), ZREM leases and cancelable; its
    # list entry moves (ZREM, ZADD), it joins the finished set (ZADD).
    hmget=1,
    hset=1,
    zrem=3,
    zadd=2,
)
"""What finishing one run costs without queue settings or counters."""
COUNTERS_OF_A_MINUTE = Counter(hmget=2, hset=2)
"""What a finish call adds per minute, whatever its number of runs and pairs: one HMGET
of the counters it adds to (timed, succeeded, run_time of each pair), one HSET, and the
same for the minute's hour."""
NEW_MINUTE = Counter(zadd=2, expire=2)
"""What the first counters of a minute (of a new hour) add, once per call: it records
the minute in the minutes set and the hour in the hours set (ZADD), and each being new,
sets its hash's TTL."""


@pytest.mark.parametrize("limited", [False, True])
async def test_settings_cost_a_few_commands_per_queue_per_call_not_per_run(
    redis_backend: RedisBackend, raw: Redis, limited: bool
) -> None:
    """An unlimited queue pays one HMGET of its settings per claim and per finish batch;
    a limited one also counts its running runs (ZCARD of its leases set) and, when runs
    left it, reads the heads of the workflows with claimable runs (one ZRANGE of its
    heads, at most 16 of them) to wake their pairs."""
    if limited:
        await redis_backend.set_queue(Q, max_parallelism=5)
    await enqueue(redis_backend, 1)
    claimed, cost = await commands_by_name(raw, claim(redis_backend, 1))
    assert cost == CLAIM_WITHOUT_SETTINGS + Counter(hmget=1, zcard=int(limited))
    ended = redis_backend.finish([leave(claimed[0], "succeeded")], NOW + 2)
    _, cost = await commands_by_name(raw, ended)
    assert cost == (
        FINISH_WITHOUT_SETTINGS
        + COUNTERS_OF_A_MINUTE
        + NEW_MINUTE
        + Counter(hmget=1, zcard=int(limited), zrange=int(limited))
    )


async def test_a_finish_batch_reads_each_queues_settings_once(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.set_queue("limited", max_parallelism=50)
    running = []
    for queue in ("free", "limited"):
        await enqueue(redis_backend, 11, queue)
        running += await claim(redis_backend, 10, queue=queue)
        await woken(raw, keys, queue)  # the claim left a run behind: a token
    ended = redis_backend.finish([leave(run, "succeeded") for run in running], NOW + 2)
    per_run = Counter(hmget=20, hset=20)
    # Per queue: ZREM leases, the pair's list move (ZREM, ZADD); once: ZREM cancelable
    # (one workflow), ZADD finished.
    indexes = Counter(zrem=2 * 2 + 1, zadd=2 + 1)
    # One HMGET per queue; the limited queue: ZCARD leases, ZRANGE heads, then LLEN and
    # RPUSH of its one workflow's signal list (a run is left to claim: the wake).
    _, cost = await commands_by_name(raw, ended)
    wake = Counter(hmget=2, zcard=1, zrange=1, llen=1, rpush=1)
    assert cost == per_run + indexes + COUNTERS_OF_A_MINUTE + NEW_MINUTE + wake


LONG_WAIT = 8.0


@pytest.mark.parametrize("change", ["a run leaves", "the queue is resumed"])
async def test_an_idle_worker_blocked_on_a_full_queue_wakes_when_room_is_made(
    redis_backend: RedisBackend, raw: Redis, keys: Keys, backend_url: str, change: str
) -> None:
    """As the conformance tests, but with no token left over from the enqueue, so the
    wait really blocks until the change."""
    other = await RedisBackend.open(backend_url, prefix=PREFIX)
    try:
        await enqueue(redis_backend, 2)
        await redis_backend.set_queue(Q, max_parallelism=1)
        [running] = await claim(other, 5)
        if change == "the queue is resumed":
            await redis_backend.set_queue(Q, paused=True)
        assert await claim(redis_backend, 5) == []
        await woken(raw, keys)
        started = time.monotonic()
        waiting = asyncio.create_task(redis_backend.wait_for_work([Q], LONG_WAIT, workflows=[WF]))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        if change == "a run leaves":
            assert await other.finish([leave(running, "succeeded")], NOW + 2) == [True]
        else:
            await other.set_queue(Q, paused=False, max_parallelism=2)
        await waiting
        assert time.monotonic() - started < LONG_WAIT / 2
    finally:
        await other.close()
