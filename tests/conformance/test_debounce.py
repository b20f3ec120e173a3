"""Debounce: runs enqueued with one (workflow, key) while the last of them waits out its
window collapse into it, with the latest input and start; a run whose window ended is
never touched."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.conformance.helpers import (
    RETRY,
    claim,
    claim_one,
    error_json,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Enqueued, Finish, NewRun
from workpool.clock import ManualClock

WINDOW = 10.0


def debounced(
    now: float, input: str, *, key: str = "tenant-1", until: float | None = None, **fields: Any
) -> NewRun:
    """A run debounced by ``key``, its window ending WINDOW seconds after ``now``."""
    run = new_run(now + WINDOW, input=input, **fields)
    return dataclasses.replace(run, debounce_key=key, debounce_until=until)


async def test_enqueues_within_the_window_collapse_with_the_last_input(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = debounced(now, '{"n": 1}')
    assert await backend.enqueue([first], now) == [Enqueued(first.id, True)]
    assert await backend.enqueue([debounced(now + 3, '{"n": 2}')], now + 3) == [
        Enqueued(first.id, False)
    ]
    assert await backend.enqueue([debounced(now + 6, '{"n": 3}')], now + 6) == [
        Enqueued(first.id, False)
    ]

    run = await fetch(backend, first.id)
    assert (run.status, run.input, run.available_at) == ("scheduled", '{"n": 3}', now + 16)
    assert (run.created_at, run.attempts) == (now, 0)
    assert (await claim(backend, now + 15.9)).runs == []
    assert (await claim(backend, now + 15.9)).next_wake_at == now + 16
    claimed = await claim_one(backend, now + 16)
    assert (claimed.lease.run_id, claimed.input) == (first.id, '{"n": 3}')


async def test_one_enqueue_of_several_debounced_runs_keeps_the_last(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    runs = [debounced(now, f'{{"n": {n}}}') for n in range(3)]

    stored = await backend.enqueue(runs, now)

    assert stored == [Enqueued(runs[0].id, True)] + [Enqueued(runs[0].id, False)] * 2
    assert (await fetch(backend, runs[0].id)).input == '{"n": 2}'
    for run in runs[1:]:
        assert await backend.get_run(run.id) is None


async def test_keys_and_workflows_debounce_apart(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    runs = [
        debounced(now, "1", key="a"),
        debounced(now, "2", key="b"),
        debounced(now, "3", key="a", workflow="other"),
        new_run(now + WINDOW, input="4"),  # not debounced: a run of its own
    ]

    stored = await backend.enqueue(runs, now)

    assert stored == [Enqueued(run.id, True) for run in runs]


async def test_a_run_whose_window_ended_is_not_touched(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = debounced(now, '{"n": 1}')
    await backend.enqueue([first], now)

    # Due but not yet promoted: its window ended quietly, so a later enqueue starts anew.
    later = debounced(now + WINDOW, '{"n": 2}')
    assert await backend.enqueue([later], now + WINDOW) == [Enqueued(later.id, True)]

    assert (await fetch(backend, first.id)).input == '{"n": 1}'
    assert (await fetch(backend, first.id)).available_at == now + WINDOW
    third = debounced(now + WINDOW + 1, '{"n": 3}')
    assert await backend.enqueue([third], now + WINDOW + 1) == [Enqueued(later.id, False)]


async def test_a_started_run_is_not_touched(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    first = debounced(now, '{"n": 1}')
    await backend.enqueue([first], now)
    claimed = await claim_one(backend, now + WINDOW)

    later = debounced(now + WINDOW + 1, '{"n": 2}')
    assert await backend.enqueue([later], now + WINDOW + 1) == [Enqueued(later.id, True)]

    assert (await fetch(backend, first.id)).input == '{"n": 1}'
    done = Finish(claimed.lease, "succeeded", output="1")
    assert await backend.finish([done], now + 12) == [True]
    assert (await fetch(backend, later.id)).available_at == now + 2 * WINDOW + 1


async def test_a_retrying_or_canceled_run_is_not_touched(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = debounced(now, '{"n": 1}', retry=RETRY)
    await backend.enqueue([first], now)
    claimed = await claim_one(backend, now + WINDOW)
    retry = Finish(claimed.lease, "retry", error=error_json(), retry_at=now + 60)
    assert await backend.finish([retry], now + WINDOW + 1) == [True]
    assert await status_of(backend, first.id) == "scheduled"  # a retry, later than now

    second = debounced(now + 20, '{"n": 2}')
    assert await backend.enqueue([second], now + 20) == [Enqueued(second.id, True)]
    assert await backend.cancel(second.id, None, now + 21) == "canceled"
    third = debounced(now + 22, '{"n": 3}')
    assert await backend.enqueue([third], now + 22) == [Enqueued(third.id, True)]

    assert (await fetch(backend, first.id)).input == '{"n": 1}'
    assert (await fetch(backend, second.id)).input == '{"n": 2}'


async def test_the_start_never_moves_past_the_most_wait(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    until = now + 15
    first = debounced(now, "1", until=until)
    await backend.enqueue([first], now)

    for offset in (4, 8, 12):
        later = debounced(now + offset, str(offset), until=now + offset + 15)
        assert await backend.enqueue([later], now + offset) == [Enqueued(first.id, False)]

    run = await fetch(backend, first.id)
    assert (run.available_at, run.input) == (until, "12")
    late = debounced(now + 15, "15", until=now + 30)  # its window has ended: a new run
    assert await backend.enqueue([late], now + 15) == [Enqueued(late.id, True)]


async def test_a_debounced_run_has_no_idempotency_key_nor_batch(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    keyed = dataclasses.replace(debounced(now, "1"), idempotency_key="k")
    batched = dataclasses.replace(debounced(now, "1"), batch_id="b")

    for run in (keyed, batched):
        with pytest.raises(ValueError, match="debounced"):
            await backend.enqueue([run], now)
        assert await backend.get_run(run.id) is None


async def test_concurrent_debounced_enqueues_of_one_key_store_one_run(
    backend_factory: Callable[[], Awaitable[Backend]], clock: ManualClock
) -> None:
    instances = [await backend_factory() for _ in range(5)]
    now = clock.now()
    runs = [debounced(now, f'{{"n": {n}}}') for n in range(len(instances))]

    results = await asyncio.gather(
        *(instance.enqueue([run], now) for instance, run in zip(instances, runs, strict=True))
    )

    outcomes = [result[0] for result in results]
    assert sum(outcome.created for outcome in outcomes) == 1
    assert len({outcome.run_id for outcome in outcomes}) == 1
