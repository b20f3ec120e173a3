"""Concurrency gates on Redis: gate ids, argument layout, what a gate leaves behind, and
how many commands a run costs inside the scripts, gated or not."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_backend import CommandCounter

from workpool.backends.base import Finish, GateSpec, NewRun, RateLimitSpec
from workpool.backends.redis import codec, sources
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, gate_id

NOW = 1_700_000_000.123456
NOT_RUN_BY_SCRIPTS = ("evalsha", "config", "info")
"""Commands counted by INFO commandstats that the scripts do not run themselves."""


def a_run(run_id: str, queue: str = "q", **fields: Any) -> NewRun:
    return NewRun(id=run_id, workflow="wf", queue=queue, input="{}", available_at=NOW, **fields)


def test_gate_ids_keep_workflow_and_key_apart() -> None:
    assert gate_id("send:sms", "a:b") != gate_id("send", "sms:a:b")
    assert gate_id("send:sms", None) != gate_id("send", "sms")
    assert gate_id("a", None) != gate_id("a", "")
    assert gate_id("é", "k") == "2:é:k"  # the length counts bytes, as Lua's # does


def test_runs_travel_as_run_fields_values_each() -> None:
    lua = sources.read_lua("library/enqueueing.lua")
    match = re.search(r"^local RUN_FIELDS = (\d+)$", lua, re.MULTILINE)
    assert match is not None
    assert int(match.group(1)) == codec.RUN_FIELDS
    gated = a_run("g", max_concurrency=2, concurrency_key="k")
    limited = replace(gated, rate_limits=(RateLimitSpec("l", 2, 10),))
    for run in (a_run("plain"), gated, limited):
        assert len(codec.encode_runs([run], NOW)) == codec.RUN_FIELDS

    # max_concurrency, concurrency key, the rate limits, the timeout, the rank, the
    # debounce key and its latest start, the trace context, the deadline, the shared
    # gates (the last field)
    def tail(run: NewRun) -> list[str]:
        return codec.encode_runs([run], NOW)[-11:-3]

    assert tail(gated)[-8:-5] == ["2", ":k", ""]
    assert tail(replace(gated, concurrency_key=""))[-8:-6] == ["2", ":"]
    assert codec.encode_runs([a_run("plain")], NOW)[-11:] == [""] * 11
    assert tail(limited)[-6] == '[["l",2,10.0]]'
    assert tail(replace(gated, timeout=1.5))[-5] == "1.5"
    urgent = replace(gated, priority=-3, rank_offset=-3 * 2.0**33)
    assert tail(urgent)[-4:-2] == ["-3", repr(-3 * 2.0**33)]
    debounced = replace(gated, debounce_key="k", debounce_until=NOW + 9)
    assert tail(debounced)[-2:] == ["k", repr(NOW + 9)]
    assert codec.encode_runs([replace(gated, trace_context="T")], NOW)[-3] == "T"
    assert codec.encode_runs([replace(gated, deadline=NOW + 5)], NOW)[-2] == repr(NOW + 5)
    shared = replace(gated, gates=(GateSpec("limit:1:p:", 3),))
    assert codec.encode_runs([shared], NOW)[-1] == '[["limit:1:p:",3]]'


async def test_an_idle_gate_leaves_nothing_behind(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    runs = [a_run(f"r{i}", max_concurrency=1, concurrency_key="k") for i in range(3)]
    await redis_backend.enqueue(runs, NOW)
    gate = gate_id("wf", "k")
    assert await raw.hgetall(keys.gates()) == {gate: "1"}
    assert await raw.zrange(keys.gate_waiting(gate), 0, -1) == ["r1", "r2"]
    await redis_backend.cancel("r2", None, NOW)  # waiting: it frees nothing
    assert await raw.hgetall(keys.gates()) == {gate: "1"}
    for _ in range(2):
        [run] = (await redis_backend.claim(["q"], "w", 5, 30, 3, NOW)).runs
        await redis_backend.finish([Finish(run.lease, "succeeded", output="1")], NOW)
    assert await raw.hgetall(keys.gates()) == {}
    assert await raw.exists(keys.gate_waiting(gate)) == 0


async def test_a_run_that_comes_back_at_once_waits_behind_the_runs_at_its_gate(
    redis_backend: RedisBackend,
) -> None:
    runs = [replace(a_run(f"r{i}", max_concurrency=1), available_at=NOW + i) for i in range(3)]
    await redis_backend.enqueue(runs, NOW + 5)
    later = NOW + 10
    [first] = (await redis_backend.claim(["q"], "w", 5, 30, 3, later)).runs
    retry = Finish(first.lease, "retry", error='{"type": "E"}', retry_at=later)
    assert await redis_backend.finish([retry], later) == [True]
    [second] = (await redis_backend.claim(["q"], "w", 5, 30, 3, later)).runs
    assert second.lease.run_id == "r1"
    resume = Finish(second.lease, "suspend", wake_at=later)
    assert await redis_backend.finish([resume], later) == [True]
    [third] = (await redis_backend.claim(["q"], "w", 5, 30, 3, later)).runs
    assert third.lease.run_id == "r2"
    assert (await redis_backend.claim(["q"], "w", 5, 30, 3, later)).runs == []
    for run_id in ("r0", "r1"):
        record = await redis_backend.get_run(run_id)
        assert record is not None
        assert (record.status, record.available_at) == ("queued", later)


async def test_gated_operations_are_one_script_call_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.enqueue([a_run("warm")], NOW)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    await redis_backend.enqueue([a_run(f"r{i}", max_concurrency=2) for i in range(5)], NOW)
    assert counter.take() == ["EVALSHA"]
    claimed = (await redis_backend.claim(["q"], "w", 10, 30, 3, NOW)).runs
    assert counter.take() == ["EVALSHA"]
    assert [run.lease.run_id for run in claimed] == ["r0", "r1", "warm"]
    ended = [Finish(run.lease, "succeeded", output="1") for run in claimed]
    assert await redis_backend.finish(ended, NOW) == [True] * 3
    assert counter.take() == ["EVALSHA"]


async def commands_run(raw: Redis, operation: Awaitable[Any]) -> tuple[Any, int]:
    """The result of ``operation`` and how many commands Redis ran for it, inside the
    scripts it called."""
    await raw.config_resetstat()
    result = await operation
    stats: dict[str, dict[str, int]] = await raw.info("commandstats")
    commands = sum(
        stat["calls"]
        for name, stat in stats.items()
        if not name.removeprefix("cmdstat_").startswith(NOT_RUN_BY_SCRIPTS)
    )
    return result, commands


class Costs:
    """The commands each step of a run's life costs, for one batch size."""

    def __init__(
        self, backend: RedisBackend, raw: Redis, keys: Keys, gated: bool, count: int, kind: str
    ):
        self.backend, self.raw, self.keys, self.count = backend, raw, keys, count
        self.queue = f"{kind}-{count}"
        self.limit = count if gated else None
        self.steps: dict[str, int] = {}

    async def measure(self, step: str, operation: Awaitable[Any]) -> Any:
        await self.raw.delete(self.keys.signal(self.queue, "wf"))  # no wake-up token left
        result, self.steps[step] = await commands_run(self.raw, operation)
        return result

    async def enqueue(self, step: str) -> None:
        runs = [
            a_run(f"{self.queue}-{step}{i}", self.queue, max_concurrency=self.limit)
            for i in range(self.count)
        ]
        await self.measure(step, self.backend.enqueue(runs, NOW))

    async def claim_and_finish(self, claimed: str, finished: str) -> None:
        claim = self.backend.claim([self.queue], "w", self.count, 30, 3, NOW)
        runs = (await self.measure(claimed, claim)).runs
        assert len(runs) == self.count
        ended = [Finish(run.lease, "succeeded", output="1") for run in runs]
        await self.measure(finished, self.backend.finish(ended, NOW))


