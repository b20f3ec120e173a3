"""Reads that take several statements (listing, stats), each in one read transaction.

Each function runs on the connection's thread inside ``BEGIN`` ... ``COMMIT``, so its
statements see one snapshot of the database.
"""

from __future__ import annotations

import heapq
import itertools
import json
import sqlite3
from collections.abc import Mapping

from workpool.backends.base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    GateUsage,
    PairActivity,
    PairCounters,
    PeriodCounters,
    RunPage,
    StatsSnapshot,
)
from workpool.backends.reading import counter_rows, readable
from workpool.backends.sqlite import records

ALL_STATES = (*sorted(ACTIVE_STATES), *sorted(TERMINAL_STATES))


def list_runs(
    connection: sqlite3.Connection,
    queries: Mapping[str, str],
    status: str | None,
    workflow: str | None,
    queue: str | None,
    limit: int,
    cursor: str | None,
) -> RunPage:
    """See ``Backend.list_runs``: up to ``limit`` ids from each matching index range,
    merged, then the page's rows by id."""
    pairs = [
        (row["queue"], row["workflow"])
        for row in connection.execute(queries["pairs"])
        if (queue is None or row["queue"] == queue)
        and (workflow is None or row["workflow"] == workflow)
    ]
    statuses = ALL_STATES if status is None else (status,)
    query = queries["listed_ids" if cursor is None else "listed_ids_after"]
    ranges = []
    for (pair_queue, pair_workflow), state in itertools.product(pairs, statuses):
        found = connection.execute(
            query,
            {
                "queue": pair_queue,
                "workflow": pair_workflow,
                "status": state,
                "cursor": cursor,
                "limit": limit,
            },
        )
        ranges.append([str(row["id"]) for row in found])
    ids = list(itertools.islice(heapq.merge(*ranges, reverse=True), limit))
    rows = connection.execute(queries["runs_by_ids"], {"ids": json.dumps(ids)}).fetchall()
    runs = readable(records.run_record, rows)
    return RunPage(runs=runs, cursor=ids[-1] if len(ids) == limit and ids else None)


def get_stats(
    connection: sqlite3.Connection, queries: Mapping[str, str], since: float, now: float
) -> StatsSnapshot:
    """See ``Backend.get_stats``: three grouped reads over small tables and index ranges."""
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
        for row in connection.execute(queries["pair_activity"])
    ]
    counters = [
        _pair_counters(row)
        for row in connection.execute(queries["sum_counters"], _minutes(since, now))
    ]
    oldest = {
        str(row["queue"]): float(row["oldest"])
        for row in connection.execute(queries["oldest_claimable"])
        if row["oldest"] is not None
    }
    workers = [
        records.worker_record(row)
        for row in connection.execute(queries["live_workers"], {"now": now})
    ]
    return StatsSnapshot(
        activity=activity, counters=counters, oldest_claimable=oldest, workers=workers
    )


def get_counters(
    connection: sqlite3.Connection,
    queries: Mapping[str, str],
    since: float,
    now: float,
    period: int,
) -> list[PeriodCounters]:
    """See ``Backend.get_counters``: one range of a counters table's primary key, summed."""
    rows = counter_rows(since, now, period)
    found: dict[float, list[PairCounters]] = {}
    query = queries["hour_periods" if rows.hourly else "minute_periods"]
    bounds = {"first": rows.first, "last": rows.last, "period": rows.period}
    for row in connection.execute(query, bounds):
        found.setdefault(float(row["start"]), []).append(_pair_counters(row))
    return [PeriodCounters(start, counters) for start, counters in found.items()]


def _minutes(since: float, now: float) -> dict[str, int]:
    """The bounds of the minutes holding ``since`` and ``now``."""
    return {"first": int(since // 60) * 60, "last": int(now // 60) * 60}


def _pair_counters(row: sqlite3.Row) -> PairCounters:
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


def get_gates(
    connection: sqlite3.Connection, queries: Mapping[str, str], prefix: str
) -> list[GateUsage]:
    """See ``Backend.get_gates``: a range of the gates' key and of the waiting runs' index."""
    high = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"
    rows = connection.execute(queries["gates_in_range"], {"low": prefix, "high": high})
    return [GateUsage(str(row["gate"]), int(row["admitted"]), int(row["waiting"])) for row in rows]
