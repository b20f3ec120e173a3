"""B7 on PostgreSQL: statements (round trips) and transactions per no-op run while 2
workers drain, from pg_stat_statements and pg_stat_database.

Method. The suite's server loads pg_stat_statements (``PostgresStore``), which counts
every statement the server executed, BEGIN and COMMIT included (``track_utility``), per
normalized query. psycopg sends each statement, BEGIN and COMMIT as its own message and
waits for the reply (no pipeline), so statements are round trips. The window is as
Redis's: it opens once both workers are idle and closes when the queue is empty, the
client enqueuing (``enqueue_many``, batches of 500) while the workers drain. The
harness's own statements (its completion polls and these reads) are left out by their
text: they read ``pg_stat_*`` or count ``runs`` by status, which workpool never does.

- statements per run: every statement of workpool's connections / runs;
- transactions per run: COMMIT and ROLLBACK statements / runs (workpool's connections
  are not in autocommit: psycopg sends BEGIN, the statements, then COMMIT);
- server time per run: the growth of pg_stat_statements' ``total_exec_time`` of
  workpool's statements / runs (executor time only: parsing and the client's wait are
  not in it).
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness import Env, enqueue_batched, opened_app, read_succeeded, wait_drained
from benchmarks.stats import Measured, MetricSpec
from benchmarks.stores import PostgresTarget
from benchmarks.workers import workers

STATEMENTS = "statements per run (round trips), BEGIN and COMMIT included"
TRANSACTIONS = "transactions per run"
EXEC_TIME = "statement execution time per run"
PROCESSES = 2
CONCURRENCY = 100
POLL_SECONDS = 0.1
HARNESS_MARKS = ("pg_stat_", "count(*) FROM ")
"""Text that only the harness's statements contain."""

METRICS = (
    MetricSpec(STATEMENTS, "statements/run", only="postgres"),
    MetricSpec(TRANSACTIONS, "transactions/run", only="postgres"),
    MetricSpec(EXEC_TIME, "µs/run", only="postgres"),
)


async def statement_stats(target: PostgresTarget) -> dict[str, tuple[int, float]]:
    """(calls, total_exec_time ms) per normalized query of the database so far."""
    cursor = await target.connection.execute(
        "SELECT query, calls, total_exec_time FROM pg_stat_statements"
        " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    stats: dict[str, tuple[int, float]] = {}
    for query, calls, exec_ms in await cursor.fetchall():
        old_calls, old_ms = stats.get(query, (0, 0.0))
        stats[query] = (old_calls + int(calls), old_ms + float(exec_ms))
    return stats


def workpool_delta(
    before: dict[str, tuple[int, float]], after: dict[str, tuple[int, float]]
) -> dict[str, tuple[int, float]]:
    """Calls and time per query in the window, the harness's own queries left out."""
    delta: dict[str, tuple[int, float]] = {}
    for query, (calls, exec_ms) in after.items():
        if any(mark in query for mark in HARNESS_MARKS):
            continue
        old_calls, old_ms = before.get(query, (0, 0.0))
        if calls > old_calls:
            delta[query] = (calls - old_calls, exec_ms - old_ms)
    return delta


async def run(env: Env, target: PostgresTarget) -> Measured:
    """One repetition on a new schema."""
    count = 5_000 if env.quick else 10_000
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(count)]
        async with workers(target, PROCESSES, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            before = await statement_stats(target)
            ids = await enqueue_batched(app, prepared)
            await wait_drained(target, procs, poll=POLL_SECONDS)
            after = await statement_stats(target)
        await read_succeeded(app, ids)
    delta = workpool_delta(before, after)
    ends = sum(calls for query, (calls, _) in delta.items() if query in ("COMMIT", "ROLLBACK"))
    values = {
        STATEMENTS: sum(calls for calls, _ in delta.values()) / count,
        TRANSACTIONS: ends / count,
        EXEC_TIME: 1000 * sum(ms for _, ms in delta.values()) / count,
    }
    top = sorted(delta.items(), key=lambda item: -item[1][0])[:25]
    details: dict[str, Any] = {
        "runs": count,
        "statements_per_run": {
            " ".join(query.split())[:160]: round(calls / count, 3) for query, (calls, _) in top
        },
    }
    return Measured(values, details)
