"""The PostgreSQL soak: 1,000,000 short runs through a durable server, and the size of
the ``runs`` table and its indexes over time (issue 24: no bloat).

``python -m benchmarks.soak_postgres [--runs N] [--autovacuum default|recommended]``
(not part of ``make test`` or ``make bench``: about 15 min here). A private server
(``PostgresStore``, as ``make bench``); the pool keeps finished runs ``RETENTION`` (1
minute, so the soak reaches its steady state in minutes instead of a week) and two
worker processes (concurrency 50, housekeeping every minute: the CLI's default) drain
the runs and purge the finished ones past it. The client enqueues in batches of 500, never more than
``BACKLOG`` runs ahead of the workers. Every ``SAMPLE_SECONDS`` it records the runs
stored (live and dead tuples), ``pg_total_relation_size('runs')``, the heap's and each
index's size, and autovacuum's runs on the table. Bounded: the sizes stop growing once
retention deletes as many runs as arrive and (auto)vacuum lets PostgreSQL reuse their
space. ``--autovacuum recommended`` first applies README's per-table settings.

Writes ``benchmarks/results/soak/postgres-<autovacuum>.json`` and prints the samples.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from psycopg import sql

from benchmarks.stores import PostgresStore, PostgresTarget
from benchmarks.workers import ROOT
from workpool import RunContext, Workflow, Workpool

RETENTION = timedelta(minutes=1)
HOUSEKEEPING_SECONDS = 60.0
"""How often a worker purges (the CLI's default)."""
BACKLOG = 20_000
BATCH = 500
SAMPLE_SECONDS = 15.0
PROCESSES = 2
CONCURRENCY = 50
RECOMMENDED = {
    "autovacuum_vacuum_scale_factor": "0.01",
    "autovacuum_vacuum_threshold": "1000",
    "autovacuum_vacuum_insert_scale_factor": "0.01",
    "autovacuum_analyze_scale_factor": "0.02",
    "autovacuum_vacuum_cost_delay": "0",
}
"""README's per-table settings for ``runs`` (see its PostgreSQL section for why)."""


def build(url: str | None = None) -> tuple[Workpool, Workflow[Any, Any]]:
    """The soak's pool on ``url`` (default ``$WORKPOOL_URL``) and its one workflow."""
    built = Workpool(url, app="bench-soak", retention=RETENTION)

    @built.workflow(max_concurrency=None)
    async def short(ctx: RunContext, n: int) -> int:
        """The soak's run: returns its input."""
        return n

    return built, short


pool, _ = build()
"""What the worker processes serve (``benchmarks.soak_postgres:pool``)."""


SIZES = """
SELECT
    pg_total_relation_size(t.oid) AS total_bytes,
    pg_relation_size(t.oid) AS heap_bytes,
    pg_indexes_size(t.oid) AS index_bytes,
    s.n_live_tup AS live, s.n_dead_tup AS dead,
    s.autovacuum_count AS autovacuums, s.autoanalyze_count AS autoanalyzes,
    (SELECT json_object_agg(i.relname, pg_relation_size(i.oid))
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     WHERE x.indrelid = t.oid) AS indexes
FROM pg_class t JOIN pg_stat_user_tables s ON s.relid = t.oid
WHERE t.oid = {}::regclass
"""


async def sample(target: PostgresTarget, runs_done: int, started: float) -> dict[str, Any]:
    """The table's sizes and tuples now."""
    await target.connection.execute("SELECT pg_stat_clear_snapshot()")
    query = sql.SQL(SIZES).format(sql.Literal(f"{target.schema}.runs"))
    cursor = await target.connection.execute(query)
    row = await cursor.fetchone()
    assert row is not None
    names = ("total_bytes", "heap_bytes", "index_bytes", "live", "dead", "autovacuums")
    values = dict(zip((*names, "autoanalyzes", "indexes"), row, strict=True))
    return {"seconds": round(time.monotonic() - started, 1), "enqueued": runs_done, **values}


def line(entry: dict[str, Any]) -> str:
    """One sample as a line of the printed table."""
    mb = {key: entry[key] / 2**20 for key in ("total_bytes", "heap_bytes", "index_bytes")}
    return (
        f"{entry['seconds']:7.0f} s  enqueued {entry['enqueued']:>9,}  live {entry['live']:>8,}"
        f"  dead {entry['dead']:>8,}  total {mb['total_bytes']:7.1f} MB  heap"
        f" {mb['heap_bytes']:7.1f} MB  indexes {mb['index_bytes']:7.1f} MB"
        f"  autovacuums {entry['autovacuums']}"
    )


def start_workers(target: PostgresTarget, log: Path) -> list[subprocess.Popen[bytes]]:
    command = [
        sys.executable,
        "-m",
        "workpool",
        "worker",
        "benchmarks.soak_postgres:pool",
        "--concurrency",
        str(CONCURRENCY),
        "--log-level",
        "WARNING",
    ]
    env = {**os.environ, "WORKPOOL_URL": target.url, "PYTHONPATH": str(ROOT)}
    with open(log, "ab") as handle:
        return [
            subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)
            for _ in range(PROCESSES)
        ]


