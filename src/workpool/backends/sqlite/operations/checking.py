"""Saying what is wrong with run rows an operation found corrupt: a row whose column holds
a value of another type (``UPDATE runs SET created_at = 'noon'``) fails the
``sound_run`` test of queries.sql inside the statement that claims, reaps or holds it
(so a sound row costs no second read), and is read again here, to be set aside and
reported by what is wrong with it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import Admission


class Checking(Admission):
    """Reading the corrupt runs an operation found, to say what is wrong with each."""

    def _checked_rows(self, ids: Sequence[str]) -> dict[str, tuple[str | None, sqlite3.Row]]:
        """Run id -> (what is wrong with its row or None, the row), for the stored runs
        of ``ids`` (one SELECT)."""
        rows = self._execute("runs_to_check", ids=json.dumps(list(ids))).fetchall()
        return {str(row["id"]): (records.run_problem(row), row) for row in rows}
