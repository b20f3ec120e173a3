"""The PostgreSQL backend's connections: renewals never queue behind other operations."""

from __future__ import annotations

import asyncio
import time

import psycopg
from tests.conformance.helpers import WORKFLOW, new_run
from tests.postgres_server import PostgresServer

from workpool.backends import open_backend
from workpool.backends.postgres.database import POOL_SIZE
from workpool.backends.postgres.url import parse_postgres_url


async def test_a_renewal_is_not_held_back_by_operations_waiting_for_connections(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url("renewals")
    backend = await open_backend(url)
    schema = parse_postgres_url(url).schema
    blocker = await psycopg.AsyncConnection.connect(postgres_server.conninfo())
    try:
        now = time.time()
        held, busy = new_run(now), new_run(now)
        await backend.enqueue([held, busy], now)
        claimed = await backend.claim(["default"], "w", 2, 30.0, 3, now, workflows=[WORKFLOW])
        lease = next(run.lease for run in claimed.runs if run.lease.run_id == held.id)
        await blocker.execute(
            f"SELECT 1 FROM {schema}.runs WHERE id = %s FOR UPDATE",
            (busy.id,),
        )
        # More cancels than the pool has connections: each waits on the locked row,
        # holding its connection, and the rest wait for one.
        cancels = [
            asyncio.ensure_future(backend.cancel(busy.id, "stop", now))
            for _ in range(POOL_SIZE + 5)
        ]
        await asyncio.sleep(0.5)

        renewed = await asyncio.wait_for(backend.renew([lease], 30.0, now), 10.0)

        assert renewed.lost == frozenset()
        await blocker.rollback()
        assert {await cancel for cancel in cancels} == {"requested"}
    finally:
        await blocker.close()
        await backend.close()
