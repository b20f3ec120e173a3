"""The state of one transaction that every part of ``Operations`` shares.

A ``Transaction`` holds the connection and the named queries, collects ``woken`` (the
queues that received runnable work, whose waiting listeners it reads for the backend
to wake after the commit, see ``waiting.py``), the
counters this transaction adds (written once per minute and pair, and once per hour and
pair, by ``flush_counters``), and caches each queue's settings for the transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from workpool.backends.base import Lease, QueueSettings

COUNTERS = ("executions", "timed", "run_time", "succeeded", "failed", "canceled", "retried")
"""The columns of the counters table (see ``PairCounters``), in tally order."""
EXECUTIONS, TIMED, RUN_TIME, _, _, _, RETRIED = range(len(COUNTERS))


class Transaction:
    """Statements on one connection inside one transaction, and what they collect."""

    def __init__(self, connection: sqlite3.Connection, queries: Mapping[str, str]) -> None:
        self._connection = connection
        self._queries = queries
        self.woken: set[str] = set()
        self._counts: dict[tuple[int, str, str], list[float]] = {}
        self._queue_settings: dict[str, QueueSettings] = {}

    def _execute(self, query: str, /, **parameters: Any) -> sqlite3.Cursor:
        return self._connection.execute(self._queries[query], parameters)

    def _held(self, lease: Lease) -> sqlite3.Row | None:
        found = self._execute("held_lease", id=lease.run_id, token=lease.token).fetchone()
        return found if isinstance(found, sqlite3.Row) else None

    def get_queue(self, queue: str) -> QueueSettings:
        """The queue's settings, or the defaults; read once per queue per transaction
        (a finish batch asks for every run it ends)."""
        settings = self._queue_settings.get(queue)
        if settings is None:
            settings = settings_from_row(queue, self._execute("get_queue", queue=queue).fetchone())
            self._queue_settings[queue] = settings
        return settings

    def _left_running(self, queue: str) -> None:
        """A run of ``queue`` stops running: a full queue's idle workers may start one."""
        if self.get_queue(queue).max_parallelism is not None:
            self.woken.add(queue)

    def _tally(self, queue: str, workflow: str, now: float) -> list[float]:
        """The counters (in ``COUNTERS`` order) this transaction adds to the minute of
        ``now`` for (queue, workflow); ``flush_counters`` writes them."""
        key = (int(now // 60) * 60, queue, workflow)
        tally = self._counts.get(key)
        if tally is None:
            tally = self._counts[key] = [0.0] * len(COUNTERS)
        return tally

    def waiters_to_wake(self) -> list[str]:
        """The listener addresses announced for the queues this transaction woke."""
        if not self.woken:
            return []
        rows = self._execute("waiters_of", queues=json.dumps(sorted(self.woken)))
        return list(dict.fromkeys(str(row["address"]) for row in rows))

    def announce_waiter(self, address: str, queues: Sequence[str]) -> None:
        """Record that the listener at ``address`` waits for work in ``queues``."""
        self._execute("announce_waiter", address=address, queues=json.dumps(list(queues)))

    def forget_waiters(self, addresses: Collection[str]) -> None:
        """Drop the announcements of listeners that are gone."""
        self._execute("forget_waiters", addresses=json.dumps(sorted(addresses)))

    def flush_counters(self) -> None:
        """Write the counters this transaction added to, one row per (minute, pair) and
        one per (hour, pair)."""
        for (minute, queue, workflow), tally in self._counts.items():
            self._execute(
                "add_counters",
                minute=minute,
                queue=queue,
                workflow=workflow,
                **dict(zip(COUNTERS, tally, strict=True)),
            )
        for (hour, queue, workflow), tally in hourly(self._counts).items():
            self._execute(
                "add_hour_counters",
                hour=hour,
                queue=queue,
                workflow=workflow,
                **dict(zip(COUNTERS, tally, strict=True)),
            )
        self._counts.clear()


def hourly(
    counts: Mapping[tuple[int, str, str], list[float]],
) -> dict[tuple[int, str, str], list[float]]:
    """Per-minute tallies summed per (hour, queue, workflow), in key order."""
    hours: dict[tuple[int, str, str], list[float]] = {}
    for (minute, queue, workflow), tally in sorted(counts.items()):
        key = (minute // 3600 * 3600, queue, workflow)
        total = hours.setdefault(key, [0.0] * len(tally))
        for index, amount in enumerate(tally):
            total[index] += amount
    return hours


def settings_from_row(queue: str, row: sqlite3.Row | None) -> QueueSettings:
    """A ``get_queue`` row as QueueSettings (no row: the defaults)."""
    if row is None:
        return QueueSettings(queue)
    limit = row["max_parallelism"]
    return QueueSettings(queue, None if limit is None else int(limit), bool(row["paused"]))
