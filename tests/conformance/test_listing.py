"""Backend.list_runs: newest first by id, filters, cursor pages."""

from __future__ import annotations

from tests.conformance.helpers import claim_one, enqueue, fetch, new_run
from workpool.backends.base import Backend, Finish
from workpool.clock import ManualClock


def ids(prefix: str, count: int) -> list[str]:
    """Run ids in creation order (the client's ids begin with their creation time)."""
    return [f"{prefix}{index:04d}" for index in range(count)]


async def listed(
    backend: Backend,
    *,
    status: str | None = None,
    workflow: str | None = None,
    queue: str | None = None,
    limit: int = 2,
) -> list[list[str]]:
    """Every page of a listing, as run ids, following cursors to the end."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await backend.list_runs(status, workflow, queue, limit, cursor)
        pages.append([run.id for run in page.runs])
        if page.cursor is None:
            return pages
        assert page.cursor == page.runs[-1].id
        cursor = page.cursor


async def test_lists_newest_first_in_pages(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    created = ids("r", 5)
    for run_id in created:
        await enqueue(backend, new_run(now, run_id=run_id), now)

    assert await listed(backend) == [["r0004", "r0003"], ["r0002", "r0001"], ["r0000"]]
    assert await listed(backend, limit=10) == [list(reversed(created))]


async def test_a_full_last_page_is_followed_by_an_empty_one(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    for run_id in ids("r", 4):
        await enqueue(backend, new_run(now, run_id=run_id), now)

    assert await listed(backend) == [["r0003", "r0002"], ["r0001", "r0000"], []]


async def test_an_empty_store_lists_nothing(backend: Backend) -> None:
    page = await backend.list_runs(None, None, None, 50, None)
    assert (page.runs, page.cursor) == ([], None)


async def test_filters_by_workflow_queue_and_status(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    layout = {
        "a0": ("send", "mail"),
        "a1": ("send", "bulk"),
        "a2": ("bill", "mail"),
        "a3": ("send", "mail"),
        "a4": ("bill", "bulk"),
        "a5": ("send", "mail"),
    }
    for run_id, (workflow, queue) in layout.items():
        await enqueue(backend, new_run(now, run_id=run_id, workflow=workflow, queue=queue), now)
    running = await claim_one(backend, now, queues=("mail",))  # a0, the oldest
    assert running.lease.run_id == "a0"

    assert await listed(backend, workflow="send", limit=10) == [["a5", "a3", "a1", "a0"]]
    assert await listed(backend, queue="bulk", limit=10) == [["a4", "a1"]]
    assert await listed(backend, status="running", limit=10) == [["a0"]]
    assert await listed(backend, status="queued", workflow="send") == [["a5", "a3"], ["a1"]]
    assert await listed(backend, status="queued", workflow="send", queue="mail") == [
        ["a5", "a3"],
        [],
    ]
    assert await listed(backend, workflow="nothing") == [[]]
    assert await listed(backend, status="failed") == [[]]


async def test_a_listed_run_is_the_stored_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now, run_id="b0"), now)
    claimed = await claim_one(backend, now)
    await backend.finish([Finish(claimed.lease, "succeeded", output="[1, 2]")], now + 3)

    page = await backend.list_runs("succeeded", None, None, 10, None)
    assert page.runs == [await fetch(backend, "b0")]


async def test_a_run_moves_between_status_listings(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    for run_id in ids("c", 3):
        await enqueue(backend, new_run(now, run_id=run_id), now)
    claimed = await claim_one(backend, now)
    await backend.finish([Finish(claimed.lease, "failed", error='{"type": "E"}')], now)
    await backend.cancel("c0002", None, now)

    assert await listed(backend, status="queued", limit=10) == [["c0001"]]
    assert await listed(backend, status="failed", limit=10) == [["c0000"]]
    assert await listed(backend, status="canceled", limit=10) == [["c0002"]]
    assert await listed(backend, status="running", limit=10) == [[]]
