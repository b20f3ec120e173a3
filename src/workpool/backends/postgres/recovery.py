"""The recovery operations of ``PostgresBackend`` (``contract/recovery.py``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from workpool.backends.base import BulkAction, BulkPage, FailureGroup, RunFilter
from workpool.backends.postgres.operations import Operations
from workpool.backends.postgres.reads import Reads


class PostgresRecovery:
    """Bulk actions and failure groups; the base of ``PostgresBackend``, which sets
    ``_transact`` and ``_read``."""

    _transact: Callable[[Callable[[Operations], Awaitable[Any]]], Awaitable[Any]]
    _read: Callable[[Callable[[Reads], Awaitable[Any]]], Awaitable[Any]]

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
            lambda ops: ops.act_on_runs(action, run_filter, cursor, limit, now, reason, new_ids)
        )
        return page

    async def failure_groups(self) -> list[FailureGroup]:
        """See ``Backend.failure_groups``: one SELECT of the groups table."""
        rows = await self._read(lambda reads: reads.all("failure_groups"))
        return [
            FailureGroup(
                workflow=str(row["workflow"]),
                error_type=str(row["error_type"]),
                count=int(row["count"]),
                first_seen=float(row["first_seen"]),
                last_seen=float(row["last_seen"]),
                example_run_id=row["example_run_id"],
            )
            for row in rows
        ]
