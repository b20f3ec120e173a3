"""A run whose stored record is corrupt is set aside and reported once; every other run
is served (README "Errors and limits": a corrupt record).

Each case corrupts one field of the run first in line (or its whole record) for real,
then claims as a worker does: the other runs are claimed and finished, the claims report
the bad run exactly once, no later claim takes it, and reading it raises
CorruptRecordError naming the run and the field.
"""

from __future__ import annotations

import pytest

from tests.conformance.corrupting import DELETED, MISSING_RECORD, WRONG_TYPE, corrupt
from tests.conformance.helpers import LEASE_SECONDS, claim, new_run
from workpool.backends.base import Backend, Finish
from workpool.decoding import require_run
from workpool.errors import CorruptRecordError, RunNotFoundError

NOW = 1_700_000_000.0
BAD = "bad-run"
GOOD = ("good-1", "good-2", "good-3")
NOT_NUMBERS = ["soon", "nan", "1e999", ""]

CASES = [
    *(
        (field, value)
        for field in ("attempts", "created_at", "available_at", "cancel_requested", "lease_losses")
        for value in (DELETED, *NOT_NUMBERS)
    ),
    *(
        (field, value)
        for field in ("claims", "timeout", "rank_offset", "priority", "run_time", "attempt_time")
        for value in NOT_NUMBERS
    ),
    ("attempts", "1.5"),
    ("attempts", "99999999999999999999999"),
    ("created_at", "1e300"),
    *((field, DELETED) for field in ("status", "queue", "workflow", "input")),
    ("status", "bogus"),
    (MISSING_RECORD, None),
    (WRONG_TYPE, None),
]


def case_id(case: tuple[str, str | None]) -> str:
    field, value = case
    return f"{field}={'<deleted>' if value is None else repr(value)}"


async def serve(backend: Backend, now: float, rounds: int = 4) -> tuple[list[str], list[str]]:
    """Claim and finish as a worker would, a few times: (run ids served, run ids the
    claims reported set aside)."""
    served: list[str] = []
    reported: list[str] = []
    for _ in range(rounds):
        result = await claim(backend, now, limit=2, alone=False)
        reported += [entry.run_id for entry in result.set_aside]
        served += [run.lease.run_id for run in result.runs]
        finishes = [Finish(run.lease, "succeeded", output="1") for run in result.runs]
        await backend.finish(finishes, now)
    return served, reported


async def check_reported_as_corrupt(backend: Backend, field: str) -> None:
    """Reading the bad run raises CorruptRecordError naming it (and its field)."""
    named = "" if field in (MISSING_RECORD, WRONG_TYPE) else f".*'{field}'"
    with pytest.raises(CorruptRecordError, match=f"{BAD}{named}"):
        require_run(await backend.get_run(BAD), BAD)


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
async def test_a_corrupt_queued_run_is_set_aside_and_the_others_are_served(
    backend: Backend, backend_url: str, case: tuple[str, str | None]
) -> None:
    field, value = case
    runs = [new_run(NOW - 10, run_id=BAD)]
    runs += [new_run(NOW - 5 + index, run_id=run_id) for index, run_id in enumerate(GOOD)]
    await backend.enqueue(runs, NOW - 10)
    await corrupt(backend_url, BAD, field, value)

    served, reported = await serve(backend, NOW)

    assert sorted(served) == list(GOOD)
    assert reported == [BAD]
    await check_reported_as_corrupt(backend, field)


STATE_CASES = [
    ("attempts", "soon"),
    ("available_at", DELETED),
    ("lease_losses", "nan"),
    ("status", DELETED),
    ("queue", DELETED),
    (MISSING_RECORD, None),
    (WRONG_TYPE, None),
]


@pytest.mark.parametrize("case", STATE_CASES, ids=[case_id(case) for case in STATE_CASES])
async def test_a_corrupt_scheduled_run_is_set_aside_when_due(
    backend: Backend, backend_url: str, case: tuple[str, str | None]
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


@pytest.mark.parametrize("case", STATE_CASES, ids=[case_id(case) for case in STATE_CASES])
async def test_a_corrupt_running_run_is_set_aside_when_its_lease_expires(
    backend: Backend, backend_url: str, case: tuple[str, str | None]
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
    assert await backend.finish([Finish(held.lease, "succeeded", output="1")], NOW) == [False]


async def test_a_run_set_aside_whose_record_is_gone_is_not_found_but_reported(
    backend: Backend, backend_url: str
) -> None:
    await backend.enqueue([new_run(NOW, run_id=BAD)], NOW)
    await corrupt(backend_url, BAD, MISSING_RECORD, None)
    await serve(backend, NOW, rounds=1)

    with pytest.raises(CorruptRecordError, match=f"{BAD}.*gone") as raised:
        require_run(await backend.get_run(BAD), BAD)
    assert not isinstance(raised.value, RunNotFoundError)


@pytest.mark.parametrize("set_aside_first", [False, True], ids=["found", "set aside"])
async def test_a_listing_leaves_out_a_corrupt_run_and_pages_on(
    backend: Backend, backend_url: str, set_aside_first: bool
) -> None:
    runs = [new_run(NOW - 10, run_id=BAD)]
    runs += [new_run(NOW - 5 + index, run_id=run_id) for index, run_id in enumerate(GOOD)]
    await backend.enqueue(runs, NOW - 10)
    await corrupt(backend_url, BAD, "created_at", "noon")
    if set_aside_first:
        result = await claim(backend, NOW, limit=1, alone=False)
        assert [entry.run_id for entry in result.set_aside] == [BAD]

    listed: list[str] = []
    cursor = None
    for _ in range(4):
        page = await backend.list_runs(None, None, None, 2, cursor)
        listed += [run.id for run in page.runs]
        cursor = page.cursor
        if cursor is None:
            break

    assert sorted(listed) == sorted(GOOD)


FINISH_CASES = [("attempts", "soon"), ("started_at", "soon"), ("lease_losses", "nan")]


@pytest.mark.parametrize("case", FINISH_CASES, ids=[case_id(case) for case in FINISH_CASES])
async def test_a_finish_batch_applies_the_others_and_the_bad_run_is_reported_once(
    backend: Backend, backend_url: str, case: tuple[str, str | None]
) -> None:
    field, value = case
    order = {run_id: index for index, run_id in enumerate((GOOD[0], BAD, GOOD[1]))}
    await backend.enqueue([new_run(NOW, run_id=run_id) for run_id in order], NOW)
    held = sorted(
        (await claim(backend, NOW, alone=False)).runs, key=lambda run: order[run.lease.run_id]
    )
    await corrupt(backend_url, BAD, field, value)

    finishes = [Finish(run.lease, "succeeded", output="1") for run in held]
    assert await backend.finish(finishes, NOW + 1) == [True, False, True]

    reported: list[str] = []
    for at in (NOW + 2, NOW + LEASE_SECONDS + 2, NOW + LEASE_SECONDS + 3):
        reported += [entry.run_id for entry in (await claim(backend, at)).set_aside]
    assert reported == [BAD]
    await check_reported_as_corrupt(backend, field)
