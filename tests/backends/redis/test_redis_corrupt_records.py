"""Every script that reads a run hash survives a corrupt one (issue 23, defect 3).

A run hash is corrupted for real with the raw client (a field deleted or malformed, the
key not a hash); then each operation that meets it sets it aside and serves every other
run of the call: a batch (finish, renew, release, cancel_many, fail_unserved, a gate's
admissions) applies its other entries, an operation on the bad run alone raises
CorruptRecordError naming it (cancel, rerun, send_event, get_event) or treats its lease
as lost (save_step, take_event, set_event), and readers (stats, purge) go on. The next
claim reports it, once. tests/conformance/test_corrupt_records.py covers claims.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from redis.asyncio import Redis
from tests.backends.redis.conftest import PREFIX
from tests.conformance.helpers import new_run

from workpool.backends.base import ClaimedRun, Enqueued, Finish, NewRun, StepRecord
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys
from workpool.errors import CorruptRecordError

NOW = 1_700_000_000.0
KEYS = Keys(PREFIX)
CORRUPTIONS = [
    ("started_at", "soon"),
    ("attempts", ""),
    ("queue", None),
    ("hooks", "[1]"),
    ("*", "string"),
]


async def spoil(raw: Redis, run_id: str, field: str, value: str | None) -> None:
    """Corrupt a run hash: set or delete a field, or (field '*') make the key a string."""
    key = KEYS.run(run_id)
    if field == "*":
        await raw.delete(key)
        await raw.set(key, "not a hash")
    elif value is None:
        await raw.hdel(key, field)
    else:
        await raw.hset(key, field, value)


async def running(backend: RedisBackend, count: int, **fields: object) -> list[ClaimedRun]:
    runs = [new_run(NOW, run_id=f"run-{index}", **fields) for index in range(count)]  # type: ignore[arg-type]
    await backend.enqueue(runs, NOW)
    claimed = (await backend.claim(["default"], "worker", count, 30.0, 3, NOW)).runs
    assert len(claimed) == count
    return sorted(claimed, key=lambda run: run.lease.run_id)


async def reported(backend: RedisBackend) -> list[str]:
    """The runs the next claim reports set aside."""
    result = await backend.claim(["default"], "worker", 0, 30.0, 3, NOW + 1)
    return [entry.run_id for entry in result.set_aside]


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_finish_applies_the_other_entries_of_its_batch(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    first, bad, last = await running(redis_backend, 3)
    await spoil(raw, "run-1", field, value)

    finishes = [Finish(run.lease, "succeeded", output="1") for run in (first, bad, last)]
    assert await redis_backend.finish(finishes, NOW + 1) == [True, False, True]

    assert await reported(redis_backend) == ["run-1"]
    assert await reported(redis_backend) == []
    for run_id in ("run-0", "run-2"):
        record = await redis_backend.get_run(run_id)
        assert record is not None
        assert record.status == "succeeded"


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_renew_and_release_lose_the_bad_lease_and_keep_the_others(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    good, bad = await running(redis_backend, 2)
    await spoil(raw, "run-1", field, value)

    renewed = await redis_backend.renew([good.lease, bad.lease], 30.0, NOW + 1)
    assert renewed.lost == frozenset({"run-1"})
    await redis_backend.release([good.lease, bad.lease], NOW + 2)

    record = await redis_backend.get_run("run-0")
    assert record is not None
    assert record.status == "queued"
    assert await reported(redis_backend) == ["run-1"]


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_the_lease_holders_step_writes_are_refused(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    (held,) = await running(redis_backend, 1)
    await spoil(raw, "run-0", field, value)
    step = StepRecord("nap", "sleep", "waiting", 1, NOW, wake_at=NOW + 9)

    assert await redis_backend.save_step(held.lease, step, NOW) is None
    assert await redis_backend.take_event(held.lease, step, "key", NOW) is None
    assert await redis_backend.set_event(held.lease, "key", "1") is False
    assert await reported(redis_backend) == ["run-0"]


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_operations_on_the_bad_run_raise_corrupt_record(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    await redis_backend.enqueue([new_run(NOW, run_id="bad")], NOW)
    await spoil(raw, "bad", field, value)
    named = "bad.*(not a hash)" if field == "*" else f"bad.*'{field}'"

    with pytest.raises(CorruptRecordError, match=named):
        await redis_backend.cancel("bad", "stop", NOW)
    with pytest.raises(CorruptRecordError, match=named):
        await redis_backend.send_event("bad", "key", "1", NOW)
    with pytest.raises(CorruptRecordError, match=named):
        await redis_backend.rerun("bad", "bad-again", NOW)
    with pytest.raises(CorruptRecordError, match="bad"):
        await redis_backend.get_run("bad")
    assert await reported(redis_backend) == ["bad"]


async def test_get_event_of_a_key_that_is_not_a_hash_raises_corrupt_record(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    await redis_backend.enqueue([new_run(NOW, run_id="bad")], NOW)
    await spoil(raw, "bad", "*", "string")

    with pytest.raises(CorruptRecordError, match=r"bad.*not a hash"):
        await redis_backend.get_event("bad", "key")


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_cancel_many_and_fail_unserved_pass_over_the_bad_run(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    runs = [new_run(NOW - 3 + index, run_id=f"run-{index}") for index in range(3)]
    await redis_backend.enqueue(runs, NOW)
    await redis_backend.enqueue(
        [new_run(NOW, run_id=f"other-{n}", workflow="w2") for n in range(3)], NOW
    )
    await spoil(raw, "run-1", field, value)
    await spoil(raw, "other-0", field, value)

    assert await redis_backend.cancel_many(None, "send_email", "stop", 10, NOW) == 2
    error = '{"type": "Unserved", "message": "no worker", "traceback": null}'
    assert await redis_backend.fail_unserved("default", "w2", NOW + 1, 10, error, NOW) == 2

    assert sorted(await reported(redis_backend)) == ["other-0", "run-1"]
    for run_id, status in (("run-0", "canceled"), ("run-2", "canceled"), ("other-1", "failed")):
        record = await redis_backend.get_run(run_id)
        assert record is not None
        assert record.status == status


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_a_gate_admits_the_run_after_a_corrupt_one_waiting(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    (holder,) = await running(redis_backend, 1, max_concurrency=1)
    waiting = [new_run(NOW + n, run_id=f"wait-{n}", max_concurrency=1) for n in (1, 2)]
    await redis_backend.enqueue(waiting, NOW + 2)
    await spoil(raw, "wait-1", field, value)

    assert await redis_backend.finish([Finish(holder.lease, "succeeded", output="1")], NOW + 3)
    result = await redis_backend.claim(["default"], "worker", 5, 30.0, 3, NOW + 3)

    assert [run.lease.run_id for run in result.runs] == ["wait-2"]
    assert [entry.run_id for entry in result.set_aside] == ["wait-1"]


async def test_a_held_gate_place_of_a_run_set_aside_is_freed(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    (holder,) = await running(redis_backend, 1, max_concurrency=1)
    await redis_backend.enqueue([new_run(NOW + 1, run_id="next", max_concurrency=1)], NOW + 1)
    await spoil(raw, holder.lease.run_id, "started_at", "soon")

    await redis_backend.renew([holder.lease], 30.0, NOW + 2)  # sets it aside
    result = await redis_backend.claim(["default"], "worker", 5, 30.0, 3, NOW + 2)

    assert [run.lease.run_id for run in result.runs] == ["next"]


@pytest.mark.parametrize(("field", "value"), CORRUPTIONS)
async def test_readers_and_housekeeping_go_on(
    redis_backend: RedisBackend, raw: Redis, field: str, value: str | None
) -> None:
    (done, queued) = [new_run(NOW, run_id=run_id) for run_id in ("done", "queued")]
    await redis_backend.enqueue([done, queued], NOW)
    await redis_backend.cancel("done", None, NOW)
    await spoil(raw, "queued", field, value)
    await spoil(raw, "done", field, value)

    await redis_backend.get_stats(NOW - 60, NOW)
    assert await redis_backend.purge(NOW + 1, 10, NOW - 3600) in (0, 1)
    page = await redis_backend.list_runs(None, None, None, 10, None)
    # A listing leaves out what it cannot read; bad hooks only a script sees.
    assert [run.id for run in page.runs] == (["queued"] if field == "hooks" else [])


async def test_a_debounced_run_gone_corrupt_is_set_aside_and_a_new_run_stored(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    def debounced(run_id: str) -> NewRun:
        return replace(new_run(NOW + 10, run_id=run_id), debounce_key="k", debounce_until=NOW + 60)

    await redis_backend.enqueue([debounced("first")], NOW)
    await spoil(raw, "first", "available_at", "soon")

    assert await redis_backend.enqueue([debounced("second")], NOW + 1) == [Enqueued("second", True)]
    assert await reported(redis_backend) == ["first"]
