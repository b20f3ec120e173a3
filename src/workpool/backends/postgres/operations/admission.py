"""Concurrency gates and rate limits: how a run that becomes queued is admitted.

As on SQLite (see ``backends/sqlite/operations/admission.py``), with PostgreSQL's row
locks in place of SQLite's single writer: a gate's row (``gates``) and a limiter's row
(``limiters``) are locked by the first statement that reads them in a transaction, so
admissions at one gate, and reservations of one limiter, happen one transaction at a
time, and those of other gates and limiters do not wait. No statement reads the runs
waiting at a full gate.

A run under several gates (shared limits) is admitted at all or waits at the first full
one, as on SQLite. The gates of the runs it finishes are locked first, in name order
(``finishing.py``); a waiting run's other gates are locked ``NOWAIT`` when a gate admits
it, out of that order: if another transaction holds one, this one fails before its
commit and runs again (``database.py``), instead of the two waiting on each other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from workpool.backends.postgres.operations.transaction import Row, Transaction
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import gates_of, sound_gates

RATE_ROUNDING = 1e-6
"""Seconds: a reserved start this close to now is now (float error in TAT - tolerance)."""


class Admission(Transaction):
    """Gate places and rate reservations of runs joining or leaving ``queued``."""

    async def _leave_gate(self, run_id: str, *, gated: bool = True) -> list[tuple[str, int]]:
        """Give up the run's places at its gates, if it holds them; return each (gate,
        limit) for ``_refill``."""
        if not gated:
            return []
        row = await self._one("leave_gate", id=run_id)
        if row is None:
            return []
        left = sound_gates(row)  # (a run set aside may have a malformed list)
        for gate, _ in left:
            await self._run("count_admitted", gate=gate, delta=-1)
        return left

    async def _refill(self, left: Sequence[tuple[str, int]]) -> None:
        """After a run left them: each gate admits its waiting runs, in gate order."""
        for gate, limit in left:
            await self._fill(gate, limit)

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
        while room > 0:
            waiting = await self._all("first_waiting", gate=gate, room=room)
            if not waiting:
                return
            admit = [row for row in waiting if await self._all_admit(row, gate)]
            if admit:
                ids = [records.text(row, "id") for row in admit]
                await self._run("admit_runs", ids=ids)
                await self._run("count_admitted", gate=gate, delta=len(admit))
                self.woken.update(records.text(row, "queue") for row in admit)
            if len(admit) == len(waiting):
                return
            room -= len(admit)

    async def _all_admit(self, row: Row, gate: str) -> bool:
        """Whether every other gate of a run waiting at ``gate`` has room: if so take a
        place at each; else move the run to wait at the first full one."""
        others = [(other, limit) for other, limit in gates_of(row) if other != gate]
        for other, limit in others:
            held = await self._one("other_gate_admitted", gate=other)
            if held is not None and int(held["admitted"]) >= limit:
                await self._run("wait_at_gate", id=row["id"], gate=other, gate_limit=limit)
                return False
        for other, _ in others:
            await self._run("count_admitted", gate=other, delta=1)
        return True
