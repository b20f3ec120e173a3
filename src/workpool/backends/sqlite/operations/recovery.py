"""Bulk actions by filter, one page per transaction (``contract/recovery.py``)."""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Sequence

from workpool.backends.base import BulkAction, BulkPage, RunFilter
from workpool.backends.selecting import acts_on
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admin import Admin


class Recovery(Admin):
    """``act_on_runs``: read a page of candidates, then act on those that qualify."""

    def act_on_runs(
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
        ids = self._candidates(run_filter, cursor, limit)
        rows = self._execute("bulk_candidates", ids=json.dumps(ids)).fetchall()
        chosen = [row for row in rows if acts_on(action, run_filter, row)]
        fresh = iter(new_ids)
        if action == "retry":
            for row in chosen:
                self.rerun(records.text(row, "id"), next(fresh), now)
        elif action == "cancel":
            for row in chosen:
                self._cancel_active(
                    records.text(row, "id"), records.text(row, "status"), reason, now
                )
        elif action == "delete":
            self._delete_runs([records.text(row, "id") for row in chosen])
        return BulkPage(changed=len(chosen), cursor=ids[-1] if len(ids) == limit else None)

    def _candidates(self, run_filter: RunFilter, cursor: str | None, limit: int) -> list[str]:
        """Up to ``limit`` ids below ``cursor``, largest first, of the runs in the
        filter's statuses and (queue, workflow) pairs."""
        query = "listed_ids" if cursor is None else "listed_ids_after"
        ranges = []
        for pair in self._execute("pairs").fetchall():
            if run_filter.queue is not None and pair["queue"] != run_filter.queue:
                continue
            if run_filter.workflow is not None and pair["workflow"] != run_filter.workflow:
                continue
            for status in run_filter.statuses:
                found = self._execute(
                    query,
                    queue=pair["queue"],
                    workflow=pair["workflow"],
                    status=status,
                    cursor=cursor,
                    limit=limit,
                )
                ranges.append([str(row["id"]) for row in found])
        return list(itertools.islice(heapq.merge(*ranges, reverse=True), limit))
