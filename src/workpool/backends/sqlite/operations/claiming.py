"""``claim``: promote due runs, reap expired leases, then lease the oldest claimable runs."""

from __future__ import annotations

import heapq
import itertools
import json
import sqlite3
from collections.abc import Mapping, Sequence

from workpool.backends.base import ClaimedRun, ClaimResult, SetAside
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import sound_gates
from workpool.backends.sqlite.operations.ending import Ending
from workpool.backends.sqlite.operations.transaction import EXECUTIONS, RETRIED

PROMOTE_BATCH = 1000
"""Most scheduled runs one claim promotes per queue."""
REAP_BATCH = 1000
"""Most expired leases one claim reaps per queue."""
EXPIRE_BATCH = 1000
"""Most runs past their deadline one claim ends per queue."""


class Claiming(Ending):
    """The claim and its three steps: promote, reap, lease."""

    def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        """Promote due runs, reap expired leases, then lease up to ``limit`` queued runs
        of ``workflows`` (None: of every workflow), or one run to isolate if ``alone``."""
        unique = list(dict.fromkeys(queues))
        self._set_aside: list[SetAside] = []
        for queue in unique:
            for promotion in ("promote_due", "promote_timers"):
                promoted = self._execute(
                    promotion, queue=queue, now=now, batch=PROMOTE_BATCH
                ).fetchall()
                self._reserve_starts(promoted, now)
                for gate, gate_limit in {(row["gate"], row["gate_limit"]) for row in promoted}:
                    self._fill(gate, gate_limit)
        for queue in unique:
            self._reap(queue, max_lease_losses, now)
            self._expire(queue, now)
        lease = (worker_id, now, now + lease_seconds)
        served = {queue: self._served(queue, workflows) for queue in unique}
        claimed = self._claim_isolated(served, lease) if alone and limit > 0 else []
        isolated_since: float | None = None
        for queue in unique if not claimed else ():
            row = self._execute(
                "oldest_isolated", queue=queue, workflows=json.dumps(served[queue])
            ).fetchone()
            if row is not None and row["since"] is not None:
                since = float(row["since"])
                isolated_since = since if isolated_since is None else min(isolated_since, since)
            room = self._room(queue, limit - len(claimed))
            if room > 0:
                ids = self._oldest_claimable(queue, served[queue], room, isolate=0)
                claimed += self._lease(ids, lease)
        row = self._execute("next_wake_at", queues=json.dumps(unique)).fetchone()
        wake_at = None if row is None or row["wake_at"] is None else float(row["wake_at"])
        return ClaimResult(
            runs=claimed,
            next_wake_at=wake_at,
            isolated_since=isolated_since,
            set_aside=tuple(self._set_aside),
        )

    def _served(self, queue: str, workflows: Sequence[str] | None) -> list[str]:
        """The workflows whose runs of ``queue`` the claim may take."""
        if workflows is not None:
            return list(dict.fromkeys(workflows))
        return [str(row["workflow"]) for row in self._execute("queue_workflows", queue=queue)]

    def _oldest_claimable(
        self, queue: str, workflows: Sequence[str], limit: int, *, isolate: int
    ) -> list[str]:
        """Up to ``limit`` claimable run ids of the workflows in ``queue``, smallest rank
        first: one index seek of ``limit`` rows per workflow, merged."""
        ranges = [
            [
                (float(row["rank"]), str(row["id"]))
                for row in self._execute(
                    "claimable_in_pair",
                    queue=queue,
                    workflow=workflow,
                    isolate=isolate,
                    limit=limit,
                )
            ]
            for workflow in workflows
        ]
        return [run_id for _, run_id in itertools.islice(heapq.merge(*ranges), limit)]

    def _claim_isolated(
        self, served: Mapping[str, list[str]], lease: tuple[str, float, float]
    ) -> list[ClaimedRun]:
        """The first run to isolate (by rank) of the first queue that has one and room,
        leased."""
        for queue, workflows in served.items():
            ids = self._oldest_claimable(queue, workflows, 1, isolate=1)
            if ids and self._room(queue, 1) > 0:
                return self._lease(ids, lease)
        return []

    def _room(self, queue: str, wanted: int) -> int:
        """How many of ``wanted`` runs of ``queue`` may start now, its settings allowing."""
        settings = self.get_queue(queue)
        if settings.paused:
            return 0
        if settings.max_parallelism is None:
            return wanted
        row = self._execute("running_in_queue", queue=queue).fetchone()
        return min(wanted, settings.max_parallelism - records.integer(row, "running"))

    def _reap(self, queue: str, max_lease_losses: int, now: float) -> None:
        expired = self._execute("expired_leases", queue=queue, now=now, batch=REAP_BATCH)
        rows = expired.fetchall()
        self._set_aside_unsound([str(row["id"]) for row in rows if not row["sound"]])
        for row in rows:
            if not row["sound"]:
                continue
            run_id = records.text(row, "id")
            losses = records.integer(row, "lease_losses") + 1
            tally = self._tally(queue, records.text(row, "workflow"), now)
            tally[EXECUTIONS] += 1
            if not records.flag(row, "cancel_requested") and losses < max_lease_losses:
                tally[RETRIED] += 1
            if records.flag(row, "cancel_requested"):
                self._end(run_id, "canceled", now, lease_loss=1)
            elif losses >= max_lease_losses:
                self._end(run_id, "failed", now, error=worker_lost_error(losses), lease_loss=1)
            else:
                self._requeue(run_id, now, lease_loss=1)

    def _expire(self, queue: str, now: float) -> None:
        """End ``failed`` the waiting runs of ``queue`` past their deadline."""
        due = self._execute("past_deadline", queue=queue, now=now, batch=EXPIRE_BATCH)
        for row in due.fetchall():
            status = records.text(row, "status")
            self._end(records.text(row, "id"), "failed", now, error=deadline_error(status))

    def _lease(self, ids: Sequence[str], lease: tuple[str, float, float]) -> list[ClaimedRun]:
        """Make the queued runs ``ids`` running under new leases, in the order given; a
        run whose row is corrupt is set aside instead (checked in the same statement)."""
        if not ids:
            return []
        worker_id, now, expires_at = lease
        rows = self._execute(
            "claim_queued", ids=json.dumps(ids), worker_id=worker_id, now=now, expires_at=expires_at
        ).fetchall()
        order = {run_id: position for position, run_id in enumerate(ids)}
        if len(rows) < len(ids):  # not sound_run
            leased = {row["id"] for row in rows}
            self._set_aside_unsound([run_id for run_id in ids if run_id not in leased])
        rows.sort(key=lambda row: order[row["id"]])
        return [records.claimed_run(row) for row in rows]

    def _set_aside_unsound(self, ids: Sequence[str]) -> None:
        """Set aside the runs ``ids``, whose rows failed ``sound_run``: each is read again
        (``runs_to_check``) to say what is wrong, then set aside (see the ``set_aside``
        query), its gate place freed, and noted."""
        if not ids:
            return
        for run_id, (problem, row) in self._checked_rows(ids).items():
            unsound = f"run {run_id}: its stored record fails the claim's check (sound_run)"
            self._put_aside(run_id, problem or unsound, row)

    def _put_aside(self, run_id: str, problem: str, row: sqlite3.Row) -> None:
        self._execute("set_aside", id=run_id)
        self._set_aside.append(SetAside(run_id, problem))
        if row["admitted"] == 1 and row["status"] in ("queued", "running"):
            left = sound_gates(row)
            for gate, _ in left:
                self._execute("count_admitted", gate=gate, delta=-1)
            self._refill(left)
        if row["status"] == "running" and isinstance(row["queue"], str):
            self._left_running(row["queue"])


def deadline_error(status: str) -> str:
    """The error JSON of a run failed by its deadline while ``status``."""
    message = f"the run's deadline passed while {status}; it is not retried"
    return json.dumps({"type": "DeadlineExceededError", "message": message, "traceback": None})


def worker_lost_error(losses: int) -> str:
    """The error JSON of a run failed because its lease expired too many times."""
    message = (
        f"the run's lease was lost {losses} times: the worker running it died or stalled "
        "each time, so it will not be retried"
    )
    return json.dumps({"type": "WorkerLostError", "message": message, "traceback": None})
