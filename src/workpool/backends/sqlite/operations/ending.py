"""Runs leaving their place: terminal transitions (with completion hooks, the parent's
step and the awaited children of a canceled run), requeues, and cancels.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import sqlite3

from workpool.backends.base import TERMINAL_STATES, CancelResult, StepStatus
from workpool.backends.rerunning import hook_run_id
from workpool.backends.selecting import error_type
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.batches import Batches
from workpool.backends.sqlite.operations.transaction import COUNTERS

ACTIVE_ORDER = ("scheduled", "queued", "running", "suspended", "needs_attention", "paused")


class Ending(Batches):
    """Ending, requeueing and canceling runs, with all that follows in the same transaction."""

    def _end(
        self,
        run_id: str,
        status: str,
        now: float,
        *,
        output: str | None = None,
        error: str | None = None,
        cancel_reason: str | None = None,
        cancel_requested: int = 0,
        lease_loss: int = 0,
        ran: float = 0.0,
        gated: bool = True,
    ) -> None:
        """Move a run to a terminal state and enqueue its hooks, once (``gated=False``:
        the caller read that it has no gate)."""
        left = self._leave_gate(run_id, gated=gated)
        ended = self._execute(
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
        ).fetchone()
        if ended is None:
            return
        self._tally(records.text(ended, "queue"), records.text(ended, "workflow"), now)[
            COUNTERS.index(status)
        ] += 1
        if status == "failed":
            self._execute(
                "count_failure",
                id=run_id,
                workflow=ended["workflow"],
                error_type=error_type(records.optional_text(ended, "error")),
                now=now,
            )
        self._refill(left)
        self._fire_hooks(ended, now)
        if ended["batch_id"] is not None:
            self._batch_run_ended(records.text(ended, "batch_id"), run_id, status, now)
        parent_id, parent_step = ended["parent_run_id"], ended["parent_step"]
        if parent_id is not None and parent_step is not None:
            outcome, output, error = child_outcome(ended)
            self._execute(
                "record_child_outcome",
                parent=parent_id,
                step=parent_step,
                child=run_id,
                now=now,
                status=outcome,
                output=output,
                error=error,
            )
            self._wake_suspended(parent_id, now)
        if status == "canceled":
            reason = f"parent run {run_id} was canceled"
            for child in self._execute("awaited_children", id=run_id).fetchall():
                self._cancel_active(
                    records.text(child, "id"), records.text(child, "status"), reason, now
                )

    def _delete_runs(self, ids: list[str]) -> None:
        """Delete the runs ``ids`` (their steps and keys cascade), taking the failed ones
        out of their failure groups."""
        if not ids:
            return
        self._uncount_failures(self._execute("failed_among", ids=json.dumps(ids)).fetchall())
        self._execute("delete_runs", ids=json.dumps(ids))

    def _uncount_failures(self, failed: list[sqlite3.Row]) -> None:
        """Take failed runs (rows with id, workflow, error) out of their failure groups."""
        for row in failed:
            self._execute(
                "uncount_failure",
                id=row["id"],
                workflow=row["workflow"],
                error_type=error_type(records.optional_text(row, "error")),
            )
        self._execute("drop_empty_failure_groups")

    def _wake_suspended(self, run_id: str, now: float) -> None:
        """Queue the run at ``now`` if it is suspended (through its rate limits and gate)."""
        self._wake(self._execute("wake_suspended", id=run_id, now=now).fetchall(), now)

    def _wake(self, woken: list[sqlite3.Row], now: float) -> None:
        """Runs that just became queued (RETURNING rows with their queue): reserve, admit
        and wake their queues' workers."""
        for row in woken:
            if row["gate"] is None:
                self.woken.add(records.text(row, "queue"))
        self._joined(woken, now)

    def _fire_hooks(self, ended: sqlite3.Row, now: float) -> None:
        run_id = records.text(ended, "id")
        status = records.text(ended, "status")
        for index, hook in enumerate(records.decode_hooks(ended)):
            if hook.on_failure_only and status != "failed":
                continue
            input_json = records.hook_input(ended, hook.context)
            hook_id = hook_run_id(run_id, index, records.optional_text(ended, "rerun_from"))
            self._enqueue_hook_run(hook_id, hook, input_json, now)

    def _requeue(self, run_id: str, now: float, *, lease_loss: int, resume: bool = False) -> None:
        left = self._leave_gate(run_id)
        rows = self._execute(
            "requeue_run", id=run_id, now=now, lease_loss=lease_loss, resume=int(resume)
        ).fetchall()
        self._refill(left)
        self._joined(rows, now)

    def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """Cancel one run: end it if not started, flag it if running (keeping
        ``trace_context``, the caller's, for the lease holder's renewals)."""
        row = self._execute("run_status", id=run_id).fetchone()
        if row is None:
            return "not_found"
        status = records.text(row, "status")
        if status in TERMINAL_STATES:
            return "finished"
        return self._cancel_active(run_id, status, reason, now, trace_context)

    def _cancel_active(
        self,
        run_id: str,
        status: str,
        reason: str | None,
        now: float,
        trace_context: str | None = None,
    ) -> CancelResult:
        if status == "running":
            self._execute("request_cancel", id=run_id, reason=reason, canceled_by=trace_context)
            return "requested"
        self._end(run_id, "canceled", now, cancel_reason=reason, cancel_requested=1)
        return "canceled"

    def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """Cancel up to ``limit`` active runs matching the filters, smallest id (oldest)
        first: a walk of the pairs' active index ranges."""
        bound = math.inf if before is None else before
        ranges = []
        for pair in self._execute("pairs").fetchall():
            if workflow is not None and pair["workflow"] != workflow:
                continue
            for status in ACTIVE_ORDER:
                found = self._execute(
                    "cancelable_in_pair",
                    queue=pair["queue"],
                    workflow=pair["workflow"],
                    status=status,
                    before=bound,
                    limit=limit,
                )
                ranges.append([(str(row["id"]), str(row["status"])) for row in found])
        rows = list(itertools.islice(heapq.merge(*ranges), limit))
        for run_id, status in rows:
            self._cancel_active(run_id, status, reason, now)
        return len(rows)


def child_outcome(row: records.Row) -> tuple[StepStatus, str | None, str | None]:
    """The status, output and error a parent's step takes from its ended child."""
    status = records.text(row, "status")
    if status == "succeeded":
        return "succeeded", records.optional_text(row, "output"), None
    if status == "failed":
        return "failed", None, records.optional_text(row, "error")
    reason = records.optional_text(row, "cancel_reason") or ""
    error = json.dumps({"type": "RunCanceledError", "message": reason, "traceback": None})
    return "canceled", None, error
