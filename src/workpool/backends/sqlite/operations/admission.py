"""Concurrency gates and rate limits: how a run that becomes queued is admitted.

A run joining ``queued`` first reserves its start time with its rate limiters (GCRA),
which may defer it to ``scheduled``; then its gate admits its oldest waiting runs
while it has room. A run leaving its place frees it (``_leave_gate``), and the caller
then fills the gate again. See "Concurrency gates", "Several gates" and "Rate limits"
in ``contract/enqueue.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from workpool.backends.contract.runs import NewRun
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.transaction import Transaction

RATE_ROUNDING = 1e-6
"""Seconds: a reserved start this close to now is now (float error in TAT - tolerance)."""


class Admission(Transaction):
    """Gate places and rate reservations of runs joining or leaving ``queued``."""

    def _leave_gate(self, run_id: str, *, gated: bool = True) -> list[tuple[str, int]]:
        """Give up the run's places at its gates, if it holds them; return each (gate,
        limit) for ``_refill``. ``gated=False``: the caller read that the run has no gate
        (no statement)."""
        if not gated:
            return []
        row = self._execute("leave_gate", id=run_id).fetchone()
        if row is None:
            return []
        left = sound_gates(row)  # (a run set aside may have a malformed list)
        for gate, _ in left:
            self._execute("count_admitted", gate=gate, delta=-1)
        return left

    def _refill(self, left: Sequence[tuple[str, int]]) -> None:
        """After a run left them: each gate admits its waiting runs, in gate order."""
        for gate, limit in left:
            self._fill(gate, limit)

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
        """Admit the gate's oldest waiting runs while it admits fewer than ``limit``.
        A run subject to other gates too is admitted only if all have room (taking a
        place at each); else it moves to wait at the first full one, which examines it
        again when it frees a place."""
        if gate is None or limit is None:
            return
        room = limit - self._admitted(gate)
        while room > 0:
            waiting = self._execute("first_waiting", gate=gate, room=room).fetchall()
            if not waiting:
                return
            admit = [row for row in waiting if self._all_admit(row, gate)]
            if admit:
                ids = json.dumps([records.text(row, "id") for row in admit])
                self._execute("admit_runs", ids=ids)
                self._execute("count_admitted", gate=gate, delta=len(admit))
                self.woken.update(records.text(row, "queue") for row in admit)
            if len(admit) == len(waiting):
                return
            room -= len(admit)

    def _all_admit(self, row: sqlite3.Row, gate: str) -> bool:
        """Whether every other gate of a run waiting at ``gate`` has room: if so take a
        place at each; else move the run to wait at the first full one."""
        others = [(other, limit) for other, limit in gates_of(row) if other != gate]
        for other, limit in others:
            if self._admitted(other) >= limit:
                self._execute("wait_at_gate", id=row["id"], gate=other, gate_limit=limit)
                return False
        for other, _ in others:
            self._execute("count_admitted", gate=other, delta=1)
        return True


def run_gates(run: NewRun) -> tuple[str | None, int | None, str | None]:
    """(gate, gate_limit, gate_list) to store for a new run: its first gate in id
    order, and with several, the list of all (see migration 0021)."""
    gates = [(gate.gate, gate.limit) for gate in run.gates]
    if run.max_concurrency is not None:
        gates.append((gate_id(run.workflow, run.concurrency_key), run.max_concurrency))
    if not gates:
        return None, None, None
    gates.sort()
    gate, limit = gates[0]
    return gate, limit, json.dumps(gates) if len(gates) > 1 else None


def gates_of(row: sqlite3.Row | dict[str, object]) -> list[tuple[str, int]]:
    """Every (gate, limit) of a run row read with gate, gate_limit and gate_list."""
    if row["gate_list"] is not None:
        return [(str(gate), int(limit)) for gate, limit in json.loads(str(row["gate_list"]))]
    if row["gate"] is None or row["gate_limit"] is None:
        return []
    return [(str(row["gate"]), int(str(row["gate_limit"])))]


def sound_gates(row: sqlite3.Row | dict[str, object]) -> list[tuple[str, int]]:
    """The gates of a run row found corrupt, as far as they can be read (a place at a
    gate whose limit is unreadable is freed without admitting at it: limit 0)."""
    try:
        return gates_of(row)
    except (TypeError, ValueError):
        gate = row["gate"]
        return [] if not isinstance(gate, str) else [(gate, 0)]


def gate_id(workflow: str, key: str | None) -> str:
    """The gate of (workflow, key); the name's length keeps names with ':' apart."""
    return f"{len(workflow)}:{workflow}:{key if key is not None else ''}"
