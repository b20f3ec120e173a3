"""Batches: checked and stored with their runs' enqueue, counted as their runs end, and
completed (their callback enqueued) by the end of their last run; hook runs too, which
a completion enqueues the same way. See ``backends/contract/batches.py``.
"""

from __future__ import annotations

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
from workpool.backends.postgres.operations.checking import Checking
from workpool.backends.postgres.operations.transaction import Row
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import gate_id
from workpool.errors import BatchClosedError, BatchNotFoundError


class Batches(Checking):
    """A batch's record, kept in step with its runs in the transactions that move them."""

    async def _batch_of(
        self, runs: Sequence[NewRun], batch: NewBatch | None, added_by: str | None
    ) -> tuple[str | None, NewBatch | None]:
        """The batch the runs of an enqueue join (None: none) and the batch to create
        (None: none), checked before anything is written; an existing batch's row is
        locked until the enqueue commits. A new batch must not exist, unless it holds a
        run of these (a repeat of the call that created it, sent again after a lost
        reply: it adds what is not stored yet)."""
        batch_id = check_batch(runs, batch)
        if batch_id is None:
            return None, None
        row = await self._one("lock_batch", id=batch_id)
        if batch is not None and row is not None:
            if not any([await self._in_batch(run.id, batch_id) for run in runs]):
                raise ValueError(f"batch {batch_id} exists already; nothing was written")
            return batch_id, None
        if batch is None and row is None:
            raise BatchNotFoundError(f"no batch with id {batch_id!r} exists; nothing was stored")
        closed = batch is None and row is not None and not row["open"]
        if closed and not await self._adds(added_by, batch_id):
            raise BatchClosedError(
                f"batch {batch_id} is closed: only its own runs may add to it, while "
                "they run; nothing was stored"
            )
        return batch_id, batch

    async def _in_batch(self, run_id: str, batch_id: str) -> bool:
        row = await self._one("run_batch", id=run_id)
        return row is not None and row["batch_id"] == batch_id

    async def _adds(self, run_id: str | None, batch_id: str) -> bool:
        """Whether ``run_id`` names an unfinished run of the batch."""
        if run_id is None:
            return False
        row = await self._one("run_batch", id=run_id)
        return row is not None and row["batch_id"] == batch_id and not row["ended"]

    async def _stored_in_batch(
        self, batch_id: str, batch: NewBatch | None, stored: Sequence[Enqueued], now: float
    ) -> None:
        """Put the runs an enqueue stored in its batch and count them (creating it, if
        new)."""
        ids = [outcome.run_id for outcome in stored if outcome.created]
        if ids:
            await self._run("join_batch", batch_id=batch_id, ids=ids)
        if batch is None:
            await self._run("count_in_batch", id=batch_id, count=len(ids))
            return
        callback = None if batch.callback is None else records.encode_hooks([batch.callback])
        await self._run(
            "create_batch", id=batch_id, now=now, total=len(ids), open=batch.open, callback=callback
        )
        if not batch.open and not ids:
            row = await self._one("get_batch", id=batch_id)
            if row is not None:
                await self._complete_batch(row, now)

    async def _batch_run_ended(self, batch_id: str, run_id: str, status: str, now: float) -> None:
        """A run of the batch ended in ``status``: count it; complete the batch if it was
        the last of a closed batch."""
        row = await self._one("batch_run_ended", id=batch_id, status=status)
        if row is None:
            return
        batch = records.batch_record(row)
        if status == "failed" and batch.failed <= MAX_FAILED_IDS:
            await self._run(
                "note_batch_failure", batch_id=batch_id, position=batch.failed, run_id=run_id
            )
        await self._complete_if_done(row, now)

    async def _complete_if_done(self, row: Row, now: float) -> None:
        batch = records.batch_record(row)
        ended = batch.succeeded + batch.failed + batch.canceled
        if not batch.open and batch.completed_at is None and ended >= batch.total:
            await self._complete_batch(row, now)

    async def _complete_batch(self, row: Row, now: float) -> None:
        """Mark the batch completed and enqueue its callback, if it has one."""
        batch = records.batch_record(row)
        if row["callback"] is None:
            await self._run("complete_batch", id=batch.id, now=now, callback_run_id=None)
            return
        callback = records.decode_hooks(row, "callback")[0]
        run_id = f"{batch.id}-complete"
        await self._run("complete_batch", id=batch.id, now=now, callback_run_id=run_id)
        failed = await self._all("batch_failures", batch_id=batch.id)
        ids = [str(failure["run_id"]) for failure in failed]
        document = records.batch_input(batch, callback.context, ids)
        await self._enqueue_hook_run(run_id, callback, document, now)

    async def _enqueue_hook_run(
        self, run_id: str, hook: CompletionHook, input_json: str, now: float
    ) -> None:
        """Store a hook's (or a batch callback's) run, queued now, unless ``run_id``
        exists; admit it at its gate or wake its queue."""
        gate = None if hook.max_concurrency is None else gate_id(hook.workflow, None)
        inserted = await self._one(
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
        if inserted is not None:
            self.woken.add(hook.queue)
            await self._fill(gate, hook.max_concurrency)

    async def get_batch_record(self, batch_id: str) -> BatchRecord | None:
        """The batch as stored, or None."""
        row = await self._one("get_batch", id=batch_id)
        return None if row is None else records.batch_record(row)

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """Close the batch; complete it if none of its runs is unfinished."""
        row = await self._one("close_batch", id=batch_id)
        if row is None:
            return None
        await self._complete_if_done(row, now)
        return await self.get_batch_record(batch_id)
