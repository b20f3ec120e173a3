"""The workflows page's rate limits come from the registry, so a dashboard whose pool
defines none of the workflows (``workpool dashboard --url``) shows them too."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from workpool import RateLimit, RunContext, Workpool
from workpool.dashboard.workflows import read_workflows


def billing(url: str) -> Workpool:
    """Another app's pool: a keyed workflow limit and a queue limit."""
    pool = Workpool(url, app="billing")
    pool.queue("invoices", rate_limit=RateLimit(100, per=timedelta(seconds=1)))

    @pool.workflow(queue="invoices", rate_limit=RateLimit(5, per=60, key=lambda c: c))
    async def invoice(ctx: RunContext, customer: str) -> str:
        return customer

    return pool


async def register(pool: Workpool) -> None:
    """What a worker of ``pool`` does as it starts."""
    backend = await pool.backend()
    now = pool.settings.clock.now()
    await backend.sync_registry("billing", pool.registry.records(pool.settings), now, 60.0)


async def test_a_dashboard_that_defines_nothing_shows_registered_rate_limits(
    backend_url: str,
) -> None:
    workers, dashboard = billing(backend_url), Workpool(backend_url)
    try:
        await register(workers)
        [registered] = await dashboard.list_workflows()
        assert registered.rate_limits == [
            {"scope": "workflow", "count": 5, "per": 60.0, "keyed": True},
            {"scope": "queue", "count": 100, "per": 1.0, "keyed": False},
        ]
        [view] = await read_workflows(dashboard)
        assert view.rate_limit == "5 per 60 s per key (workflow); 100 per 1 s (queue invoices)"
    finally:
        await workers.aclose()
        await dashboard.aclose()


async def test_a_record_of_an_earlier_version_shows_the_dashboards_own_definition(
    backend_url: str,
) -> None:
    workers = billing(backend_url)
    try:
        backend = await workers.backend()
        [record] = workers.registry.records(workers.settings)
        old = replace(record, rate_limits=None)
        await backend.sync_registry("billing", [old], workers.settings.clock.now(), 60.0)
        [view] = await read_workflows(workers)
        assert view.rate_limit == "5 per 60 s per key (workflow); 100 per 1 s (queue invoices)"
        elsewhere = Workpool(backend_url)
        [unknown] = await read_workflows(elsewhere)
        assert unknown.rate_limit is None
        await elsewhere.aclose()
    finally:
        await workers.aclose()
