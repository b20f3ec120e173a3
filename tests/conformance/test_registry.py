"""The workflow registry: what workers define, and app-scoped stale cleanup."""

from __future__ import annotations

from dataclasses import replace

from workpool.backends.base import Backend, WorkerRecord, WorkflowInfo
from workpool.clock import ManualClock

GRACE = 30.0


def info(
    name: str, app: str = "shop", *, queue: str = "default", limit: int | None = 1
) -> WorkflowInfo:
    """A registry record; updated_at is set by sync_registry."""
    return WorkflowInfo(
        name=name,
        app=app,
        queue=queue,
        max_concurrency=limit,
        retry='{"max_attempts": 3}',
        cron="[]",
        updated_at=0.0,
        rate_limits="[]",
    )


async def test_a_sync_records_every_definition(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    assert await backend.list_workflows() == []
    assert (
        await backend.sync_registry(
            "shop", [info("charge"), info("refund", limit=None)], now, GRACE
        )
        == []
    )
    listed = await backend.list_workflows()
    assert [(w.name, w.app, w.max_concurrency, w.updated_at) for w in listed] == [
        ("charge", "shop", 1, now),
        ("refund", "shop", None, now),
    ]
    assert listed[0].retry == '{"max_attempts": 3}'
    assert listed[0].cron == "[]"


async def test_a_record_keeps_the_rate_limits_its_worker_defines(
    backend: Backend, clock: ManualClock
) -> None:
    limits = '[{"scope": "workflow", "count": 5, "per": 60.0, "keyed": true}]'
    defined = replace(info("charge"), rate_limits=limits)
    await backend.sync_registry(
        "shop", [defined, replace(info("old"), rate_limits=None)], clock.now(), GRACE
    )
    assert [w.rate_limits for w in await backend.list_workflows()] == [limits, None]


async def test_a_record_keeps_the_shared_limits_of_its_runs(
    backend: Backend, clock: ManualClock
) -> None:
    limits = '[{"name": "partner", "max_concurrency": 3, "rate": null, "keyed": false}]'
    defined = replace(info("charge"), limits=limits)
    await backend.sync_registry("shop", [defined, info("old")], clock.now(), GRACE)
    assert [w.limits for w in await backend.list_workflows()] == [limits, None]


async def test_a_later_sync_replaces_a_record(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await backend.sync_registry("shop", [info("charge")], now, GRACE)
    await backend.sync_registry("shop", [info("charge", queue="payments", limit=5)], now + 1, GRACE)
    [record] = await backend.list_workflows()
    assert (record.queue, record.max_concurrency, record.updated_at) == ("payments", 5, now + 1)


async def test_stale_records_are_removed_only_by_their_app_after_the_grace(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await backend.sync_registry("shop", [info("charge"), info("old")], now, GRACE)
    await backend.sync_registry("billing", [info("invoice", "billing")], now, GRACE)
    # Another app never removes shop's records; shop keeps them within the grace.
    assert await backend.sync_registry("billing", [], now + 100, GRACE) == ["invoice"]
    assert await backend.sync_registry("shop", [info("charge")], now + 10, GRACE) == []
    assert {w.name for w in await backend.list_workflows()} == {"charge", "old"}
    assert await backend.sync_registry("shop", [info("charge")], now + 31, GRACE) == ["old"]
    assert [w.name for w in await backend.list_workflows()] == ["charge"]


def worker(workflows: tuple[str, ...], now: float) -> WorkerRecord:
    """A record of a live worker of app shop defining ``workflows``."""
    return WorkerRecord(
        id="w1",
        app="shop",
        queues=("default",),
        workflows=workflows,
        started_at=now,
        seen_at=now,
        expires_at=now + 30,
    )


async def test_a_heartbeat_names_the_worker_s_workflows_the_registry_lacks(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    assert await backend.heartbeat(worker(("charge", "refund"), now), now) == ["charge", "refund"]
    await backend.sync_registry("billing", [info("refund", "billing")], now, GRACE)
    # Whoever registered it, a record of that name is there: only charge is missing.
    assert await backend.heartbeat(worker(("charge", "refund"), now), now + 1) == ["charge"]
    await backend.sync_registry("shop", [info("charge")], now, GRACE)
    assert await backend.heartbeat(worker(("charge", "refund"), now), now + 2) == []
    assert await backend.heartbeat(worker((), now), now + 3) == []


async def test_a_restore_stores_only_the_records_that_are_missing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    newer = info("charge", queue="payments", limit=5)  # a newer version's, say
    await backend.sync_registry("shop", [newer], now, GRACE)
    restored = await backend.restore_registry("shop", [info("charge"), info("refund")], now + 5)
    assert restored == ["refund"]
    listed = await backend.list_workflows()
    assert [(w.name, w.queue, w.max_concurrency, w.updated_at) for w in listed] == [
        ("charge", "payments", 5, now),  # kept as it was
        ("refund", "default", 1, now + 5),
    ]
    assert await backend.restore_registry("shop", [info("refund")], now + 6) == []
