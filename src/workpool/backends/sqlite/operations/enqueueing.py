"""Storing new runs: idempotency keys, debounce, existing ids, then admission as queued or
scheduled; a batch's runs with their batch."""

from __future__ import annotations

from collections.abc import Sequence

from workpool.backends.base import Enqueued, NewBatch, NewRun
from workpool.backends.checks import check_new_runs
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import run_gates
from workpool.backends.sqlite.operations.batches import Batches


class Enqueueing(Batches):
    """``enqueue``, and the storing of one run that ``save_step`` uses for a child."""

    def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """Store runs, honouring idempotency keys, debounce and existing ids; with their
        batch, if they have one."""
        check_new_runs(runs, now)
        batch_id, new_batch = self._batch_of(runs, batch, added_by)
        stored = [self._enqueue_one(run, now) for run in runs]
        if batch_id is not None:
            self._stored_in_batch(batch_id, new_batch, stored, now)
        return stored

    def _enqueue_one(
        self,
        run: NewRun,
        now: float,
        parent_run_id: str | None = None,
        parent_step: str | None = None,
    ) -> Enqueued:
        key = run.idempotency_key
        if key is not None:
            held = self._execute("find_idempotency_key", workflow=run.workflow, key=key, now=now)
            row = held.fetchone()
            if row is not None:
                return Enqueued(run_id=records.text(row, "run_id"), created=False)
        if run.debounce_key is not None and self._stored(run.id):
            # A repeated enqueue (sent again after a lost reply) finds its own run, which
            # may be the debounced run: it is not collapsed.
            return Enqueued(run_id=run.id, created=False)
        if run.debounce_key is not None:
            pending = self._collapse(run, now)
            if pending is not None:
                return Enqueued(run_id=pending, created=False)
        status = "queued" if run.available_at <= now else "scheduled"
        gate, gate_limit, gate_list = run_gates(run)
        inserted = self._execute(
            "insert_run",
            id=run.id,
            workflow=run.workflow,
            queue=run.queue,
            status=status,
            input=run.input,
            retry=run.retry,
            hooks=records.encode_hooks(run.hooks),
            now=now,
            available_at=run.available_at,
            idempotency_key=key,
            parent_run_id=parent_run_id,
            parent_step=parent_step,
            gate=gate,
            gate_limit=gate_limit,
            gate_list=gate_list,
            rate_limits=records.encode_rate_limits(run.rate_limits),
            timeout=run.timeout,
            priority=run.priority,
            rank_offset=run.rank_offset,
            trace_context=run.trace_context,
            deadline=run.deadline,
        )
        if inserted.rowcount == 0:
            return Enqueued(run_id=run.id, created=False)
        self._remember(run, now)
        if status == "queued":
            self._became_queued(run, gate, gate_limit, now)
        else:
            self.woken.add(run.queue)  # its workers may need to wake up sooner
        return Enqueued(run_id=run.id, created=True)

    def _stored(self, run_id: str) -> bool:
        return self._execute("run_status", id=run_id).fetchone() is not None

    def _remember(self, run: NewRun, now: float) -> None:
        """A run just stored holds its idempotency key, and is its debounce key's run."""
        if run.idempotency_key is not None:
            self._execute(
                "remember_idempotency_key",
                workflow=run.workflow,
                key=run.idempotency_key,
                run_id=run.id,
                expires_at=now + run.idempotency_ttl,
            )
        if run.debounce_key is not None:
            self._execute(
                "remember_debounced",
                workflow=run.workflow,
                key=run.debounce_key,
                run_id=run.id,
                until=run.debounce_until,
            )

    def _collapse(self, run: NewRun, now: float) -> str | None:
        """If the run of (workflow, debounce key) is still in its window, give it this
        run's input and start (no later than its ``debounce_until``); return its id."""
        row = self._execute(
            "pending_debounced", workflow=run.workflow, key=run.debounce_key, now=now
        ).fetchone()
        if row is None:
            return None
        run_id = records.text(row, "id")
        until = records.optional_number(row, "until")
        start = run.available_at if until is None else min(run.available_at, until)
        self._execute("collapse_debounced", id=run_id, input=run.input, available_at=start)
        self.woken.add(records.text(row, "queue"))  # its workers may wake at another time
        return run_id

    def _became_queued(
        self, run: NewRun, gate: str | None, gate_limit: int | None, now: float
    ) -> None:
        """A new run stored queued: reserve its start time, then its gate, then wake."""
        limits = records.encode_rate_limits(run.rate_limits)
        if limits is not None and self._reserve_start(run.id, limits, now) > now:
            return  # deferred to its start time: scheduled
        if gate is None:
            self.woken.add(run.queue)
        else:
            self._fill(gate, gate_limit)
