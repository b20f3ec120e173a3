"""Checking run rows before an operation trusts them. PostgreSQL's typed columns refuse
most corruptions, but not every value workpool cannot use: ``UPDATE runs SET created_at =
'nan'`` is stored. Such a row is found here, before any write, so one corrupt run never
fails the operation of every other run in it."""

from __future__ import annotations

from collections.abc import Sequence

from workpool.backends.postgres.operations.admission import Admission
from workpool.backends.postgres.operations.transaction import Row
from workpool.backends.sqlite import records


class Checking(Admission):
    """Finding the corrupt runs among those an operation is about to change."""

    async def _checked_rows(self, ids: Sequence[str]) -> dict[str, tuple[str | None, Row]]:
        """Run id -> (what is wrong with its row or None, the row), for the stored runs
        of ``ids`` (one SELECT)."""
        rows = await self._all("runs_to_check", ids=list(ids))
        return {str(row["id"]): (records.run_problem(row), row) for row in rows}

    async def _corrupt_among(self, ids: Sequence[str]) -> set[str]:
        """The runs of ``ids`` whose row is corrupt (left as they are: the claim that
        reaps one when its lease expires sets it aside and reports it)."""
        checked = await self._checked_rows(ids)
        return {run_id for run_id, (problem, _) in checked.items() if problem is not None}
