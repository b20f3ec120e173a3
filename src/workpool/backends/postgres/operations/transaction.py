"""The state of one transaction that every part of ``Operations`` shares.

A ``Transaction`` holds the connection and the named queries, collects ``woken`` (the
queues that received runnable work: their listeners are notified at commit), the
counters this transaction adds (written once per minute and pair by
``flush_counters``), and caches each queue's settings for the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from workpool.backends.base import Lease, QueueSettings

COUNTERS = ("executions", "timed", "run_time", "succeeded", "failed", "canceled", "retried")
"""The columns of the counters table (see ``PairCounters``), in tally order."""
EXECUTIONS, TIMED, RUN_TIME, SUCCEEDED, _, _, RETRIED = range(len(COUNTERS))

Row = dict[str, Any]


class Transaction:
    """Statements on one connection inside one transaction, and what they collect."""

    def __init__(
        self, connection: AsyncConnection[DictRow], queries: Mapping[str, str], channel: str
    ) -> None:
        self._connection = connection
        self._queries = queries
        self._channel = channel
        self.woken: set[str] = set()
        self._counts: dict[tuple[int, str, str], list[float]] = {}
        self._queue_settings: dict[str, QueueSettings] = {}

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

    async def flush_counters(self) -> None:
        """Write the counters this transaction added to, one row per (minute, pair), in
        one statement and in key order (so concurrent transactions lock counter rows in
        one order)."""
        if not self._counts:
            return
        keys = sorted(self._counts)
        columns: dict[str, list[Any]] = {
            "minutes": [minute for minute, _, _ in keys],
            "queues": [queue for _, queue, _ in keys],
            "workflows": [workflow for _, _, workflow in keys],
        }
        for index, name in enumerate(COUNTERS):
            values = [self._counts[key][index] for key in keys]
            columns[name] = values if name == "run_time" else [int(value) for value in values]
        await self._run("add_counters", **columns)
        self._counts.clear()

    async def notify_woken(self) -> None:
        """Notify the listeners of each woken queue; PostgreSQL delivers at commit, once per
        distinct (channel, payload) of the transaction."""
        for queue in sorted(self.woken):
            await self._one("notify", channel=self._channel, queue=queue)


def settings_from_row(queue: str, row: Row | None) -> QueueSettings:
    """A ``get_queue`` row as QueueSettings (no row: the defaults)."""
    if row is None:
        return QueueSettings(queue)
    limit = row["max_parallelism"]
    return QueueSettings(queue, None if limit is None else int(limit), bool(row["paused"]))
