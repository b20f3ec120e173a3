"""Listing, counters, retention and re-runs on Redis: one script call each, a cost that
does not grow with the runs stored, per-minute counter keys that expire, and pair names
that keep (queue, workflow) apart whatever ':' they hold."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.backends.redis.test_redis_backend import CommandCounter

from workpool.backends.base import ACTIVE_STATES, Finish, NewRun, PairActivity, Rerun
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, pair, split_pair

NOW = 1_700_000_000.123456
MINUTE = int(NOW // 60) * 60
WORKFLOWS = ("send", "bill")
MARKER = "end-of-operation"


def a_run(run_id: str, workflow: str = "send", queue: str = "q") -> NewRun:
    return NewRun(id=run_id, workflow=workflow, queue=queue, input="{}", available_at=NOW)


async def grow_store(backend: RedisBackend, first: int, count: int) -> None:
    """Add ``count`` runs of two workflows, ids from ``first`` on: a third stays queued,
    a third running, a third succeeds."""
    runs = [a_run(f"run-{i:06d}", WORKFLOWS[i % 2]) for i in range(first, first + count)]
    await backend.enqueue(runs, NOW)
    claimed = (await backend.claim(["q"], "w", count * 2 // 3, 30, 3, NOW)).runs
    ended = [Finish(run.lease, "succeeded", output="1") for run in claimed[: count // 3]]
    assert await backend.finish(ended, NOW + 1) == [True] * len(ended)


async def script_commands(raw: Redis, operation: Awaitable[Any]) -> tuple[Any, list[list[str]]]:
    """The result of ``operation`` and every command the scripts ran for it (MONITOR
    shows them with their arguments), each as its words."""
    commands: list[list[str]] = []
    async with raw.monitor() as monitor:
        result = await operation
        await raw.echo(MARKER)
        while (seen := await monitor.next_command())["command"] != f"ECHO {MARKER}":
            if seen["client_type"] == "lua":
                commands.append(seen["command"].split(" "))
    return result, commands


def names(commands: list[list[str]]) -> list[str]:
    return sorted(command[0].upper() for command in commands)


async def test_the_new_operations_are_one_script_call_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await grow_store(redis_backend, 0, 3)
    counter = CommandCounter(redis_backend, monkeypatch)
    assert len((await redis_backend.list_runs(None, None, None, 10, None)).runs) == 3
    assert counter.take() == ["EVALSHA"]
    assert (await redis_backend.get_stats(NOW, NOW)).activity
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.rerun("run-000000", "new", NOW) == Rerun("succeeded")
    assert counter.take() == ["EVALSHA"]
    assert await redis_backend.purge(NOW + 2, 10, 0.0) == 1
    assert counter.take() == ["EVALSHA"]


@pytest.mark.parametrize(
    "page",
    [
        {},
        {"cursor": "run-000050"},
        {"status": "queued"},
        {"workflow": "bill"},
        {"status": "succeeded", "workflow": "send", "queue": "q"},
    ],
    ids=["newest", "after a cursor", "by status", "by workflow", "every filter"],
)
async def test_a_page_costs_the_same_with_100_or_2000_runs(
    redis_backend: RedisBackend, raw: Redis, page: dict[str, str]
) -> None:
    """Whatever the runs stored, a page of 10 runs the same commands: the pairs, one
    ZREVRANGEBYLEX of at most 10 ids per matching (pair, status), an HGETALL per run."""
    costs = []
    for first, count in ((0, 100), (100, 1900)):
        await grow_store(redis_backend, first, count)
        listing = redis_backend.list_runs(
            page.get("status"), page.get("workflow"), page.get("queue"), 10, page.get("cursor")
        )
        result, commands = await script_commands(raw, listing)
        assert len(result.runs) == 10
        assert names(commands).count("HGETALL") == 10
        for command in commands:
            if command[0].upper() == "ZREVRANGEBYLEX":
                assert command[-3:] == ["LIMIT", "0", "10"], command
            else:
                assert command[0].upper() in ("SMEMBERS", "HGETALL"), command
        costs.append(names(commands))
    assert costs[0] == costs[1]


async def test_stats_cost_the_same_with_100_or_2000_runs(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    """The pairs, a ZCARD per active state per pair, the minutes asked for and one
    HGETALL per minute, each queue's heads (one entry per workflow with claimable runs),
    the first run of each of those workflows and its available_at, and the worker
    records: nothing per run."""
    costs, active = [], 0
    ready = {keys.ready("q", workflow) for workflow in WORKFLOWS}
    for first, count in ((0, 100), (100, 1900)):
        await grow_store(redis_backend, first, count)
        active += count - count // 3
        stats, commands = await script_commands(raw, redis_backend.get_stats(NOW - 600, NOW + 60))
        assert sum(each.queued + each.running for each in stats.activity) == active
        for command in commands:
            if command[0].upper() == "ZRANGE":
                heads = command[1:] == [keys.heads("q"), "0", "-1"]
                assert heads or (command[1] in ready and command[2:] == ["0", "0"]), command
            elif command[0].upper() == "HGET":
                assert command[2] == "available_at", command
        costs.append(names(commands))
    assert costs[0] == costs[1]
    head_count = await raw.zcard(keys.heads("q"))
    assert head_count >= 1
    assert costs[1] == sorted(
        [
            "SMEMBERS",
            *["ZCARD"] * len(ACTIVE_STATES) * len(WORKFLOWS),
            "ZRANGEBYSCORE",
            "HGETALL",
            "ZRANGE",
            *["ZRANGE", "HGET"] * head_count,
            "HVALS",
        ]
    )


async def test_a_minutes_counters_expire_and_purge_deletes_them(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    """A minute's hash gets a TTL when it is made (an abandoned minute vanishes); only
    purge takes minutes out of the minutes set, so it finds every hash to delete."""
    await grow_store(redis_backend, 0, 3)  # a run succeeds at NOW + 1
    assert await raw.zrange(keys.stats_minutes(), 0, -1) == [str(MINUTE)]
    assert 0 < await raw.ttl(keys.stats(MINUTE)) <= 25 * 3600
    assert await raw.hgetall(keys.stats(MINUTE)) == {
        f"{counter}:{pair('q', 'send')}": value
        for counter, value in (("timed", "1"), ("run_time", "1"), ("succeeded", "1"))
    }
    later = NOW + 26 * 3600  # the caller's clock: the first hash has not expired yet
    await redis_backend.enqueue([a_run("later")], later)
    assert await redis_backend.cancel("later", None, later) == "canceled"
    later_minute = int(later // 60) * 60
    assert await raw.zrange(keys.stats_minutes(), 0, -1) == [str(MINUTE), str(later_minute)]
    assert 0 < await raw.ttl(keys.stats(later_minute)) <= 25 * 3600
    # Written again, a minute keeps the TTL it got when it was made.
    await raw.expire(keys.stats(later_minute), 100)
    await redis_backend.enqueue([a_run("again")], later)
    assert await redis_backend.cancel("again", None, later) == "canceled"
    assert await raw.ttl(keys.stats(later_minute)) <= 100

    assert await redis_backend.purge(NOW, 10, later_minute) == 0
    assert await raw.exists(keys.stats(MINUTE)) == 0
    assert await raw.zrange(keys.stats_minutes(), 0, -1) == [str(later_minute)]
    assert await redis_backend.purge(NOW, 10, later_minute + 60) == 0
    assert await raw.exists(keys.stats(later_minute)) == 0
    assert await raw.zcard(keys.stats_minutes()) == 0


async def test_names_with_colons_keep_pairs_apart(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    layout = {"r1": ("a:b", "c"), "r2": ("a", "b:c"), "r3": ("é:a", "b"), "r4": ("é", "a:b")}
    for run_id, (queue, workflow) in layout.items():
        await redis_backend.enqueue([a_run(run_id, workflow, queue)], NOW)
    for run_id, (queue, workflow) in layout.items():
        page = await redis_backend.list_runs(None, workflow, queue, 10, None)
        assert [run.id for run in page.runs] == [run_id]
        assert [
            run.id for run in (await redis_backend.list_runs(None, None, queue, 10, None)).runs
        ] == [run_id]
        assert split_pair(pair(queue, workflow)) == (queue, workflow)
    assert len(await raw.smembers(keys.pairs())) == 4
    activity = (await redis_backend.get_stats(NOW, NOW)).activity
    assert activity == sorted(
        (PairActivity(queue, workflow, 0, 1, 0, 0) for queue, workflow in layout.values()),
        key=lambda each: (each.queue, each.workflow),
    )


async def test_a_page_merges_ids_byte_by_byte(redis_backend: RedisBackend) -> None:
    """Ids of different pairs merge in byte order, as Redis orders each index (Lua's own
    string comparison would follow the server's collation locale)."""
    ids = ["B-2", "a-1", "_-3", "b-4", "A-5", "é-6", "Z-7"]
    for index, run_id in enumerate(ids):
        await redis_backend.enqueue([a_run(run_id, WORKFLOWS[index % 2])], NOW)
    page = await redis_backend.list_runs(None, None, None, 10, None)
    expected = sorted(ids, key=lambda run_id: run_id.encode(), reverse=True)
    assert [run.id for run in page.runs] == expected
    second = await redis_backend.list_runs(None, None, None, 3, expected[2])
    assert [run.id for run in second.runs] == expected[3:6]
    assert second.cursor == expected[5]


async def test_empty_names_and_cursors_are_names_and_cursors(
    redis_backend: RedisBackend,
) -> None:
    await redis_backend.enqueue([a_run("r1", "", "q"), a_run("r2", "send", "q")], NOW)
    page = await redis_backend.list_runs(None, "", None, 10, None)
    assert [run.id for run in page.runs] == ["r1"]
    assert (await redis_backend.list_runs(None, None, None, 10, "")).runs == []
    assert (await redis_backend.list_runs(None, None, None, 0, None)).runs == []


async def test_a_rerun_to_an_existing_id_changes_nothing(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.enqueue([a_run("old"), a_run("taken")], NOW)
    assert await redis_backend.cancel("old", None, NOW) == "canceled"
    before = await raw.hgetall(keys.run("old"))
    with pytest.raises(ValueError, match="a run with that id exists"):
        await redis_backend.rerun("old", "taken", NOW)
    assert await raw.hgetall(keys.run("old")) == before
