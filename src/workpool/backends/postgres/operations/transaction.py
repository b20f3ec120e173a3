"""The state of one transaction that every part of ``Operations`` shares.

A ``Transaction`` holds the connection and the named queries, collects ``woken`` (the
queues that received runnable work: their listeners are notified after the commit, see
``notifying``), the
counters this transaction adds (written once per minute and pair, and once per hour and
pair, by ``flush_counters``), and caches each queue's settings for the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from workpool.backends.base import Lease, QueueSettings
from workpool.backends.sqlite.operations.transaction import hourly

COUNTERS = ("executions", "timed", "run_time", "succeeded", "failed", "canceled", "retried")
"""The columns of the counters table (see ``PairCounters``), in tally order."""
EXECUTIONS, TIMED, RUN_TIME, SUCCEEDED, _, _, RETRIED = range(len(COUNTERS))

Row = dict[str, Any]


class Cursor(Protocol):
    """What a statement's results must offer (psycopg's ``AsyncCursor`` of dict rows)."""

    @property
    def description(self) -> object:
        """Not None if the statement returns rows."""
        ...

    @property
    def rowcount(self) -> int:
        """How many rows the statement changed."""
        ...

    async def fetchall(self) -> list[Row]:
        """Every row left."""
        ...

    async def fetchone(self) -> Row | None:
        """The next row, or None."""
        ...


class Connection(Protocol):
    """Where statements run: a pooled ``AsyncConnection`` of dict rows, or the caller's
    connection behind an adapter (``postgres/joined.py``)."""

    async def execute(self, query: bytes, parameters: dict[str, Any], /) -> Cursor:
        """Run one statement with its named parameters."""
        ...


class Transaction:
    """Statements on one connection inside one transaction, and what they collect."""

    def __init__(self, connection: Connection, queries: Mapping[str, str]) -> None:
        self._connection = connection
        self._queries = queries
        self.woken: set[str] = set()
        self._counts: dict[tuple[int, str, str], list[float]] = {}
        self._queue_settings: dict[str, QueueSettings] = {}
        self._failures: dict[tuple[str, str], FailureTally] = {}

    async def _all(self, query: str, /, **parameters: Any) -> list[Row]:
        """Run a named query; its rows."""
        cursor = await self._connection.execute(self._queries[query].encode(), parameters)
        return await cursor.fetchall() if cursor.description is not None else []

    async def _one(self, query: str, /, **parameters: Any) -> Row | None:
        """Run a named query; its first row, or None."""
        cursor = await self._connection.execute(self._queries[query].encode(), parameters)
        return await cursor.fetchone() if cursor.description is not None else None

    async def _run(self, query: str, /, **parameters: Any) -> int:
        """Run a named query; how many rows it changed."""
        cursor = await self._connection.execute(self._queries[query].encode(), parameters)
        return cursor.rowcount

    async def _held(self, lease: Lease) -> Row | None:
        return await self._one("held_lease", id=lease.run_id, token=lease.token)

    async def get_queue(self, queue: str) -> QueueSettings:
        """The queue's settings, or the defaults; read once per queue per transaction."""
        settings = self._queue_settings.get(queue)
        if settings is None:
            settings = settings_from_row(queue, await self._one("get_queue", queue=queue))
            self._queue_settings[queue] = settings
        return settings

    async def _left_running(self, queue: str) -> None:
        """A run of ``queue`` stops running: a full queue's idle workers may start one."""
        if (await self.get_queue(queue)).max_parallelism is not None:
            self.woken.add(queue)

    def _tally(self, queue: str, workflow: str, now: float) -> list[float]:
        """The counters (in ``COUNTERS`` order) this transaction adds to the minute of
        ``now`` for (queue, workflow); ``flush_counters`` writes them."""
        key = (int(now // 60) * 60, queue, workflow)
        tally = self._counts.get(key)
        if tally is None:
            tally = self._counts[key] = [0.0] * len(COUNTERS)
        return tally

    def _failure(self, workflow: str, error_type: str) -> FailureTally:
        """What this transaction adds to and takes from the failure group of (workflow,
        error type); ``flush_counters`` writes it."""
        return self._failures.setdefault((workflow, error_type), FailureTally())

    async def flush_counters(self) -> None:
        """Write the failure groups and the counters this transaction changed: the groups
        one row each, then the minutes' and the hours' counters one statement each, every
        set in key order (so concurrent transactions lock their rows in one order)."""
        for (workflow, error_type), change in sorted(self._failures.items()):
            if change.removed:
                await self._run(
                    "remove_failures", workflow=workflow, error_type=error_type, ids=change.removed
                )
            if change.example is not None:
                await self._run(
                    "add_failures",
                    workflow=workflow,
                    error_type=error_type,
                    added=change.added,
                    first=change.first,
                    last=change.last,
                    example=change.example,
                )
        if self._failures:
            await self._run("drop_empty_failure_groups")
        self._failures.clear()
        if not self._counts:
            return
        await self._run("add_counters", **_columns(self._counts, "minutes"))
        await self._run("add_hour_counters", **_columns(hourly(self._counts), "hours"))
        self._counts.clear()


def _columns(counts: Mapping[tuple[int, str, str], list[float]], period: str) -> dict[str, Any]:
    """Tallies by (period start, queue, workflow) as the array parameters of
    ``add_counters`` (``period`` "minutes") or ``add_hour_counters`` ("hours"), in key
    order: whole counts, and run time."""
    keys = sorted(counts)
    columns: dict[str, list[Any]] = {
        period: [start for start, _, _ in keys],
        "queues": [queue for _, queue, _ in keys],
        "workflows": [workflow for _, _, workflow in keys],
    }
    for index, name in enumerate(COUNTERS):
        values = [counts[key][index] for key in keys]
        columns[name] = values if name == "run_time" else [int(value) for value in values]
    return columns


@dataclass(slots=True)
class FailureTally:
    """A transaction's change to one failure group: failures added (the earliest and
    latest end, the latest run) and deleted failed runs taken out."""

    added: int = 0
    first: float = 0.0
    last: float = 0.0
    example: str | None = None
    removed: list[str] = field(default_factory=list)

    def add(self, run_id: str, now: float) -> None:
        """Count failed run ``run_id``, ended at ``now``."""
        self.first = now if self.example is None else min(self.first, now)
        self.last = max(self.last, now)
        self.added, self.example = self.added + 1, run_id


def settings_from_row(queue: str, row: Row | None) -> QueueSettings:
    """A ``get_queue`` row as QueueSettings (no row: the defaults)."""
    if row is None:
        return QueueSettings(queue)
    limit = row["max_parallelism"]
    return QueueSettings(queue, None if limit is None else int(limit), bool(row["paused"]))
