"""Checking run rows before an operation trusts them: a row whose column holds a value of
another type (``UPDATE runs SET created_at = 'noon'``) is found here, before any write,
so one corrupt run never fails the operation of every other run in it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import Admission


class Checking(Admission):
    """Finding the corrupt runs among those an operation is about to change."""

    def _checked_rows(self, ids: Sequence[str]) -> dict[str, tuple[str | None, sqlite3.Row]]:
        """Run id -> (what is wrong with its row or None, the row), for the stored runs
        of ``ids`` (one SELECT)."""
        rows = self._execute("runs_to_check", ids=json.dumps(list(ids))).fetchall()
        return {str(row["id"]): (records.run_problem(row), row) for row in rows}

    def _corrupt_among(self, ids: Sequence[str]) -> set[str]:
        """The runs of ``ids`` whose row is corrupt (left as they are: the claim that
        reaps one when its lease expires sets it aside and reports it)."""
        checked = self._checked_rows(ids)
        return {run_id for run_id, (problem, _) in checked.items() if problem is not None}
