"""Batches: checked and stored with their runs' enqueue, counted as their runs end, and
completed (their callback enqueued) by the end of their last run; hook runs too, which
a completion enqueues the same way. See ``backends/contract/batches.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from workpool.backends.base import (
    MAX_FAILED_IDS,
    BatchRecord,
    CompletionHook,
    Enqueued,
    NewBatch,
    NewRun,
)
from workpool.backends.checks import check_batch
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import gate_id
from workpool.backends.sqlite.operations.checking import Checking
from workpool.errors import BatchClosedError, BatchNotFoundError


class Batches(Checking):
    """A batch's record, kept in step with its runs in the transactions that move them."""

    def _batch_of(
        self, runs: Sequence[NewRun], batch: NewBatch | None, added_by: str | None
    ) -> tuple[str | None, NewBatch | None]:
        """The batch the runs of an enqueue join (None: none) and the batch to create
        (None: none), checked before anything is written: a new one must not exist,
        unless it holds a run of these (a repeat of the call that created it, sent again
        after a lost reply: it adds what is not stored yet); an existing one must be
        open, or be added to by an unfinished run of its own."""
        batch_id = check_batch(runs, batch)
        if batch_id is None:
            return None, None
        row = self._execute("get_batch", id=batch_id).fetchone()
        if batch is not None and row is not None:
            if not any(self._in_batch(run.id, batch_id) for run in runs):
                raise ValueError(f"batch {batch_id} exists already; nothing was written")
            return batch_id, None
        if batch is None and row is None:
            raise BatchNotFoundError(f"no batch with id {batch_id!r} exists; nothing was stored")
        if batch is None and not records.flag(row, "open") and not self._adds(added_by, batch_id):
            raise BatchClosedError(
                f"batch {batch_id} is closed: only its own runs may add to it, while they "
                "run; nothing was stored"
            )
        return batch_id, batch

    def _in_batch(self, run_id: str, batch_id: str) -> bool:
        row = self._execute("run_batch", id=run_id).fetchone()
        return row is not None and row["batch_id"] == batch_id

    def _adds(self, run_id: str | None, batch_id: str) -> bool:
        """Whether ``run_id`` names an unfinished run of the batch."""
        if run_id is None:
            return False
        row = self._execute("run_batch", id=run_id).fetchone()
        return row is not None and row["batch_id"] == batch_id and not records.flag(row, "ended")

    def _stored_in_batch(
        self, batch_id: str, batch: NewBatch | None, stored: Sequence[Enqueued], now: float
    ) -> None:
        """Put the runs an enqueue stored in its batch and count them (creating it, if
        new)."""
        ids = [outcome.run_id for outcome in stored if outcome.created]
        created = len(ids)
        if ids:
            self._execute("join_batch", batch_id=batch_id, ids=json.dumps(ids))
        if batch is None:
            self._execute("count_in_batch", id=batch_id, count=created)
            return
        callback = None if batch.callback is None else records.encode_hooks([batch.callback])
        self._execute(
            "create_batch",
            id=batch_id,
            now=now,
            total=created,
            open=int(batch.open),
            callback=callback,
        )
        if not batch.open and not created:
            self._complete_batch(self._execute("get_batch", id=batch_id).fetchone(), now)

    def _batch_run_ended(self, batch_id: str, run_id: str, status: str, now: float) -> None:
        """A run of the batch ended in ``status``: count it; complete the batch if it was
        the last of a closed batch."""
        row = self._execute("batch_run_ended", id=batch_id, status=status).fetchone()
        if row is None:
            return  # no such batch (a batch is purged only once every run of it ended)
        batch = records.batch_record(row)
        if status == "failed" and batch.failed <= MAX_FAILED_IDS:
            self._execute(
                "note_batch_failure", batch_id=batch_id, position=batch.failed, run_id=run_id
            )
        self._complete_if_done(row, now)

    def _complete_if_done(self, row: sqlite3.Row, now: float) -> None:
        """Complete a batch (a ``get_batch`` row) if it is closed and none of its runs is
        unfinished, unless it completed before."""
        batch = records.batch_record(row)
        ended = batch.succeeded + batch.failed + batch.canceled
        if not batch.open and batch.completed_at is None and ended >= batch.total:
            self._complete_batch(row, now)

    def _complete_batch(self, row: sqlite3.Row, now: float) -> None:
        """Mark the batch completed and enqueue its callback, if it has one."""
        batch = records.batch_record(row)
        if row["callback"] is None:
            self._execute("complete_batch", id=batch.id, now=now, callback_run_id=None)
            return
        callback = records.decode_hooks(row, "callback")[0]
        run_id = f"{batch.id}-complete"
        self._execute("complete_batch", id=batch.id, now=now, callback_run_id=run_id)
        failed = self._execute("batch_failures", batch_id=batch.id).fetchall()
        ids = [str(failure["run_id"]) for failure in failed]
        document = records.batch_input(batch, callback.context, ids)
        self._enqueue_hook_run(run_id, callback, document, now)

    def _enqueue_hook_run(
        self, run_id: str, hook: CompletionHook, input_json: str, now: float
    ) -> None:
        """Store a hook's (or a batch callback's) run, queued now, unless ``run_id``
        exists; admit it at its gate or wake its queue."""
        gate = None if hook.max_concurrency is None else gate_id(hook.workflow, None)
        inserted = self._execute(
            "insert_run",
            id=run_id,
            workflow=hook.workflow,
            queue=hook.queue,
            status="queued",
            input=input_json,
            retry=hook.retry,
            hooks="[]",
            now=now,
            available_at=now,
            idempotency_key=None,
            parent_run_id=None,
            parent_step=None,
            gate=gate,
            gate_limit=hook.max_concurrency,
            gate_list=None,
            rate_limits=None,
            timeout=None,
            priority=hook.priority,
            rank_offset=hook.rank_offset,
            trace_context=hook.trace_context,
            deadline=None,
        )
        if inserted.rowcount:
            self.woken.add(hook.queue)
            self._fill(gate, hook.max_concurrency)

    def get_batch_record(self, batch_id: str) -> BatchRecord | None:
        """The batch as stored, or None."""
        row = self._execute("get_batch", id=batch_id).fetchone()
        return None if row is None else records.batch_record(row)

    def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """Close the batch; complete it if none of its runs is unfinished."""
        row = self._execute("close_batch", id=batch_id).fetchone()
        if row is None:
            return None
        self._complete_if_done(row, now)
        return self.get_batch_record(batch_id)
