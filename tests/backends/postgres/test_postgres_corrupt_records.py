"""The corruptions PostgreSQL's typed columns store (NaN, a time past year 9999), met in
every state a claim finds a run in: due from scheduled, expired while running, in a
finish batch. The conformance cases of those states write values its columns refuse,
so they are skipped here (tests/conformance/test_corrupt_records.py covers the queued
run); these take their place."""

from __future__ import annotations

import pytest
from tests.conformance.corrupting import corrupt
from tests.conformance.helpers import LEASE_SECONDS, claim, new_run
from tests.conformance.test_corrupt_records import (
    BAD,
    GOOD,
    NOW,
    check_reported_as_corrupt,
    serve,
)

from workpool.backends.base import Backend, Finish, StepRecord

STORED = [("created_at", "nan"), ("run_time", "nan"), ("created_at", "1e300")]

pytestmark = pytest.mark.parametrize("backend_name", ["postgres"])


@pytest.mark.parametrize("case", STORED, ids=[f"{field}={value}" for field, value in STORED])
async def test_a_corrupt_scheduled_run_is_set_aside_when_due(
    backend: Backend, backend_url: str, case: tuple[str, str]
) -> None:
    field, value = case
    runs = [new_run(NOW + 5, run_id=BAD)]
    runs += [new_run(NOW + 6 + index, run_id=run_id) for index, run_id in enumerate(GOOD)]
    await backend.enqueue(runs, NOW)
    await corrupt(backend_url, BAD, field, value)

    served, reported = await serve(backend, NOW + 10)

    assert sorted(served) == list(GOOD)
    assert reported == [BAD]
    await check_reported_as_corrupt(backend, field)


@pytest.mark.parametrize("case", STORED, ids=[f"{field}={value}" for field, value in STORED])
async def test_a_corrupt_running_run_is_set_aside_when_its_lease_expires(
    backend: Backend, backend_url: str, case: tuple[str, str]
) -> None:
    field, value = case
    await backend.enqueue([new_run(NOW, run_id=BAD)], NOW)
    (held,) = (await claim(backend, NOW)).runs
    await backend.enqueue([new_run(NOW + 1, run_id=run_id) for run_id in GOOD], NOW + 1)
    await corrupt(backend_url, BAD, field, value)

    served, reported = await serve(backend, NOW + LEASE_SECONDS + 1)

    assert sorted(served) == list(GOOD)
    assert reported == [BAD]
    await check_reported_as_corrupt(backend, field)
    renewed = await backend.renew([held.lease], LEASE_SECONDS, NOW + LEASE_SECONDS + 2)
    assert renewed.lost == {BAD}
    step = StepRecord("s", "run", "succeeded", 1, NOW, output="1", finished_at=NOW)
    assert await backend.save_step(held.lease, step, NOW + LEASE_SECONDS + 2) is None
    assert await backend.finish([Finish(held.lease, "succeeded", output="1")], NOW) == [False]


async def test_a_finish_batch_applies_the_others_and_the_bad_run_is_reported_once(
    backend: Backend, backend_url: str
) -> None:
    order = {run_id: index for index, run_id in enumerate((GOOD[0], BAD, GOOD[1]))}
    await backend.enqueue([new_run(NOW, run_id=run_id) for run_id in order], NOW)
    held = sorted(
        (await claim(backend, NOW, alone=False)).runs, key=lambda run: order[run.lease.run_id]
    )
    await corrupt(backend_url, BAD, "started_at", "nan")

    finishes = [Finish(run.lease, "succeeded", output="1") for run in held]
    assert await backend.finish(finishes, NOW + 1) == [True, False, True]

    reported: list[str] = []
    for at in (NOW + 2, NOW + LEASE_SECONDS + 2, NOW + LEASE_SECONDS + 3):
        reported += [entry.run_id for entry in (await claim(backend, at)).set_aside]
    assert reported == [BAD]
    await check_reported_as_corrupt(backend, "started_at")


async def test_a_run_set_aside_no_longer_counts_against_its_queue_limit(
    backend: Backend, backend_url: str
) -> None:
    await backend.set_queue("default", max_parallelism=1)
    await backend.enqueue([new_run(NOW, run_id=BAD)], NOW)
    await claim(backend, NOW)
    await backend.enqueue([new_run(NOW + 1, run_id=GOOD[0])], NOW + 1)
    await corrupt(backend_url, BAD, "created_at", "nan")

    result = await claim(backend, NOW + LEASE_SECONDS + 1)

    assert [entry.run_id for entry in result.set_aside] == [BAD]
    assert [run.lease.run_id for run in result.runs] == [GOOD[0]]
