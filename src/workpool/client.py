"""The client: enqueue, read, cancel and administer runs over a backend.

``Client`` turns user calls into backend operations and stored records into values; it
never decides a run's fate. It holds the registry and the settings (plain values), and
one backend per event loop (``workpool.loops``). Every async method has a ``*_sync``
twin, written once by ``sync_twin``. ``Workpool`` is a client with the definitions API
and the worker factory on top.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, get_args

from workpool import tracing
from workpool.backends import open_backend
from workpool.backends.base import (
    TERMINAL_STATES,
    Backend,
    CancelResult,
    Enqueued,
    NewBatch,
    NewRun,
    QueueSettings,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.batches import Batch
from workpool.builder import batch_callback, build_new_run, new_run_id, prepare_run, sent_runs
from workpool.coalescing import LoopBatchers
from workpool.decoding import (
    registered_workflow,
    require_batch,
    require_run,
    run_from_record,
    skipped_tick,
    step_from_record,
)
from workpool.definitions import PreparedRun, Workflow, check_completion
from workpool.errors import (
    ConfigurationError,
    RunNotFoundError,
    RunStateError,
    UnknownWorkflowError,
)
from workpool.handles import RunHandle
from workpool.loops import LoopBackends
from workpool.models import RegisteredWorkflow, Run, RunList, RunState, SkippedTick, Step
from workpool.options import RetryPolicy
from workpool.registry import Registry, check_parallelism
from workpool.serialization import check_size, from_json, to_json
from workpool.settings import Settings
from workpool.stats import MAX_WINDOW, Stats, summarize
from workpool.sync import Portal, sync_twin
from workpool.validation import as_timedelta, check_name, duration_seconds, short_repr
from workpool.waiting import waiting_reason

__all__ = ["MAX_PAGE", "Client", "RunHandle", "new_run_id"]

CANCEL_BATCH = 500
EVENT_POLL_FIRST = 0.005
EVENT_POLL_LONGEST = 0.25
"""Seconds between the reads of ``get_event`` while it waits: doubling from the first."""
MAX_PAGE = 1000
"""The most runs one ``list_runs`` page may hold."""
RUN_STATES: frozenset[str] = frozenset(get_args(RunState))

client_logger = logging.getLogger("workpool.client")


class Client:
    """Runs over one backend, for the workflows of ``registry``, configured by ``settings``."""

    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings
        self._backends = LoopBackends(
            lambda: open_backend(self.settings.url, prefix=self.settings.prefix)
        )
        """One backend per event loop, closed with its loop (see ``workpool.loops``)."""
        self._batchers = LoopBatchers(self._store)
        """Concurrent enqueues of one loop share a write (see ``workpool.coalescing``)."""
        self._registered: dict[str, WorkflowInfo] | None = None
        """The registry's records by name (what every app's workers define), as last read."""
        self._portal = Portal()

    # -- backend -------------------------------------------------------------------

    async def backend(self) -> Backend:
        """The backend for the running event loop, opened on first use and closed when
        the loop shuts down (``asyncio.run`` and ``asyncio.Runner`` do that), or by
        ``aclose()``. In a forked child, the parent's backends are never used."""
        return await self._backends.get()

    async def aclose(self) -> None:
        """Close the running event loop's backend now (the next call opens a new one)."""
        await self._backends.close()

    def close(self) -> None:
        """Close the connections of the ``*_sync`` methods and their event loop (the
        next ``*_sync`` call opens them again)."""
        self._portal.close()

    @property
    def portal(self) -> Portal:
        """The private event loop that serves the ``*_sync`` methods."""
        return self._portal

    # -- enqueue -------------------------------------------------------------------

    async def enqueue_many(self, runs: Sequence[PreparedRun]) -> list[RunHandle[Any]]:
        """Store a batch of runs (from ``Workflow.prepare``) in one backend operation.

        Returns handles in input order, once the runs are stored; an idempotency key
        already in use yields the handle of the earlier run. Concurrent calls on one
        event loop (``Workflow.run`` included, and the ``*_sync`` twins, which share the
        portal's loop) are written together: group commit (``workpool.coalescing``).
        """
        if tracing.tracer() is not None:
            with tracing.sending([run.workflow for run in runs]) as sending:
                return await self._enqueue(runs, sending)
        return await self._enqueue(runs, None)

    async def _enqueue(
        self, runs: Sequence[PreparedRun], sending: tracing.Sending | None
    ) -> list[RunHandle[Any]]:
        now = self.settings.clock.now()
        trace = None if sending is None else sending.context
        new_runs = [
            build_new_run(self.registry, self.settings, run, now, trace_context=trace)
            for run in runs
        ]
        if not new_runs:
            return []
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
    ) -> Batch:
        """Store runs (from ``Workflow.prepare``) as a batch, in one backend operation.

        When the last of them ends (succeeded, failed for good or canceled),
        ``on_complete`` (a workflow or its name) is enqueued once, in the same atomic
        operation, with an ``OnBatchComplete`` input: the counts, the ids of the runs
        that failed and ``context``. With ``open=True``, runs may be added
        (``Batch.add``, ``add_to_batch``) until ``Batch.close()``; the batch completes
        only once closed. A closed batch with no runs completes at once. A run an
        idempotency key finds elsewhere is returned but not counted in the batch.
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
            stored = await self._store_in_batch(batch_id, runs, new_batch, sending)
            return Batch(self, batch_id, stored)

    async def add_to_batch(
        self, batch_id: str, runs: Sequence[PreparedRun]
    ) -> list[RunHandle[Any]]:
        """Store runs in an open batch, in one operation (``Batch.add``, by id: e.g. from
        a run of the batch, with ``ctx.batch_id``). ``BatchClosedError`` once it is
        closed and ``BatchNotFoundError`` for an unknown id, storing nothing. Give each
        run an idempotency key to make an add that may be repeated (a handler's, on a
        retry) store each run once."""
        checked = check_name(batch_id, what="batch id")
        with tracing.sending([run.workflow for run in runs], batch=True) as sending:
            return await self._store_in_batch(checked, runs, None, sending)

    async def _store_in_batch(
        self,
        batch_id: str,
        runs: Sequence[PreparedRun],
        new_batch: NewBatch | None,
        sending: tracing.Sending,
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
        backend = await self.backend()
        stored = await backend.enqueue(new_runs, now, batch=new_batch)
        sending.sent(sent_runs(new_runs, stored))
        return self._handles(runs, new_runs, stored)

    async def get_batch(self, batch_id: str) -> Batch:
        """A handle on an existing batch, by id; BatchNotFoundError if there is none
        (a completed batch is deleted by retention, with its runs)."""
        backend = await self.backend()
        require_batch(await backend.get_batch(batch_id), batch_id)
        return Batch(self, batch_id)

    async def run_by_name(self, /, name: str, input: Any, **options: Any) -> RunHandle[Any]:
        """Enqueue a run of a workflow known by name only (defined in another codebase).

        Takes the same options as ``Workflow.run``. If the workflow is defined on this
        pool, its input is validated as ``run`` would. Otherwise the name must be in the
        backend's registry (what the workers of every app define), unless the registry
        is empty: a typo is an ``UnknownWorkflowError`` at once, not a run that waits
        for a worker forever. Such a run goes to the queue, and gets the retry policy,
        that its workers registered, unless ``queue`` or ``retry`` is given. The
        registry is cached, so this costs a read only when a name is not in it.
        """
        prepared = prepare_run(self.registry, name, input, **options)
        if prepared.definition is None:
            registered = await self._registered_workflow(prepared.workflow)
            if registered is not None:
                prepared = _with_registered_defaults(prepared, registered)
        return (await self.enqueue_many([prepared]))[0]

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

    async def _store(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """One write of the running loop's batcher: one ``backend.enqueue``."""
        backend = await self.backend()
        return await backend.enqueue(runs, now)

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

    # -- read ----------------------------------------------------------------------

    async def get_run(self, run_id: str) -> Run:
        """The full record of a run, with its parent and children; RunNotFoundError if
        there is none."""
        backend = await self.backend()
        record = await backend.get_run(run_id)
        children = tuple(await backend.get_children(run_id)) if record is not None else ()
        return require_run(record, run_id, children)

    async def get_steps(self, run_id: str) -> list[Step]:
        """Every saved step of a run (``ctx.step.*``), oldest first; RunNotFoundError if
        there is no such run."""
        backend = await self.backend()
        records = await backend.get_steps(run_id)
        if not records and await backend.get_run(run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        now = self.settings.clock.now()
        return [step_from_record(run_id, record, now) for record in records]

    async def list_runs(
        self,
        *,
        status: RunState | None = None,
        workflow: str | None = None,
        queue: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunList:
        """Runs matching every filter given, newest first, one page at a time: pass the
        page's ``cursor`` back for the next. A page costs O(limit) whatever the history
        size (per (queue, workflow) pair matching the filters)."""
        if status is not None and status not in RUN_STATES:
            raise ValueError(
                f"unknown run status {status!r}: use one of {', '.join(sorted(RUN_STATES))}"
            )
        wanted: object = limit  # typed int, but callers pass anything
        if isinstance(wanted, bool) or not isinstance(wanted, int) or not 1 <= wanted <= MAX_PAGE:
            raise ValueError(
                f"limit must be between 1 and {MAX_PAGE} (a whole number), not {short_repr(limit)}"
            )
        backend = await self.backend()
        page = await backend.list_runs(status, workflow, queue, limit, cursor)
        return RunList(runs=[run_from_record(record) for record in page.runs], cursor=page.cursor)

    async def stats(
        self,
        window: timedelta | float = timedelta(minutes=5),
        *,
        queue: str | None = None,
        workflow: str | None = None,
    ) -> Stats:
        """Backlog and activity now, and what happened in the last ``window`` (a
        timedelta or seconds; whole minutes, at most 24 hours), in total, per queue and
        per workflow. One backend read from counters kept per minute: its cost does not
        grow with history."""
        window = as_timedelta(window, what="window", positive=True)
        if not timedelta(0) < window <= MAX_WINDOW:
            raise ValueError(f"window must be more than 0 and at most {MAX_WINDOW}, not {window}")
        backend = await self.backend()
        now = self.settings.clock.now()
        snapshot = await backend.get_stats(now - window.total_seconds(), now)
        return summarize(snapshot, now, window, queue=queue, workflow=workflow)

    async def live_workers(self) -> list[WorkerRecord]:
        """The workers that announced themselves lately: what each serves (its app,
        queues and workflows), by id."""
        backend = await self.backend()
        return await backend.list_workers(self.settings.clock.now())

    async def waiting_reason(self, run: Run) -> str | None:
        """Why a pending run has not started, if something other than a busy worker
        holds it (every reason that holds, joined): no live worker defines its workflow
        on its queue, its workflow is at its concurrency limit, it is rate limited or
        scheduled for later, its queue is paused or at its ``max_parallelism``. None for
        runs that are not pending. ``RunHandle.result``'s timeout says the same."""
        backend = await self.backend()
        return await waiting_reason(backend, run, self.settings.clock.now())

    async def list_workflows(self) -> list[RegisteredWorkflow]:
        """The workflows registered by the workers of every app, by name."""
        backend = await self.backend()
        return [registered_workflow(info) for info in await backend.list_workflows()]

    async def list_skipped_ticks(
        self, *, workflow: str | None = None, limit: int = 50
    ) -> list[SkippedTick]:
        """The newest cron ticks that started no run (of ``workflow``, or of every
        workflow), latest tick first: each with its trigger, time and reason. The
        backend keeps the newest 100 of each trigger. ``limit``: 1 to 1000."""
        if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
            raise ConfigurationError(
                f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r}"
            )
        backend = await self.backend()
        return [
            skipped_tick(record) for record in await backend.list_skipped_ticks(workflow, limit)
        ]

    # -- events --------------------------------------------------------------------

    async def send_event(
        self, run_id: str, key: str, payload: Any, *, event_id: str | None = None
    ) -> bool:
        """Send an event to run ``run_id`` under ``key``, with ``payload`` (any JSON value
        within the pool's ``max_payload_bytes``; PayloadError otherwise, and nothing is
        sent). Stored durably before it returns; a ``ctx.step.wait_for_event(name,
        key)`` of the run takes it, one wait per event, in send order, also if the event
        came first. A run suspended waiting on ``key`` is queued at once, in the same
        atomic operation. RunNotFoundError for an unknown id; RunStateError for a run
        that has finished.

        ``event_id`` (a name, e.g. a webhook's delivery id) makes a sender's retry
        safe: an event of an id the run was sent before is not stored again, and the
        call returns False (also once the run has finished). Returns True when stored."""
        check_name(key, what="event key")
        if event_id is not None:
            check_name(event_id, what="event id")
        what = f"payload of event {key!r} for run {run_id}"
        text = check_size(
            to_json(payload, what=what), what=what, limit=self.settings.max_payload_bytes
        )
        backend = await self.backend()
        now = self.settings.clock.now()
        attributes = {"workpool.event": key, "messaging.operation.type": "send"}
        with tracing.calling("send_event", f"send_event {key}", run_id, attributes) as span:
            result = await backend.send_event(
                run_id, key, text, now, event_id, tracing.stored(span)
            )
            tracing.annotate(span, {"workpool.event.result": result})
        if result == "duplicate":
            return False
        if result == "not_found":
            raise RunNotFoundError(
                f"no run with id {run_id!r} exists: send events to a run by the id its "
                "handle has (handle.id), before retention deletes it"
            )
        if result == "finished":
            raise RunStateError(
                f"run {run_id} has finished and takes no more events; send events while it "
                "runs or waits, or start a new run"
            )
        return True

    async def get_event(
        self, run_id: str, key: str, timeout: timedelta | float | None = None
    ) -> Any:
        """The value run ``run_id`` published under ``key`` (``ctx.set_event``), the
        latest one. Without one yet, it waits while the run is active, reading every few
        ms at first, then every 0.25 s; it returns None if the run ended without
        publishing one, or once ``timeout`` (a timedelta or seconds; 0: read once; None:
        no limit) has passed. RunNotFoundError if there is no such run."""
        check_name(key, what="event key")
        seconds = None
        if timeout is not None:
            seconds = duration_seconds(timeout, what="get_event() timeout")
            if seconds < 0:
                raise ConfigurationError(
                    f"get_event() timeout must not be negative, got {timeout!r}"
                )
        backend = await self.backend()
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        delay = EVENT_POLL_FIRST
        while True:
            found = await backend.get_event(run_id, key)
            if found is None:
                raise RunNotFoundError(f"no run with id {run_id!r} exists")
            if found.value is not None:
                return from_json(found.value)
            if found.status in TERMINAL_STATES:
                return None
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            await asyncio.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, EVENT_POLL_LONGEST)

    async def get_events(self, run_id: str) -> dict[str, Any]:
        """Every value run ``run_id`` published (``ctx.set_event``): key -> the latest
        value, ordered by key; empty if it published none. One read, no waiting (see
        ``get_event`` to wait for a key). RunNotFoundError if there is no such run."""
        backend = await self.backend()
        stored = await backend.list_published(run_id)
        if not stored and await backend.get_run(run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        return {key: from_json(value) for key, value in stored.items()}

    # -- cancel --------------------------------------------------------------------

    async def cancel(self, run_id: str, reason: str | None = None) -> CancelResult:
        """Cancel a run: a pending run ends ``canceled`` at once; a running run is
        interrupted by its worker within one lease renewal. A finished run is left as is.

        Returns ``"canceled"``, ``"requested"`` (running) or ``"finished"``.
        """
        backend = await self.backend()
        with tracing.calling("cancel", "cancel", run_id, {}) as span:
            now = self.settings.clock.now()
            result = await backend.cancel(run_id, reason, now, tracing.stored(span))
            tracing.annotate(span, {"workpool.cancel.result": result})
        if result == "not_found":
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        return result

    async def cancel_all(
        self,
        *,
        before: datetime | None = None,
        workflow: str | None = None,
        reason: str | None = None,
    ) -> int:
        """Cancel every unfinished run (created before ``before``, of ``workflow``).

        Works in batches, each atomic; returns how many runs were canceled or asked to.
        """
        backend = await self.backend()
        cutoff = before.timestamp() if before is not None else None
        total = 0
        while True:
            count = await backend.cancel_many(
                cutoff, workflow, reason, CANCEL_BATCH, self.settings.clock.now()
            )
            total += count
            if count == 0:
                return total

    # -- queues --------------------------------------------------------------------

    async def get_queue(self, queue: str) -> QueueSettings:
        """A queue's settings: ``max_parallelism`` (None: no limit) and ``paused``."""
        backend = await self.backend()
        return await backend.get_queue(check_name(queue, what="queue name"))

    async def set_max_parallelism(self, queue: str, limit: int | None) -> QueueSettings:
        """Let at most ``limit`` runs of ``queue`` run at once across every worker (None:
        no limit; 0: start none). Raising it starts waiting runs at once."""
        backend = await self.backend()
        name = check_name(queue, what="queue name")
        return await backend.set_queue(name, max_parallelism=check_parallelism(limit))

    async def pause(self, queue: str) -> QueueSettings:
        """Start no more runs of ``queue``; running runs finish and are recorded."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=True)

    async def resume(self, queue: str) -> QueueSettings:
        """Start runs of ``queue`` again (within its ``max_parallelism``)."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=False)

    # -- synchronous twins (README, "Synchronous code", lists them) ------------------

    enqueue_many_sync = sync_twin(enqueue_many, "pool")
    batch_sync = sync_twin(batch, "pool")
    add_to_batch_sync = sync_twin(add_to_batch, "pool")
    get_batch_sync = sync_twin(get_batch, "pool")
    run_by_name_sync = sync_twin(run_by_name, "pool")
    retry_run_sync = sync_twin(retry_run, "pool")
    get_run_sync = sync_twin(get_run, "pool")
    get_steps_sync = sync_twin(get_steps, "pool")
    list_runs_sync = sync_twin(list_runs, "pool")
    stats_sync = sync_twin(stats, "pool")
    list_workflows_sync = sync_twin(list_workflows, "pool")
    list_skipped_ticks_sync = sync_twin(list_skipped_ticks, "pool")
    send_event_sync = sync_twin(send_event, "pool")
    get_event_sync = sync_twin(get_event, "pool")
    get_events_sync = sync_twin(get_events, "pool")
    cancel_sync = sync_twin(cancel, "pool")
    cancel_all_sync = sync_twin(cancel_all, "pool")
    get_queue_sync = sync_twin(get_queue, "pool")
    set_max_parallelism_sync = sync_twin(set_max_parallelism, "pool")
    pause_sync = sync_twin(pause, "pool")
    resume_sync = sync_twin(resume, "pool")


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