async def costs_per_run(
    backend: RedisBackend, raw: Redis, keys: Keys, gated: bool, limited: bool = False
) -> dict[str, float]:
    """Commands each step costs per run: what a batch of 20 runs costs less what a batch
    of 10 costs, over 10 (what a batch costs once, such as waking a queue or reading its
    settings, cancels out). Gated, the limit is the batch size and twice as many runs
    are enqueued: half are admitted at once and half wait; each finish hands its place
    on, then frees it. Limited, the queue's max_parallelism is the batch size."""
    batches = []
    for count in (10, 20):
        kind = "gated" if gated else "limited" if limited else "plain"
        costs = Costs(backend, raw, keys, gated, count, kind)
        if limited:
            await backend.set_queue(costs.queue, max_parallelism=count)
        await costs.enqueue("enqueue")
        if gated:
            await costs.enqueue("enqueue, waits")
            await costs.claim_and_finish("claim", "finish, hands its place on")
            await costs.claim_and_finish("claim again", "finish")
        else:
            await costs.claim_and_finish("claim", "finish")
        batches.append(costs.steps)
    small, large = batches
    return {step: (large[step] - small[step]) / 10 for step in small}


async def warm_up_the_minute(backend: RedisBackend) -> None:
    """Finish a run at NOW, so the counters of NOW's minute exist: the first counter a
    minute gets also sets its TTL (counters.lua), once a minute."""
    await backend.enqueue([a_run("warm-minute", "warm-minute")], NOW)
    [run] = (await backend.claim(["warm-minute"], "w", 1, 30, 3, NOW)).runs
    assert await backend.finish([Finish(run.lease, "succeeded", output="1")], NOW) == [True]


