"""The recovery operations of ``SQLiteBackend`` (``contract/recovery.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from workpool.backends.base import BulkAction, BulkPage, FailureGroup, RunFilter
from workpool.backends.sqlite.connection import ConnectionThread
from workpool.backends.sqlite.operations import Operations


class SQLiteRecovery:
    """Bulk actions and failure groups; the base of ``SQLiteBackend``, which sets the
    connection thread, the queries and ``_transact``."""

    _thread: ConnectionThread
    _queries: Mapping[str, str]
    _transact: Callable[[Callable[[Operations], Any]], Awaitable[Any]]

    async def act_on_runs(
        self,
        action: BulkAction,
        run_filter: RunFilter,
        cursor: str | None,
        limit: int,
        now: float,
        *,
        reason: str | None = None,
        new_ids: Sequence[str] = (),
    ) -> BulkPage:
        """See ``Backend.act_on_runs``: one transaction per page."""
        page: BulkPage = await self._transact(
            lambda operations: operations.act_on_runs(
                action, run_filter, cursor, limit, now, reason, new_ids
            )
        )
        return page

    async def failure_groups(self) -> list[FailureGroup]:
        """See ``Backend.failure_groups``: one SELECT of the groups table."""
        query = self._queries["failure_groups"]

        def read(connection: sqlite3.Connection) -> list[FailureGroup]:
            return [
                FailureGroup(
                    workflow=str(row["workflow"]),
                    error_type=str(row["error_type"]),
                    count=int(row["count"]),
                    first_seen=float(row["first_seen"]),
                    last_seen=float(row["last_seen"]),
                    example_run_id=row["example_run_id"],
                )
                for row in connection.execute(query)
            ]

        return await self._thread.read(read)
