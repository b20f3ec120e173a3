"""A repeated enqueue (the same runs sent again, as a client does when the connection
dropped before the reply came) stores nothing new and returns the same runs, whatever
options they carry: the run id, made by the client, is what makes it idempotent."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.conformance.helpers import new_run
from workpool.backends.base import Backend, Enqueued, NewBatch, NewRun
from workpool.clock import ManualClock

DEBOUNCE_WINDOW = 10.0


def plain(now: float) -> NewRun:
    return new_run(now)


def keyed(now: float) -> NewRun:
    return new_run(now, idempotency_key="order-7")


def gated(now: float) -> NewRun:
    """Alone in a gate of one, it fills the gate itself: its repeat finds it admitted."""
    return new_run(now, max_concurrency=1)


def debounced(now: float) -> NewRun:
    run = new_run(now + DEBOUNCE_WINDOW)
    return dataclasses.replace(run, debounce_key="tenant-1")


def scheduled_later(now: float) -> NewRun:
    return new_run(now + 60)


RUNS = [plain, keyed, gated, debounced, scheduled_later]


async def stored_runs(backend: Backend) -> list[str]:
    page = await backend.list_runs(None, None, None, 100, None)
    return [run.id for run in page.runs]


@pytest.mark.parametrize("make", RUNS, ids=lambda make: make.__name__)
async def test_a_repeated_enqueue_stores_nothing_and_returns_the_same_run(
    backend: Backend, clock: ManualClock, make: Any
) -> None:
    now = clock.now()
    run = make(now)
    assert await backend.enqueue([run], now) == [Enqueued(run.id, True)]
    stored = await backend.get_run(run.id)

    assert await backend.enqueue([run], now) == [Enqueued(run.id, False)]
    assert await backend.get_run(run.id) == stored
    assert await stored_runs(backend) == [run.id]


async def test_a_repeated_batch_stores_nothing_and_returns_the_same_runs(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    runs = [make(now) for make in RUNS]
    assert await backend.enqueue(runs, now) == [Enqueued(run.id, True) for run in runs]

    assert await backend.enqueue(runs, now) == [Enqueued(run.id, False) for run in runs]
    assert sorted(await stored_runs(backend)) == sorted(run.id for run in runs)


async def test_a_repeated_debounced_enqueue_leaves_a_later_collapse_alone(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = dataclasses.replace(debounced(now), input='{"n": 1}')
    later = dataclasses.replace(debounced(now + 1), input='{"n": 2}')
    assert await backend.enqueue([first], now) == [Enqueued(first.id, True)]
    assert await backend.enqueue([later], now + 1) == [Enqueued(first.id, False)]
    collapsed = await backend.get_run(first.id)

    assert await backend.enqueue([first], now) == [Enqueued(first.id, False)]
    assert await backend.get_run(first.id) == collapsed
    assert collapsed is not None
    assert collapsed.input == '{"n": 2}'


@pytest.mark.parametrize("open_batch", [True, False], ids=["open", "closed"])
async def test_a_repeated_enqueue_that_created_a_batch_stores_nothing_new(
    backend: Backend, clock: ManualClock, open_batch: bool
) -> None:
    now = clock.now()
    batch = NewBatch("import-1", callback=None, open=open_batch)
    batchable = [make for make in RUNS if make is not debounced]  # a batch takes none
    runs = [dataclasses.replace(make(now), batch_id=batch.id) for make in batchable]
    assert await backend.enqueue(runs, now, batch=batch) == [Enqueued(r.id, True) for r in runs]
    stored = await backend.get_batch(batch.id)

    assert await backend.enqueue(runs, now, batch=batch) == [Enqueued(r.id, False) for r in runs]
    assert await backend.get_batch(batch.id) == stored
    assert sorted(await stored_runs(backend)) == sorted(run.id for run in runs)


async def test_a_repeated_enqueue_that_added_to_a_batch_stores_nothing_new(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch = NewBatch("import-2", callback=None, open=True)
    first = dataclasses.replace(plain(now), batch_id=batch.id)
    await backend.enqueue([first], now, batch=batch)
    added = [dataclasses.replace(plain(now), batch_id=batch.id) for _ in range(2)]
    assert await backend.enqueue(added, now) == [Enqueued(run.id, True) for run in added]
    stored = await backend.get_batch(batch.id)

    assert await backend.enqueue(added, now) == [Enqueued(run.id, False) for run in added]
    assert await backend.get_batch(batch.id) == stored
    assert stored is not None
    assert stored.total == 3