async def soak(target: PostgresTarget, runs: int, log: Path) -> list[dict[str, Any]]:
    """Enqueue ``runs`` while the workers drain and purge; the samples."""
    client, short = build(target.url)
    await client.backend()  # creates the schema before the workers and the samples
    samples: list[dict[str, Any]] = []
    processes = start_workers(target, log)
    started = time.monotonic()
    next_sample = started
    done = 0
    try:
        while done < runs or await target.active_count() > 0:
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a worker exited with {process.returncode}; see {log}")
            if time.monotonic() >= next_sample:
                samples.append(await sample(target, done, started))
                print(line(samples[-1]), flush=True)
                next_sample += SAMPLE_SECONDS
            if done < runs and await target.active_count(scheduled=False) < BACKLOG:
                size = min(BATCH, runs - done)
                await client.enqueue_many([short.prepare(done + n) for n in range(size)])
                done += size
            else:
                await asyncio.sleep(0.1)
        # Retention's minute passes, housekeeping purges, autovacuum visits: the end state.
        settle = time.monotonic() + RETENTION.total_seconds() + 2 * HOUSEKEEPING_SECONDS
        while time.monotonic() < settle:
            await asyncio.sleep(max(0.0, min(SAMPLE_SECONDS, next_sample - time.monotonic())))
            samples.append(await sample(target, done, started))
            print(line(samples[-1]), flush=True)
            next_sample += SAMPLE_SECONDS
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
        await client.aclose()
    samples.append(await sample(target, done, started))
    return samples


async def main(args: argparse.Namespace) -> None:
    store = await PostgresStore.start()
    try:
        target = await store.fresh()
        out = ROOT / "benchmarks" / "results" / "soak"
        out.mkdir(parents=True, exist_ok=True)
        if args.autovacuum == "recommended":
            await apply_recommended(target)
        samples = await soak(target, args.runs, out / f"workers-{args.autovacuum}.log")
        result = {
            "runs": args.runs,
            "autovacuum": args.autovacuum,
            "settings": RECOMMENDED if args.autovacuum == "recommended" else "server defaults",
            "retention_seconds": RETENTION.total_seconds(),
            "postgresql": await store.version(),
            "load_average_at_end": os.getloadavg(),
            "samples": samples,
        }
        path = out / f"postgres-{args.autovacuum}.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {path}")
    finally:
        await store.close()


async def apply_recommended(target: PostgresTarget) -> None:
    """README's per-table autovacuum settings on the (migrated) runs table."""
    client, _ = build(target.url)
    await client.backend()
    await client.aclose()
    options = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Literal(value))
        for name, value in RECOMMENDED.items()
    )
    table = sql.Identifier(target.schema, "runs")
    await target.connection.execute(sql.SQL("ALTER TABLE {} SET ({})").format(table, options))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak_postgres", description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--autovacuum", choices=("default", "recommended"), default="default")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args(sys.argv[1:])))
