"""Bulk actions by filter, one page per transaction (``contract/recovery.py``)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

from workpool.backends.base import TERMINAL_STATES, BulkAction, BulkPage, RunFilter
from workpool.backends.postgres.operations.admin import Admin
from workpool.backends.selecting import acts_on


class Recovery(Admin):
    """``act_on_runs``: read a page of candidates, then act on those that qualify, each
    locked and checked again by the action."""

    async def act_on_runs(
        self,
        action: BulkAction,
        run_filter: RunFilter,
        cursor: str | None,
        limit: int,
        now: float,
        reason: str | None,
        new_ids: Sequence[str],
    ) -> BulkPage:
        """See ``Backend.act_on_runs``: ``list_runs``' index ranges, then one read of
        the candidates' rows."""
        ids = await self._candidates(run_filter, cursor, limit)
        rows = await self._all("bulk_candidates", ids=ids)
        chosen = [str(row["id"]) for row in rows if acts_on(action, run_filter, row)]
        changed = len(chosen)
        if action == "retry":
            changed = await self._rerun_many(chosen, new_ids, now)
        elif action == "cancel":
            changed = 0
            for run_id in chosen:
                locked = await self._one("run_status", id=run_id)
                if locked is None or str(locked["status"]) in TERMINAL_STATES:
                    continue
                if locked["cancel_requested"]:
                    continue
                await self._cancel_active(run_id, str(locked["status"]), reason, now)
                changed += 1
        elif action == "delete":
            changed = await self._delete_terminal(chosen)
        return BulkPage(changed=changed, cursor=ids[-1] if len(ids) == limit else None)

    async def _rerun_many(self, chosen: list[str], new_ids: Sequence[str], now: float) -> int:
        """Re-run, as ``rerun`` does, the runs of ``chosen`` still re-runnable, in a few
        statements whatever their number: lock them, insert their copies, link both
        ways, then reserve and admit the new runs (once per gate)."""
        locked = [str(row["id"]) for row in await self._all("lock_rerunnable", ids=chosen)]
        if len(new_ids) < len(locked):
            raise ValueError(f"a retry page of {len(locked)} runs needs as many new ids")
        fresh = list(new_ids[: len(locked)])
        rows = await self._all("insert_reruns", ids=locked, new_ids=fresh, now=now)
        if len(rows) < len(locked):
            raise ValueError("cannot re-run: a run with one of the new ids exists")
        await self._run("mark_retried_as_many", ids=locked, new_ids=fresh)
        await self._reserve_starts(rows, now)
        gates = {(row["gate"], row["gate_limit"]) for row in rows if row["gate"] is not None}
        for gate, limit in sorted(gates):
            await self._fill(gate, limit)
        self.woken.update(str(row["queue"]) for row in rows if row["gate"] is None)
        return len(rows)

    async def _candidates(self, run_filter: RunFilter, cursor: str | None, limit: int) -> list[str]:
        """Up to ``limit`` ids below ``cursor``, largest first, of the runs in the
        filter's statuses and (queue, workflow) pairs."""
        ranges = []
        for pair in await self._all("pairs"):
            if run_filter.queue is not None and pair["queue"] != run_filter.queue:
                continue
            if run_filter.workflow is not None and pair["workflow"] != run_filter.workflow:
                continue
            for status in run_filter.statuses:
                found = await self._all(
                    "listed_ids",
                    queue=pair["queue"],
                    workflow=pair["workflow"],
                    status=status,
                    cursor=cursor,
                    limit=limit,
                )
                ranges.append([str(row["id"]) for row in found])
        return list(itertools.islice(heapq.merge(*ranges, reverse=True), limit))