async def test_a_run_costs_few_commands_inside_the_scripts(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    """A run's own hash costs it one HSET at enqueue and one HMGET and one HSET at claim
    and at finish (its run time and its spent lease token go in that HSET: no
    HINCRBYFLOAT, no HDEL). Everything else is per call, not per run: index writes
    (list moves, ready sets, heads, leases, cancelable, finished: deferred.lua) are one
    ZADD and one ZREM per key, the id check one EXISTS per batch, counters one HMGET and
    one HSET per minute, waking a pair (LLEN, RPUSH of its signal list) once per pair,
    taking runs one ZPOPMIN (or ZRANGEBYSCORE and ZREM) and the heads' upkeep per pair.
    A gated claim costs what an ungated one does. Queue settings cost nothing per run:
    claim and finish read them once per queue per call (one HMGET; a limited queue adds
    a ZCARD of its leases and a ZRANGE of its heads, see test_redis_queues.py), so a run
    in a limited queue costs what an unlimited one does. Before deferred index writes:
    enqueue 6, claim 6, finish 9; gated: enqueue 10, waits 6, claim 6, hands its place
    on 16, finish 12. Before listing and counters: enqueue 4, claim 3, finish 5."""
    await warm_up_the_minute(redis_backend)
    plain = {"enqueue": 1, "claim": 2, "finish": 2}  # HSET; HMGET, HSET; HMGET, HSET
    assert await costs_per_run(redis_backend, raw, keys, gated=False) == plain
    assert await costs_per_run(redis_backend, raw, keys, gated=False, limited=True) == plain
    assert await costs_per_run(redis_backend, raw, keys, gated=True) == {
        # + HGET of the gate's count, ZCARD of its waiting set, HMGET isolate and
        # rank_offset (a run that lost its lease goes back to its gate; a new one has
        # none), HSET count
        "enqueue": 5,
        "enqueue, waits": 3,  # HGET count, HSET, ZADD waiting
        "claim": 2,
        # finish's 2 + HDEL admitted, HGET count, ZPOPMIN of one waiting run, HMGET its
        # queue, workflow and available_at, HSET admitted, HMGET isolate and rank_offset
        # (the count does not change; the pair is woken once per call)
        "finish, hands its place on": 8,
        "claim again": 2,
        "finish": 6,  # + HDEL admitted, HGET count, ZPOPMIN finding nobody waiting, HSET count
    }
