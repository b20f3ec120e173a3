"""Storing new runs: idempotency keys, existing ids, then admission as queued or scheduled."""

from __future__ import annotations

from collections.abc import Sequence

from workpool.backends.base import Enqueued, NewRun
from workpool.backends.checks import check_new_runs
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import Admission, gate_id


class Enqueueing(Admission):
    """``enqueue``, and the storing of one run that ``save_step`` uses for a child."""

    def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store runs, honouring idempotency keys and existing ids."""
        check_new_runs(runs, now)
        return [self._enqueue_one(run, now) for run in runs]

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
        status = "queued" if run.available_at <= now else "scheduled"
        gate = None
        if run.max_concurrency is not None:
            gate = gate_id(run.workflow, run.concurrency_key)
            if run.skip_if_busy and self._admitted(gate) >= run.max_concurrency:
                return Enqueued(run_id=run.id, created=False, skipped=True)
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
            gate_limit=run.max_concurrency,
            rate_limits=records.encode_rate_limits(run.rate_limits),
            timeout=run.timeout,
            priority=run.priority,
            rank_offset=run.rank_offset,
        )
        if inserted.rowcount == 0:
            return Enqueued(run_id=run.id, created=False)
        if key is not None:
            expires_at = now + run.idempotency_ttl
            self._execute(
                "remember_idempotency_key",
                workflow=run.workflow,
                key=key,
                run_id=run.id,
                expires_at=expires_at,
            )
        if status == "queued":
            self._became_queued(run, gate, now)
        else:
            self.woken.add(run.queue)  # its workers may need to wake up sooner
        return Enqueued(run_id=run.id, created=True)

    def _became_queued(self, run: NewRun, gate: str | None, now: float) -> None:
        """A new run stored queued: reserve its start time, then its gate, then wake."""
        limits = records.encode_rate_limits(run.rate_limits)
        if limits is not None and self._reserve_start(run.id, limits, now) > now:
            return  # deferred to its start time: scheduled
        if gate is None:
            self.woken.add(run.queue)
        else:
            self._fill(gate, run.max_concurrency)
