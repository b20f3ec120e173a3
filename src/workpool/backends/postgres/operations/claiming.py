"""``claim``: promote due runs, reap expired leases, then lease the first claimable runs.

The claimable runs of a queue are read from the partial index ``runs_claimable`` with
``FOR UPDATE SKIP LOCKED``: concurrent claims take different runs without waiting for
each other, each an index seek of ``limit`` entries per served workflow (all in one
statement), whatever the depth of the queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workpool.backends.base import ClaimedRun, ClaimResult, SetAside
from workpool.backends.postgres.operations.ending import Ending
from workpool.backends.postgres.operations.transaction import EXECUTIONS, RETRIED, Row
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.claiming import (
    EXPIRE_BATCH,
    deadline_error,
    worker_lost_error,
)

PROMOTE_BATCH = 1000
"""Most scheduled runs one claim promotes per queue."""
REAP_BATCH = 1000
"""Most expired leases one claim reaps per queue."""


class Claiming(Ending):
    """The claim and its three steps: promote, reap, lease."""

    async def claim(
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
            await self._promote(queue, now)
            await self._reap(queue, max_lease_losses, now)
            await self._expire(queue, now)
        lease = (worker_id, now, now + lease_seconds)
        served = {queue: await self._served(queue, workflows) for queue in unique}
        claimed = await self._claim_isolated(served, lease) if alone and limit > 0 else []
        isolated_since: float | None = None
        for queue in unique if not claimed else ():
            row = await self._one("oldest_isolated", queue=queue, workflows=served[queue])
            if row is not None and row["since"] is not None:
                since = float(row["since"])
                isolated_since = since if isolated_since is None else min(isolated_since, since)
            room = await self._room(queue, limit - len(claimed))
            if room > 0:
                ids = await self._first_claimable(queue, served[queue], room, isolate=False)
                claimed += await self._lease(ids, lease)
        row = await self._one("next_wake_at", queues=unique)
        wake_at = None if row is None or row["wake_at"] is None else float(row["wake_at"])
        return ClaimResult(
            runs=claimed,
            next_wake_at=wake_at,
            isolated_since=isolated_since,
            set_aside=tuple(self._set_aside),
        )

    async def _promote(self, queue: str, now: float) -> None:
        for promotion in ("promote_due", "promote_timers"):
            promoted = await self._all(promotion, queue=queue, now=now, batch=PROMOTE_BATCH)
            await self._reserve_starts(promoted, now)
            for gate, gate_limit in sorted(
                {(row["gate"], row["gate_limit"]) for row in promoted if row["gate"] is not None}
            ):
                await self._fill(gate, gate_limit)

    async def _served(self, queue: str, workflows: Sequence[str] | None) -> list[str]:
        """The workflows whose runs of ``queue`` the claim may take."""
        if workflows is not None:
            return list(dict.fromkeys(workflows))
        return [str(row["workflow"]) for row in await self._all("queue_workflows", queue=queue)]

    async def _first_claimable(
        self, queue: str, workflows: Sequence[str], limit: int, *, isolate: bool
    ) -> list[str]:
        """Up to ``limit`` claimable run ids of the workflows in ``queue``, smallest rank
        first: one index seek of ``limit`` rows per workflow, in one statement. The rows
        beyond ``limit`` stay locked until the claim commits."""
        if not workflows:
            return []
        rows = await self._all(
            "claimable_in_queue",
            queue=queue,
            workflows=list(workflows),
            isolate=isolate,
            limit=limit,
        )
        return [str(row["id"]) for row in rows[:limit]]

    async def _claim_isolated(
        self, served: Mapping[str, list[str]], lease: tuple[str, float, float]
    ) -> list[ClaimedRun]:
        """The first run to isolate (by rank) of the first queue that has one and room."""
        for queue, workflows in served.items():
            ids = await self._first_claimable(queue, workflows, 1, isolate=True)
            if ids and await self._room(queue, 1) > 0:
                return await self._lease(ids, lease)
        return []

    async def _room(self, queue: str, wanted: int) -> int:
        """How many of ``wanted`` runs of ``queue`` may start now, its settings allowing.
        A queue with a limit has its settings row locked first, so claims count its
        running runs one at a time."""
        settings = await self.get_queue(queue)
        if settings.paused:
            return 0
        if settings.max_parallelism is None:
            return wanted
        locked = await self._one("lock_queue", queue=queue)
        limit = settings.max_parallelism if locked is None else locked["max_parallelism"]
        if locked is not None and (locked["paused"] or limit is None):
            return 0 if locked["paused"] else wanted
        row = await self._one("running_in_queue", queue=queue)
        running = 0 if row is None else int(row["running"])
        return min(wanted, int(limit) - running)

    async def _reap(self, queue: str, max_lease_losses: int, now: float) -> None:
        expired = await self._all("expired_leases", queue=queue, now=now, batch=REAP_BATCH)
        sound = set(await self._sound([str(row["id"]) for row in expired]))
        for row in expired:
            if row["id"] not in sound:
                continue
            run_id = str(row["id"])
            losses = int(row["lease_losses"]) + 1
            requested = bool(row["cancel_requested"])
            tally = self._tally(queue, str(row["workflow"]), now)
            tally[EXECUTIONS] += 1
            if not requested and losses < max_lease_losses:
                tally[RETRIED] += 1
            if requested:
                await self._end(run_id, "canceled", now, lease_loss=1)
            elif losses >= max_lease_losses:
                await self._end(
                    run_id, "failed", now, error=worker_lost_error(losses), lease_loss=1
                )
            else:
                await self._requeue(run_id, now, lease_loss=1)

    async def _expire(self, queue: str, now: float) -> None:
        """End ``failed`` the waiting runs of ``queue`` past their deadline."""
        due = await self._all("past_deadline", queue=queue, now=now, batch=EXPIRE_BATCH)
        for row in due:
            status = str(row["status"])
            await self._end(str(row["id"]), "failed", now, error=deadline_error(status))

    async def _lease(self, ids: Sequence[str], lease: tuple[str, float, float]) -> list[ClaimedRun]:
        """Make the queued runs ``ids`` running under new leases, in the order given."""
        ids = await self._sound(ids)
        if not ids:
            return []
        worker_id, now, expires_at = lease
        rows = await self._all(
            "claim_queued", ids=list(ids), worker_id=worker_id, now=now, expires_at=expires_at
        )
        order = {run_id: position for position, run_id in enumerate(ids)}
        rows.sort(key=lambda row: order[row["id"]])
        return [records.claimed_run(row) for row in rows]

    async def _sound(self, ids: Sequence[str]) -> list[str]:
        """The runs of ``ids`` whose record can be trusted, in order; each other one is
        set aside (see the ``set_aside`` query), its gate place freed, and noted."""
        if not ids:
            return []
        checked = await self._checked_rows(ids)
        for run_id, (problem, row) in checked.items():
            if problem is not None:
                await self._put_aside(run_id, problem, row)
        return [run_id for run_id in ids if run_id in checked and checked[run_id][0] is None]

    async def _put_aside(self, run_id: str, problem: str, row: Row) -> None:
        await self._run("set_aside", id=run_id)
        self._set_aside.append(SetAside(run_id, problem))
        if row["status"] in ("queued", "running"):
            await self._refill(await self._leave_gate(run_id))
        if row["status"] == "running":
            await self._left_running(str(row["queue"]))
