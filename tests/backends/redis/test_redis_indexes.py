"""After any mix of operations, every Redis index agrees with the runs' statuses."""

from __future__ import annotations

import uuid
from typing import cast

from redis.asyncio import Redis
from redis.crc import key_slot

from workpool.backends.base import CompletionHook, Finish, NewRun
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys

QUEUES = ("default", "slow:lane")
WORKFLOWS = ("send_email", "send:sms")
NOW = 1_700_000_000.123456


def a_run(index: int, available_at: float) -> NewRun:
    hook = CompletionHook(
        workflow="notify", queue="default", context="{}", retry=None, on_failure_only=False
    )
    return NewRun(
        id=f"run-{index}-{uuid.uuid4().hex[:6]}",
        workflow=WORKFLOWS[index % 2],
        queue=QUEUES[index % 2],
        input=f'{{"index": {index}}}',
        available_at=available_at,
        hooks=(hook,) if index % 3 == 0 else (),
        idempotency_key=f"key-{index}" if index % 4 == 0 else None,
    )


async def mixed_history(backend: RedisBackend) -> None:
    """Enqueue, claim, renew, finish every way, release, cancel, reap."""
    runs = [a_run(i, NOW + (60 if i % 5 == 0 else 0)) for i in range(40)]
    await backend.enqueue(runs, NOW)
    claimed = (await backend.claim(QUEUES, "worker-a", 12, 30, 2, NOW)).runs
    leases = [run.lease for run in claimed]
    await backend.renew(leases[:4], 30, NOW + 1)
    await backend.cancel(claimed[0].lease.run_id, "stop", NOW + 1)
    statuses = ["succeeded", "failed", "canceled", "retry", "retry"]
    finishes = [
        Finish(lease=lease, status=status, output="1", error='{"type": "E"}', retry_at=NOW + 5)  # type: ignore[arg-type]
        for lease, status in zip(leases[:5], statuses, strict=True)
    ]
    await backend.finish(finishes, NOW + 2)
    await backend.release(leases[5:7], NOW + 2)
    await backend.cancel(runs[1].id, None, NOW + 2)
    await backend.cancel_many(None, WORKFLOWS[1], "sweep", 3, NOW + 2)
    await backend.claim(QUEUES, "worker-b", 3, 10, 2, NOW + 3)
    # Leases of worker-a (left running) and worker-b expire: reaped, some fail.
    await backend.claim(QUEUES, "worker-c", 2, 10, 2, NOW + 100)
    await backend.claim(QUEUES, "worker-c", 0, 10, 2, NOW + 200)
    later = [a_run(i, NOW + 200 + (60 if i % 2 else 0)) for i in range(40, 46)]
    await backend.enqueue(later, NOW + 200)
    last = (await backend.claim(QUEUES, "worker-d", 2, 10, 2, NOW + 200)).runs
    await backend.cancel(last[0].lease.run_id, None, NOW + 200)


async def all_runs(raw: Redis, keys: Keys) -> dict[str, dict[str, str]]:
    """Every run hash, by id (a full scan: test code only)."""
    runs: dict[str, dict[str, str]] = {}
    async for key in raw.scan_iter(match=keys.run("*")):
        fields = cast(dict[str, str], await raw.hgetall(key))
        runs[fields["id"]] = fields
    return runs


async def members(raw: Redis, key: str) -> set[str]:
    return set(cast(list[str], await raw.zrange(key, 0, -1)))


async def expected_and_actual_indexes(
    raw: Redis, keys: Keys, runs: dict[str, dict[str, str]]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    expected: dict[str, set[str]] = {}
    for queue in {run["queue"] for run in runs.values()}:
        for name in ("ready", "scheduled", "leases"):
            expected[getattr(keys, name)(queue)] = set()
    for workflow in {run["workflow"] for run in runs.values()}:
        expected[keys.workflow_cancelable(workflow)] = set()
    index_of_status = {"queued": keys.ready, "scheduled": keys.scheduled, "running": keys.leases}
    for run_id, run in runs.items():
        if run["status"] in index_of_status:
            expected[index_of_status[run["status"]](run["queue"])].add(run_id)
            if run["cancel_requested"] != "1":
                expected[keys.workflow_cancelable(run["workflow"])].add(run_id)
    actual = {key: await members(raw, key) for key in expected}
    return expected, actual


async def test_every_index_agrees_with_run_statuses(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    runs = await all_runs(raw, keys)
    statuses = {run["status"] for run in runs.values()}
    assert statuses >= {"queued", "scheduled", "running", "succeeded", "failed", "canceled"}
    expected, actual = await expected_and_actual_indexes(raw, keys, runs)
    assert actual == expected
    assert await raw.smembers(keys.workflows()) == {run["workflow"] for run in runs.values()}
    for run_id, run in runs.items():
        assert ("lease_token" in run) == (run["status"] == "running"), run_id
        assert ("finished_at" in run) == (run["status"] in ("succeeded", "failed", "canceled"))


async def test_scores_are_available_at_and_created_at(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    for run_id, run in (await all_runs(raw, keys)).items():
        if run["status"] == "queued":
            score = await raw.zscore(keys.ready(run["queue"]), run_id)
            assert score == float(run["available_at"])
        if run["status"] in ("queued", "scheduled") or run["cancel_requested"] == "0":
            score = await raw.zscore(keys.workflow_cancelable(run["workflow"]), run_id)
            assert score in (None, float(run["created_at"]))


async def test_every_key_shares_one_hash_tag(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    stored = [key async for key in raw.scan_iter()]
    assert stored
    assert all(key.startswith(keys.tag + ":") for key in stored)
    assert len({key_slot(key.encode()) for key in stored}) == 1


async def test_signal_lists_hold_at_most_one_token(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    runs = [a_run(i, NOW) for i in range(10)]
    await redis_backend.enqueue(runs, NOW)
    await redis_backend.enqueue([a_run(i, NOW) for i in range(10, 20)], NOW)
    for queue in QUEUES:
        assert await raw.llen(keys.signal(queue)) == 1
