"""``list_published``: every value a run published (``set_event``), by key, in one read."""

from __future__ import annotations

from tests.conformance.helpers import claim_one, enqueue_new
from workpool.backends.base import Backend, Finish
from workpool.clock import ManualClock


async def test_a_runs_published_values_are_listed_by_key_last_value_winning(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    other_id = await enqueue_new(backend, now, available_at=now + 60)  # not claimed now
    assert await backend.list_published(run_id) == {}
    claimed = await claim_one(backend, now)
    assert claimed.lease.run_id == run_id
    assert await backend.set_event(claimed.lease, "total", "12.5")
    assert await backend.set_event(claimed.lease, "status", '{"step": 1}')
    latest = '{"step": 2, "é": "\\"q\\""}'
    assert await backend.set_event(claimed.lease, "status", latest)
    assert await backend.set_event(claimed.lease, "a key: with spaces", "null")
    listed = await backend.list_published(run_id)
    assert listed == {"a key: with spaces": "null", "status": latest, "total": "12.5"}
    assert list(listed) == sorted(listed)  # by key
    assert await backend.list_published(other_id) == {}  # another run's are its own
    assert await backend.list_published("no-such-run") == {}
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    assert await backend.list_published(run_id) == listed  # kept once it finished
    assert await backend.purge(now + 1, 10, 0.0) == 1
    assert await backend.list_published(run_id) == {}  # deleted with the run
