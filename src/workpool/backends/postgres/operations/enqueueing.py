"""Storing new runs: idempotency keys, debounce, existing ids, then admission as queued or
scheduled; a batch's runs with their batch."""

from __future__ import annotations

from collections.abc import Sequence

from workpool.backends.base import Enqueued, NewBatch, NewRun
from workpool.backends.checks import check_new_runs
from workpool.backends.postgres.operations.batches import Batches
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import run_gates


class Enqueueing(Batches):
    """``enqueue``, and the storing of one run that ``save_step`` uses for a child."""

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """Store runs, honouring idempotency keys, debounce and existing ids; with their
        batch, if they have one."""
        check_new_runs(runs, now)
        batch_id, new_batch = await self._batch_of(runs, batch, added_by)
        if all(_plain(run) for run in runs):
            stored = await self._insert_plain(runs, now)
        else:
            stored = [await self._enqueue_one(run, now) for run in runs]
        if batch_id is not None:
            await self._stored_in_batch(batch_id, new_batch, stored, now)
        return stored

    async def _insert_plain(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store runs that need nothing but their row, all in one INSERT (as
        ``_enqueue_one`` would one by one: an id already stored, or repeated, is stored
        once, by its first occurrence)."""
        rows = await self._all(
            "insert_plain_runs",
            ids=[run.id for run in runs],
            workflows=[run.workflow for run in runs],
            queues=[run.queue for run in runs],
            statuses=["queued" if run.available_at <= now else "scheduled" for run in runs],
            inputs=[run.input for run in runs],
            retries=[run.retry for run in runs],
            hooks=[records.encode_hooks(run.hooks) for run in runs],
            available_at=[run.available_at for run in runs],
            timeouts=[run.timeout for run in runs],
            priorities=[run.priority for run in runs],
            rank_offsets=[run.rank_offset for run in runs],
            trace_contexts=[run.trace_context for run in runs],
            deadlines=[run.deadline for run in runs],
            now=now,
        )
        fresh = {str(row["id"]) for row in rows}
        stored: list[Enqueued] = []
        for run in runs:
            created = run.id in fresh
            fresh.discard(run.id)
            if created:
                self.woken.add(run.queue)
            stored.append(Enqueued(run_id=run.id, created=created))
        return stored

    async def _enqueue_one(
        self,
        run: NewRun,
        now: float,
        parent_run_id: str | None = None,
        parent_step: str | None = None,
    ) -> Enqueued:
        key = run.idempotency_key
        if key is not None:
            holder = await self._take_key(run, key, now)
            if holder is not None:
                return Enqueued(run_id=holder, created=False)
        found = await self._repeated_or_collapsed(run, now)
        if found is not None:
            return Enqueued(run_id=found, created=False)
        status = "queued" if run.available_at <= now else "scheduled"
        gate, gate_limit, gate_list = run_gates(run)
        inserted = await self._one(
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
        if inserted is None:
            await self._drop_key(run)
            return Enqueued(run_id=run.id, created=False)
        if run.debounce_key is not None:
            await self._run(
                "remember_debounced",
                workflow=run.workflow,
                key=run.debounce_key,
                run_id=run.id,
                until=run.debounce_until,
            )
        if status == "queued":
            await self._became_queued(run, gate, gate_limit, now)
        else:
            self.woken.add(run.queue)  # its workers may need to wake up sooner
        return Enqueued(run_id=run.id, created=True)

    async def _repeated_or_collapsed(self, run: NewRun, now: float) -> str | None:
        """The run this one is not stored apart from (None: store it): itself, already
        stored, when its debounce key would be looked at; or the pending run of its
        debounce key, which it collapses into."""
        if run.debounce_key is None:
            return None
        # A repeated enqueue (sent again after a lost reply) finds its own run, which may
        # be the debounced run: it is not collapsed.
        if await self._one("run_exists", id=run.id) is not None:
            return run.id
        pending = await self._collapse(run, now)
        if pending is not None:
            await self._drop_key(run)
        return pending

    async def _take_key(self, run: NewRun, key: str, now: float) -> str | None:
        """Take (workflow, key) for this run before storing it; return the run that holds
        it instead (None: taken). A concurrent enqueue of the key waits on its index entry
        until this transaction ends, then finds it held."""
        taken = await self._one(
            "take_idempotency_key",
            workflow=run.workflow,
            key=key,
            run_id=run.id,
            expires_at=now + run.idempotency_ttl,
            now=now,
        )
        if taken is not None:
            return None
        held = await self._one("find_idempotency_key", workflow=run.workflow, key=key, now=now)
        return None if held is None else str(held["run_id"])

    async def _drop_key(self, run: NewRun) -> None:
        """The run was not stored: give back the key it took."""
        if run.idempotency_key is not None:
            await self._run(
                "drop_idempotency_key",
                workflow=run.workflow,
                key=run.idempotency_key,
                run_id=run.id,
            )

    async def _collapse(self, run: NewRun, now: float) -> str | None:
        """If the run of (workflow, debounce key) is still in its window, give it this
        run's input and start (no later than its ``debounce_until``); return its id.
        Holds the key's lock to the commit, so concurrent enqueues of it collapse too."""
        await self._one("lock_debounce_key", workflow=run.workflow, key=run.debounce_key)
        row = await self._one(
            "pending_debounced", workflow=run.workflow, key=run.debounce_key, now=now
        )
        if row is None:
            return None
        run_id = str(row["id"])
        until = row["until"]
        start = run.available_at if until is None else min(run.available_at, float(until))
        await self._run("collapse_debounced", id=run_id, input=run.input, available_at=start)
        self.woken.add(str(row["queue"]))
        return run_id

    async def _became_queued(
        self, run: NewRun, gate: str | None, gate_limit: int | None, now: float
    ) -> None:
        """A new run stored queued: reserve its start time, then its gate, then wake."""
        limits = records.encode_rate_limits(run.rate_limits)
        if limits is not None and await self._reserve_start(run.id, limits, now) > now:
            return
        if gate is None:
            self.woken.add(run.queue)
        else:
            await self._fill(gate, gate_limit)


def _plain(run: NewRun) -> bool:
    """Whether storing the run is its row and nothing else (no idempotency key, debounce,
    gate or rate limit to look at or take)."""
    return (
        run.idempotency_key is None
        and run.debounce_key is None
        and run.max_concurrency is None
        and not run.gates
        and not run.rate_limits
    )
