"""Concurrency gates and rate limits: how a run that becomes queued is admitted.

As on SQLite (see ``backends/sqlite/operations/admission.py``), with PostgreSQL's row
locks in place of SQLite's single writer: a gate's row (``gates``) and a limiter's row
(``limiters``) are locked by the first statement that reads them in a transaction, so
admissions at one gate, and reservations of one limiter, happen one transaction at a
time, and those of other gates and limiters do not wait. No statement reads the runs
waiting at a full gate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from workpool.backends.postgres.operations.transaction import Row, Transaction
from workpool.backends.sqlite import records

RATE_ROUNDING = 1e-6
"""Seconds: a reserved start this close to now is now (float error in TAT - tolerance)."""


class Admission(Transaction):
    """Gate places and rate reservations of runs joining or leaving ``queued``."""

    async def _leave_gate(
        self, run_id: str, *, gated: bool = True
    ) -> tuple[str | None, int | None]:
        """Give up the run's place at its gate, if it holds one; return (gate, limit)."""
        if not gated:
            return None, None
        row = await self._one("leave_gate", id=run_id)
        if row is None:
            return None, None
        gate = str(row["gate"])
        await self._run("count_admitted", gate=gate, delta=-1)
        return gate, None if row["gate_limit"] is None else int(row["gate_limit"])

    async def _reserve_starts(self, rows: Sequence[Row], now: float) -> None:
        """For runs that just became queued: use a reservation made earlier, or make
        one, deferring the run to its start time if that is later than ``now``."""
        for row in rows:
            if row["status"] != "queued" or row["rate_limits"] is None:
                continue
            if row["rate_reserved"]:
                await self._run("use_reservation", id=row["id"])
            else:
                await self._reserve_start(row["id"], row["rate_limits"], now)

    async def _reserve_start(self, run_id: str, limits: str, now: float) -> float:
        """Reserve the run's start time with each of its limiters (GCRA), in limiter
        order; a start later than ``now`` makes the run scheduled then."""
        spacing: list[tuple[str, float, float, float]] = []
        for limiter, count, per in sorted(json.loads(limits)):
            row = await self._one("limiter_tat", id=limiter, now=now)
            tat = now if row is None else float(row["tat"])
            interval = float(per) / int(count)
            spacing.append((str(limiter), tat, interval, float(per) - interval))
        start = max([now, *(tat - tolerance for _, tat, _, tolerance in spacing)])
        if start - now < RATE_ROUNDING:
            start = now
        for limiter, tat, interval, _ in spacing:
            await self._run("set_limiter_tat", id=limiter, tat=max(tat, start) + interval)
        if start > now:
            await self._run("defer_start", id=run_id, start=start)
        return start

    async def _admitted(self, gate: str) -> int:
        """The gate's admitted runs; locks its row for the rest of the transaction."""
        row = await self._one("gate_admitted", gate=gate)
        return 0 if row is None else int(row["admitted"])

    async def _joined(self, rows: Sequence[Row], now: float) -> None:
        """Runs that just became queued (RETURNING rows): reserve their start times,
        then admit at their gates."""
        await self._reserve_starts(rows, now)
        for row in rows:
            if row["status"] == "queued" and row["gate"] is not None:
                await self._fill(row["gate"], row["gate_limit"])

    async def _fill(self, gate: str | None, limit: int | None) -> None:
        """Admit the gate's oldest waiting runs while it admits fewer than ``limit``."""
        if gate is None or limit is None:
            return
        room = limit - await self._admitted(gate)
        if room <= 0:
            return
        admitted = await self._all("admit_waiting", gate=gate, room=room)
        if admitted:
            await self._run("count_admitted", gate=gate, delta=len(admitted))
            self.woken.update(records.text(row, "queue") for row in admitted)
