"""Retention keeps storage bounded: after a batch of runs (with steps and idempotency
keys) expires and is purged, the store holds what it held before, on every backend.

The full-scale figure (100,000 runs, 1-minute retention) is benchmark B10."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Any

import psycopg
import redis
from psycopg import sql

from workpool import RunContext, Workpool
from workpool.backends.postgres.url import parse_postgres_url
from workpool.clock import ManualClock
from workpool.worker.housekeeping import Housekeeper

RETENTION = timedelta(minutes=1)


def storage(url: str) -> dict[str, int]:
    """What the store holds, counted the backend's own way (counters excluded: they are
    kept per minute for a day, whatever the number of runs)."""
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            counts = {
                table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("runs", "steps", "idempotency_keys", "gates", "limiters")
            }
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            free = connection.execute("PRAGMA freelist_count").fetchone()[0]
            return {**counts, "pages in use": pages - free}
        finally:
            connection.close()
    if url.startswith("postgres"):
        target = parse_postgres_url(url)
        tables = ("runs", "steps", "idempotency_keys", "gates", "limiters", "run_pairs")
        with psycopg.connect(target.conninfo) as database:
            return {table: count_rows(database, f"{target.schema}.{table}") for table in tables}
    client = redis.Redis.from_url(url)
    try:
        keys = [key.decode() for key in client.scan_iter(count=1000)]
        return {"keys": sum(1 for key in keys if ":stats" not in key)}
    finally:
        client.close()


def count_rows(connection: psycopg.Connection[tuple[Any, ...]], table: str) -> int:
    """The rows of a table (PostgreSQL's files shrink only at VACUUM FULL: rows are what
    retention bounds, and autovacuum makes their space reusable)."""
    row = connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.SQL(table))).fetchone()
    return 0 if row is None else int(row[0])


async def a_batch(pool: Workpool, count: int, start: int) -> None:
    work = pool.get_workflow("work")
    handles = [await work.run(n, idempotency_key=f"n-{n}") for n in range(start, start + count)]
    # A long lease: the pool's clock is manual, so a run whose local lease ran out on a
    # loaded machine (its outcome then unwritten) would never be taken again.
    async with pool.worker(concurrency=20, lease=timedelta(seconds=60)):
        for handle in handles:
            await handle.result(timeout=30)


async def test_storage_returns_to_its_baseline_after_retention(backend_url: str) -> None:
    clock = ManualClock()
    pool = Workpool(backend_url, app="tests", clock=clock, retention=RETENTION)

    @pool.workflow(max_concurrency=2)
    async def work(ctx: RunContext, n: int) -> int:
        square: int = await ctx.step.run("square", lambda: n * n)
        return square

    backend = await pool.backend()
    keeper = Housekeeper(pool.settings, "keeper")
    await a_batch(pool, 10, 0)  # every structure that outlives runs now exists
    clock.advance(RETENTION.total_seconds() + 1)
    assert await keeper.step(backend, clock.now()) == 10
    baseline = storage(backend_url)

    await a_batch(pool, 300, 10)
    assert storage(backend_url) != baseline
    clock.advance(RETENTION.total_seconds() + 1)
    assert await keeper.step(backend, clock.now()) == 300

    after = storage(backend_url)
    pages = "pages in use"
    if pages in baseline:  # a few B-tree pages may stay partly filled, not one per run
        assert after.pop(pages) <= baseline.pop(pages) + 3
    assert after == baseline
    await pool.aclose()
