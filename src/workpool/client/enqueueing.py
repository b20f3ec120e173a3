"""Enqueueing runs and batches, by workflow or by name; retrying runs."""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
from collections.abc import Sequence
from typing import Any

from workpool import tracing
from workpool.backends.base import Enqueued, NewBatch, NewRun, WorkflowInfo
from workpool.batches import Batch
from workpool.builder import batch_callback, build_new_run, new_run_id, prepare_run, sent_runs
from workpool.client.base import client_logger
from workpool.client.control import Control
from workpool.decoding import require_batch
from workpool.definitions import PreparedRun, Workflow, check_completion
from workpool.errors import RunNotFoundError, RunStateError, UnknownWorkflowError
from workpool.handles import RunHandle
from workpool.options import RetryPolicy
from workpool.sync import in_event_loop, sync_twin
from workpool.validation import check_name


class Enqueueing(Control):
    """Enqueues: group commit, or the caller's transaction (``connection=``)."""

    async def enqueue_many(
        self, runs: Sequence[PreparedRun], *, connection: object = None
    ) -> list[RunHandle[Any]]:
        """Store a batch of runs (from ``Workflow.prepare``) in one backend operation.

        Returns handles in input order, once the runs are stored; an idempotency key
        already in use yields the handle of the earlier run. Concurrent calls on one
        event loop (``Workflow.run`` included, and the ``*_sync`` twins, which share the
        portal's loop) are written together: group commit (``workpool.coalescing``).
        With ``connection=`` (PostgreSQL), the runs are written in the caller's open
        transaction on that connection instead, alone, and exist once it commits
        (README "Enqueue in your transaction").
        """
        if tracing.tracer() is not None:
            with tracing.sending([run.workflow for run in runs]) as sending:
                return await self._enqueue(runs, sending, connection)
        return await self._enqueue(runs, None, connection)

    async def _enqueue(
        self, runs: Sequence[PreparedRun], sending: tracing.Sending | None, connection: object
    ) -> list[RunHandle[Any]]:
        now = self.settings.clock.now()
        trace = None if sending is None else sending.context
        new_runs = [
            build_new_run(self.registry, self.settings, run, now, trace_context=trace)
            for run in runs
        ]
        if connection is not None:
            joined = await self._joined(connection)
            stored = await joined.enqueue(new_runs, now) if new_runs else []
        elif not new_runs:
            return []
        else:
            stored = await self._batchers.enqueue(new_runs, now)
        if sending is not None:
            sending.sent(sent_runs(new_runs, stored))
        return self._handles(runs, new_runs, stored)

    def _handles(
        self, runs: Sequence[PreparedRun], new_runs: Sequence[NewRun], stored: list[Enqueued]
    ) -> list[RunHandle[Any]]:
        """The handles of stored runs, in order (and their log records)."""
        if client_logger.isEnabledFor(logging.INFO) and client_logger.hasHandlers():
            # (Without a handler nothing shows an INFO record: making one per run would
            # cost more than the rest of the client's work.)
            _log_enqueued(new_runs, stored)
        return [
            RunHandle(self, outcome.run_id, prepared.output_adapter)
            for outcome, prepared in zip(stored, runs, strict=True)
        ]

    async def batch(
        self,
        runs: Sequence[PreparedRun],
        *,
        on_complete: Workflow[Any, Any] | str | None = None,
        context: Any = None,
        open: bool = False,
        connection: object = None,
    ) -> Batch:
        """Store runs (from ``Workflow.prepare``) as a batch, in one backend operation.

        When the last of them ends (succeeded, failed for good or canceled),
        ``on_complete`` (a workflow or its name) is enqueued once, in the same atomic
        operation, with an ``OnBatchComplete`` input: the counts, the ids of the runs
        that failed and ``context``. With ``open=True``, runs may be added
        (``Batch.add``, ``add_to_batch``) until ``Batch.close()``; the batch completes
        only once closed. A closed batch with no runs completes at once. A run an
        idempotency key finds elsewhere is returned but not counted in the batch.
        ``connection=``: in the caller's transaction, as for ``enqueue_many``.
        """
        check_completion(on_complete, context)
        with tracing.sending([run.workflow for run in runs], batch=True) as sending:
            now = self.settings.clock.now()
            batch_id = new_run_id(now)
            callback = None
            if on_complete is not None:
                callback = batch_callback(
                    self.registry, self.settings, on_complete, context, sending.context
                )
            new_batch = NewBatch(batch_id, callback, open=bool(open))
            stored = await self._store_in_batch(batch_id, runs, new_batch, sending, connection)
            return Batch(self, batch_id, stored)

    async def add_to_batch(
        self, batch_id: str, runs: Sequence[PreparedRun], *, connection: object = None
    ) -> list[RunHandle[Any]]:
        """Store runs in an open batch, in one operation (``Batch.add``, by id: e.g. from
        a run of the batch, with ``ctx.batch_id``). ``BatchClosedError`` once it is
        closed and ``BatchNotFoundError`` for an unknown id, storing nothing. Give each
        run an idempotency key to make an add that may be repeated (a handler's, on a
        retry) store each run once. ``connection=``: as for ``enqueue_many``."""
        checked = check_name(batch_id, what="batch id")
        with tracing.sending([run.workflow for run in runs], batch=True) as sending:
            return await self._store_in_batch(checked, runs, None, sending, connection)

    async def _store_in_batch(
        self,
        batch_id: str,
        runs: Sequence[PreparedRun],
        new_batch: NewBatch | None,
        sending: tracing.Sending,
        connection: object,
    ) -> list[RunHandle[Any]]:
        """One enqueue of runs with their batch (creating it with ``new_batch``). Not
        coalesced with other enqueues: the backend may refuse it whole."""
        now = self.settings.clock.now()
        new_runs = [
            build_new_run(
                self.registry,
                self.settings,
                run,
                now,
                batch_id=batch_id,
                trace_context=sending.context,
            )
            for run in runs
        ]
        writer = await (self.backend() if connection is None else self._joined(connection))
        stored = await writer.enqueue(new_runs, now, batch=new_batch)
        sending.sent(sent_runs(new_runs, stored))
        return self._handles(runs, new_runs, stored)

    async def get_batch(self, batch_id: str) -> Batch:
        """A handle on an existing batch, by id; BatchNotFoundError if there is none
        (a completed batch is deleted by retention, with its runs)."""
        backend = await self.backend()
        require_batch(await backend.get_batch(batch_id), batch_id)
        return Batch(self, batch_id)

    async def run_by_name(
        self, /, name: str, input: Any, *, connection: object = None, **options: Any
    ) -> RunHandle[Any]:
        """Enqueue a run of a workflow known by name only (defined in another codebase).

        Takes the same options as ``Workflow.run``. If the workflow is defined on this
        pool, its input is validated as ``run`` would. Otherwise the name must be in the
        backend's registry (what the workers of every app define), unless the registry
        is empty: a typo is an ``UnknownWorkflowError`` at once, not a run that waits
        for a worker forever. Such a run goes to the queue, and gets the retry policy,
        that its workers registered, unless ``queue`` or ``retry`` is given. The
        registry is cached, so this costs a read only when a name is not in it.
        ``connection=``: in the caller's transaction, as for ``enqueue_many``.
        """
        prepared = prepare_run(self.registry, name, input, **options)
        if prepared.definition is None:
            reading = self._registered_workflow(prepared.workflow)
            if connection is None or in_event_loop():
                registered = await reading
            else:  # driven without a loop (``workpool.sync.drive``): read on the portal's
                registered = self.portal.call(reading, "pool.run_by_name")
            if registered is not None:
                prepared = _with_registered_defaults(prepared, registered)
        return (await self.enqueue_many([prepared], connection=connection))[0]

    async def _registered_workflow(self, name: str) -> WorkflowInfo | None:
        """The registry's record of ``name`` (None: the registry is empty), read again
        only when the cache does not have it; UnknownWorkflowError for a name it lacks."""
        if self._registered is not None and name in self._registered:
            return self._registered[name]
        backend = await self.backend()
        self._registered = {info.name: info for info in await backend.list_workflows()}
        names = self._registered.keys()
        if not names:
            return None
        if name not in names:
            close = difflib.get_close_matches(name, sorted(names), n=3)
            hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise UnknownWorkflowError(
                f"no app's workers define a workflow named {name!r}: {hint}the registry "
                f"knows {', '.join(sorted(names)[:20])}. Deploy the workers that define "
                "it before the code that enqueues it"
            )
        return self._registered[name]

    def handle(self, run_id: str) -> RunHandle[Any]:
        """A handle on an existing run, by id."""
        return RunHandle(self, run_id)

    async def retry_run(self, run_id: str) -> RunHandle[Any]:
        """Enqueue a failed or canceled run again, as a new run (same workflow, queue,
        input, retry policy and limits) linked to the old one by ``retry_of`` and
        ``retried_as``. Retrying a run twice returns the run made the first time.
        RunNotFoundError for an unknown id; RunStateError for a run that has not failed
        or been canceled."""
        backend = await self.backend()
        now = self.settings.clock.now()
        result = await backend.rerun(run_id, new_run_id(now), now)
        if result.status == "not_found":
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        if result.run_id is None:
            state = "still active" if result.status == "not_finished" else "succeeded"
            raise RunStateError(
                f"run {run_id} {state}: only a failed or canceled run can be retried"
            )
        return RunHandle(self, result.run_id)

    async def rerun(self, run_id: str, *, from_step: str, reason: str = "") -> RunHandle[Any]:
        """Execute a ``needs_attention``, ``failed`` or ``canceled`` run again from its
        saved step ``from_step``.

        The steps saved before it are kept; it and every later one are forgotten, so
        they run again; the run is queued now (through its gate and rate limits), as
        the same run (same id, parent, children, events), with ``rerun_from`` =
        ``{"step", "reason", "at", "count"}`` recorded. A needs_attention run's attempt
        goes on; a failed or canceled run starts a fresh attempt budget, its error and
        end cleared, and its completion hooks fire again when it ends again. One atomic
        backend operation. RunNotFoundError for an unknown id; RunStateError for a
        succeeded or active run, a finished run that is a child, in a batch or already
        retried as a new run, or a run without that step."""
        check_name(from_step, what="from_step")
        backend = await self.backend()
        result = await backend.rerun_from_step(run_id, from_step, reason, self.settings.clock.now())
        if result == "not_found":
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        if result == "succeeded":
            raise RunStateError(
                f"run {run_id} succeeded: only a failed, canceled or needs_attention run can "
                "be rerun from a step (enqueue a new run to do its work again)"
            )
        if result == "not_stopped":
            raise RunStateError(
                f"run {run_id} is still active: only a failed, canceled or needs_attention "
                "run can be rerun from a step (cancel it first)"
            )
        if result == "linked":
            raise RunStateError(
                f"run {run_id} is a child run, in a batch, or already retried as a new run: "
                "its ending was counted there, so it cannot be rerun from a step "
                "(retry_run enqueues it again as a new run)"
            )
        if result == "no_step":
            names = [step.name for step in await backend.get_steps(run_id)]
            raise RunStateError(
                f"run {run_id} has no saved step {from_step!r}; its saved steps are: "
                f"{', '.join(map(repr, names)) or 'none'}"
            )
        return RunHandle(self, run_id)

    enqueue_many_sync = sync_twin(enqueue_many, "pool")
    batch_sync = sync_twin(batch, "pool")
    add_to_batch_sync = sync_twin(add_to_batch, "pool")
    get_batch_sync = sync_twin(get_batch, "pool")
    run_by_name_sync = sync_twin(run_by_name, "pool")
    retry_run_sync = sync_twin(retry_run, "pool")
    rerun_sync = sync_twin(rerun, "pool")


def _log_enqueued(runs: Sequence[NewRun], stored: Sequence[Enqueued]) -> None:
    for run, outcome in zip(runs, stored, strict=True):
        if outcome.created:
            client_logger.info(
                "run %s enqueued: workflow=%s queue=%s",
                run.id,
                run.workflow,
                run.queue,
                extra={
                    "event": "enqueued",
                    "run_id": run.id,
                    "workflow": run.workflow,
                    "queue": run.queue,
                },
            )


def _with_registered_defaults(prepared: PreparedRun, registered: WorkflowInfo) -> PreparedRun:
    """A run by name of a workflow defined elsewhere, with the queue and retry policy its
    workers registered where the caller gave none: a run on another queue would wait for
    a worker that never comes."""
    options = prepared.options
    changes: dict[str, Any] = {}
    if options.queue is None:
        changes["queue"] = registered.queue
    if options.retry is None:
        stored = json.loads(registered.retry) if registered.retry is not None else None
        changes["retry"] = RetryPolicy.from_json(stored) if stored is not None else False
    return dataclasses.replace(prepared, options=dataclasses.replace(options, **changes))
