"""Reads: one statement each, or several in one REPEATABLE READ transaction (listing,
stats), so that their statements see one snapshot."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from workpool.backends.base import (
    GateUsage,
    PairActivity,
    PairCounters,
    PeriodCounters,
    RunPage,
    StatsSnapshot,
)
from workpool.backends.reading import counter_rows, readable
from workpool.backends.sqlite import records
from workpool.backends.sqlite.reads import ALL_STATES

SNAPSHOT = b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


class Reads:
    """Named queries read on one connection (inside the caller's transaction)."""

    def __init__(self, connection: AsyncConnection[DictRow], queries: Mapping[str, str]) -> None:
        self._connection = connection
        self._queries = queries

    async def all(self, query: str, /, **parameters: Any) -> list[DictRow]:
        """The rows of a named query."""
        cursor = await self._connection.execute(self._queries[query].encode(), parameters)
        return await cursor.fetchall()

    async def one(self, query: str, /, **parameters: Any) -> DictRow | None:
        """The first row of a named query, or None."""
        cursor = await self._connection.execute(self._queries[query].encode(), parameters)
        return await cursor.fetchone()

    async def snapshot(self) -> None:
        """Make the rest of the transaction read one snapshot (first statement only)."""
        await self._connection.execute(SNAPSHOT)

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        """See ``Backend.list_runs``: up to ``limit`` ids from each matching index range,
        merged, then the page's rows by id."""
        await self.snapshot()
        pairs = [
            (row["queue"], row["workflow"])
            for row in await self.all("pairs")
            if (queue is None or row["queue"] == queue)
            and (workflow is None or row["workflow"] == workflow)
        ]
        statuses = ALL_STATES if status is None else (status,)
        ranges = []
        for (pair_queue, pair_workflow), state in itertools.product(pairs, statuses):
            found = await self.all(
                "listed_ids",
                queue=pair_queue,
                workflow=pair_workflow,
                status=state,
                cursor=cursor,
                limit=limit,
            )
            ranges.append([str(row["id"]) for row in found])
        ids = list(itertools.islice(heapq.merge(*ranges, reverse=True), limit))
        rows = await self.all("runs_by_ids", ids=ids) if ids else []
        runs = readable(records.run_record, rows)
        return RunPage(runs=runs, cursor=ids[-1] if len(ids) == limit and ids else None)

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        """See ``Backend.get_stats``."""
        await self.snapshot()
        activity = [
            PairActivity(
                queue=str(row["queue"]),
                workflow=str(row["workflow"]),
                scheduled=int(row["scheduled"]),
                queued=int(row["queued"]),
                running=int(row["running"]),
                suspended=int(row["suspended"]),
                needs_attention=int(row["needs_attention"]),
                paused=int(row["paused"]),
            )
            for row in await self.all("pair_activity")
        ]
        counters = [
            pair_counters(row) for row in await self.all("sum_counters", **minutes(since, now))
        ]
        oldest = {
            str(row["queue"]): float(row["oldest"])
            for row in await self.all("oldest_claimable")
            if row["oldest"] is not None
        }
        workers = [records.worker_record(row) for row in await self.all("live_workers", now=now)]
        return StatsSnapshot(
            activity=activity, counters=counters, oldest_claimable=oldest, workers=workers
        )

    async def get_gates(self, prefix: str) -> list[GateUsage]:
        """See ``Backend.get_gates``."""
        rows = await self.all("gates_with_prefix", prefix=prefix)
        return [
            GateUsage(str(row["gate"]), int(row["admitted"]), int(row["waiting"])) for row in rows
        ]

    async def get_counters(self, since: float, now: float, period: int) -> list[PeriodCounters]:
        """See ``Backend.get_counters``: one range of a counters table's primary key,
        summed."""
        rows = counter_rows(since, now, period)
        found: dict[float, list[PairCounters]] = {}
        query = "hour_periods" if rows.hourly else "minute_periods"
        bounds = {"first": rows.first, "last": rows.last, "period": rows.period}
        for row in await self.all(query, **bounds):
            found.setdefault(float(row["start"]), []).append(pair_counters(row))
        return [PeriodCounters(start, counters) for start, counters in found.items()]


def minutes(since: float, now: float) -> dict[str, int]:
    """The bounds of the minutes holding ``since`` and ``now``."""
    return {"first": int(since // 60) * 60, "last": int(now // 60) * 60}


def pair_counters(row: DictRow) -> PairCounters:
    """A counters row (summed or not) as PairCounters."""
    return PairCounters(
        queue=str(row["queue"]),
        workflow=str(row["workflow"]),
        executions=int(row["executions"]),
        timed=int(row["timed"]),
        run_time=float(row["run_time"]),
        succeeded=int(row["succeeded"]),
        failed=int(row["failed"]),
        canceled=int(row["canceled"]),
        retried=int(row["retried"]),
    )
