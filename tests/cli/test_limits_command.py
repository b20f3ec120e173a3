"""``workpool limits``: each shared limit's runs in use and waiting, from the registry."""

from __future__ import annotations

import json

from tests.cli.helpers import workpool
from tests.cli.test_inspect_commands import rows, succeeded
from workpool import RateLimit, RunContext, Workpool


async def test_limits_lists_use_and_waiting_runs_per_shared_limit(backend_url: str) -> None:
    pool = Workpool(backend_url, app="cli-tests")
    partner = pool.limit("partner", max_concurrency=1, rate=RateLimit(10))
    pool.limit("per-tenant", max_concurrency=2, key=lambda order: order["tenant"])

    @pool.workflow(limits=[partner], max_concurrency=None)
    async def sync(ctx: RunContext, order: dict[str, str]) -> None: ...

    @pool.workflow(queue="billing", limits=["partner", "per-tenant"], max_concurrency=None)
    async def refund(ctx: RunContext, order: dict[str, str]) -> None: ...

    try:
        async with pool.worker(queues=["nothing"]):  # registers the workflows
            pass
        for tenant in ("a", "b", "a"):
            await refund.run({"tenant": tenant})
        await sync.run({"tenant": "c"})
        # The first refund holds a place at both limits; the others wait at the partner's.
        listing = succeeded(workpool(backend_url, "limits"))
        assert rows(listing) == [
            ["partner", "1", "10/1s", "1", "3", "1", "refund,", "sync"],
            ["per-tenant", "2", "per", "key", "-", "1", "0", "1", "refund"],
        ]
        stats = succeeded(workpool(backend_url, "stats"))
        assert "partner" in stats.split("max conc.")[1]  # the same table, after the stats
        figures = json.loads(succeeded(workpool(backend_url, "stats", "--json")))
        assert [item["waiting"] for item in figures["limits"]] == [3, 0]
        shown = json.loads(succeeded(workpool(backend_url, "limits", "--json")))
        assert [(item["name"], item["in_use"], item["waiting"]) for item in shown["limits"]] == [
            ("partner", 1, 3),
            ("per-tenant", 1, 0),  # the first run holds tenant a's place
        ]
    finally:
        await pool.aclose()
        pool.close()
