"""Concurrency gates and rate limits: how a run that becomes queued is admitted.

A run joining ``queued`` first reserves its start time with its rate limiters (GCRA),
which may defer it to ``scheduled``; then its gate admits its oldest waiting runs
while it has room. A run leaving its place frees it (``_leave_gate``), and the caller
then fills the gate again. See "Concurrency gates" and "Rate limits" in
``contract/enqueue.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.transaction import Transaction

RATE_ROUNDING = 1e-6
"""Seconds: a reserved start this close to now is now (float error in TAT - tolerance)."""


class Admission(Transaction):
    """Gate places and rate reservations of runs joining or leaving ``queued``."""

    def _leave_gate(self, run_id: str, *, gated: bool = True) -> tuple[str | None, int | None]:
        """Give up the run's place at its gate, if it holds one; return (gate, limit).
        ``gated=False``: the caller read that the run has no gate (no statement)."""
        if not gated:
            return None, None
        row = self._execute("leave_gate", id=run_id).fetchone()
        if row is None:
            return None, None
        gate = records.text(row, "gate")
        self._execute("count_admitted", gate=gate, delta=-1)
        return gate, records.integer(row, "gate_limit")

    def _reserve_starts(self, rows: Sequence[sqlite3.Row], now: float) -> None:
        """For runs that just became queued: use a reservation made earlier, or make
        one, deferring the run to its start time if that is later than ``now``."""
        for row in rows:
            if row["status"] != "queued" or row["rate_limits"] is None:
                continue
            if row["rate_reserved"]:
                self._execute("use_reservation", id=row["id"])
            else:
                self._reserve_start(row["id"], row["rate_limits"], now)

    def _reserve_start(self, run_id: str, limits: str, now: float) -> float:
        """Reserve the run's start time with each of its limiters (GCRA); a start later
        than ``now`` makes the run scheduled then. Returns the start time."""
        spacing: list[tuple[str, float, float, float]] = []
        for limiter, count, per in json.loads(limits):
            row = self._execute("limiter_tat", id=limiter).fetchone()
            tat = now if row is None else float(row["tat"])
            interval = float(per) / int(count)
            spacing.append((str(limiter), tat, interval, float(per) - interval))
        start = max([now, *(tat - tolerance for _, tat, _, tolerance in spacing)])
        if start - now < RATE_ROUNDING:
            start = now  # a burst start a rounding error after now is now
        for limiter, tat, interval, _ in spacing:
            self._execute("set_limiter_tat", id=limiter, tat=max(tat, start) + interval)
        if start > now:
            self._execute("defer_start", id=run_id, start=start)
        return start

    def _admitted(self, gate: str) -> int:
        row = self._execute("gate_admitted", gate=gate).fetchone()
        return 0 if row is None else records.integer(row, "admitted")

    def _joined(self, rows: Sequence[sqlite3.Row], now: float) -> None:
        """Runs that just became queued (RETURNING rows): reserve their start times,
        then admit at their gates."""
        self._reserve_starts(rows, now)
        for row in rows:
            if row["status"] == "queued" and row["gate"] is not None:
                self._fill(row["gate"], row["gate_limit"])

    def _fill(self, gate: str | None, limit: int | None) -> None:
        """Admit the gate's oldest waiting runs while it admits fewer than ``limit``."""
        if gate is None or limit is None:
            return
        room = limit - self._admitted(gate)
        if room <= 0:
            return
        admitted = self._execute("admit_waiting", gate=gate, room=room).fetchall()
        if admitted:
            self._execute("count_admitted", gate=gate, delta=len(admitted))
            self.woken.update(records.text(row, "queue") for row in admitted)


def gate_id(workflow: str, key: str | None) -> str:
    """The gate of (workflow, key); the name's length keeps names with ':' apart."""
    return f"{len(workflow)}:{workflow}:{key if key is not None else ''}"
