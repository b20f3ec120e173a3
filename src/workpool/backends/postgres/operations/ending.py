"""Runs leaving their place: terminal transitions (with completion hooks, the parent's
step and the awaited children of a canceled run), requeues, and cancels.
"""

from __future__ import annotations

import heapq
import itertools
import math

from workpool.backends.base import TERMINAL_STATES, CancelResult
from workpool.backends.postgres.operations.batches import Batches
from workpool.backends.postgres.operations.transaction import COUNTERS, Row
from workpool.backends.rerunning import hook_run_id
from workpool.backends.selecting import error_type
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.ending import child_outcome

ACTIVE_ORDER = ("scheduled", "queued", "running", "suspended", "needs_attention", "paused")


class Ending(Batches):
    """Ending, requeueing and canceling runs, with all that follows in the same transaction."""

    async def _end(
        self,
        run_id: str,
        status: str,
        now: float,
        *,
        output: str | None = None,
        error: str | None = None,
        cancel_reason: str | None = None,
        cancel_requested: bool = False,
        lease_loss: int = 0,
        ran: float = 0.0,
        gated: bool = True,
    ) -> None:
        """Move a run to a terminal state and enqueue its hooks, once."""
        left = await self._leave_gate(run_id, gated=gated)
        ended = await self._one(
            "end_run",
            id=run_id,
            status=status,
            now=now,
            output=output,
            error=error,
            cancel_reason=cancel_reason,
            cancel_requested=cancel_requested,
            lease_loss=lease_loss,
            ran=ran,
        )
        if ended is None:
            return
        self._tally(str(ended["queue"]), str(ended["workflow"]), now)[COUNTERS.index(status)] += 1
        if status == "failed":
            group = error_type(records.optional_text(ended, "error"))
            self._failure(str(ended["workflow"]), group).add(run_id, now)
        await self._refill(left)
        await self._fire_hooks(ended, now)
        if ended["batch_id"] is not None:
            await self._batch_run_ended(str(ended["batch_id"]), run_id, status, now)
        parent_id, parent_step = ended["parent_run_id"], ended["parent_step"]
        if parent_id is not None and parent_step is not None:
            outcome, output, error = child_outcome(ended)
            await self._run(
                "record_child_outcome",
                parent=parent_id,
                step=parent_step,
                child=run_id,
                now=now,
                status=outcome,
                output=output,
                error=error,
            )
            await self._wake_suspended(parent_id, now)
        if status == "canceled":
            reason = f"parent run {run_id} was canceled"
            for child in await self._all("awaited_children", id=run_id):
                await self._cancel_active(str(child["id"]), str(child["status"]), reason, now)

    async def _delete_terminal(self, ids: list[str]) -> int:
        """Delete the runs ``ids`` that are terminal (their steps, events and keys
        cascade), taking the failed ones out of their failure groups; how many went."""
        if not ids:
            return 0
        deleted = await self._all("delete_terminal_runs", ids=ids)
        for row in deleted:
            if row["status"] == "failed":
                group = error_type(records.optional_text(row, "error"))
                self._failure(str(row["workflow"]), group).removed.append(str(row["id"]))
        return len(deleted)

    async def _wake_suspended(self, run_id: str, now: float) -> None:
        """Queue the run at ``now`` if it is suspended (through its rate limits and gate)."""
        await self._wake(await self._all("wake_suspended", id=run_id, now=now), now)

    async def _wake(self, woken: list[Row], now: float) -> None:
        """Runs that just became queued (RETURNING rows with their queue): reserve, admit
        and wake their queues' workers."""
        for row in woken:
            if row["gate"] is None:
                self.woken.add(str(row["queue"]))
        await self._joined(woken, now)

    async def _fire_hooks(self, ended: Row, now: float) -> None:
        run_id = str(ended["id"])
        status = str(ended["status"])
        for index, hook in enumerate(records.decode_hooks(ended)):
            if hook.on_failure_only and status != "failed":
                continue
            input_json = records.hook_input(ended, hook.context)
            hook_id = hook_run_id(run_id, index, records.optional_text(ended, "rerun_from"))
            await self._enqueue_hook_run(hook_id, hook, input_json, now)

    async def _requeue(
        self, run_id: str, now: float, *, lease_loss: int, resume: bool = False
    ) -> None:
        left = await self._leave_gate(run_id)
        rows = await self._all(
            "requeue_run", id=run_id, now=now, lease_loss=lease_loss, resume=resume
        )
        await self._refill(left)
        for row in rows:
            if row["gate"] is None:
                self.woken.add(str(row["queue"]))
        await self._joined(rows, now)

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """Cancel one run: end it if not started, flag it if running (keeping the trace
        context of the cancel for the renewal to hand to its worker)."""
        row = await self._one("run_status", id=run_id)
        if row is None:
            return "not_found"
        status = str(row["status"])
        if status in TERMINAL_STATES:
            return "finished"
        return await self._cancel_active(run_id, status, reason, now, trace_context)

    async def _cancel_active(
        self,
        run_id: str,
        status: str,
        reason: str | None,
        now: float,
        trace_context: str | None = None,
    ) -> CancelResult:
        if status == "running":
            await self._run("request_cancel", id=run_id, reason=reason, canceled_by=trace_context)
            return "requested"
        await self._end(run_id, "canceled", now, cancel_reason=reason, cancel_requested=True)
        return "canceled"

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """Cancel up to ``limit`` active runs matching the filters, smallest id (oldest)
        first: a walk of the pairs' active index ranges."""
        bound = math.inf if before is None else before
        ranges = []
        for pair in await self._all("pairs"):
            if workflow is not None and pair["workflow"] != workflow:
                continue
            for status in ACTIVE_ORDER:
                found = await self._all(
                    "cancelable_in_pair",
                    queue=pair["queue"],
                    workflow=pair["workflow"],
                    status=status,
                    before=bound,
                    limit=limit,
                )
                ranges.append([(str(row["id"]), str(row["status"])) for row in found])
        rows = list(itertools.islice(heapq.merge(*ranges), limit))
        for run_id, _ in rows:
            locked = await self._one("run_status", id=run_id)
            if locked is not None and str(locked["status"]) not in TERMINAL_STATES:
                await self._cancel_active(run_id, str(locked["status"]), reason, now)
        return len(rows)
