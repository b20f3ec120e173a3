"""Workpool: the one object users hold. Registry of workflows, configuration, backend."""

from __future__ import annotations

import difflib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType, TracebackType
from typing import Any, get_args

from workpool.backends import DEFAULT_URL, open_backend, sqlite_synchronous
from workpool.backends.base import (
    Backend,
    CancelResult,
    Enqueued,
    NewRun,
    QueueSettings,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.client import (
    RunHandle,
    build_new_run,
    new_run_id,
    prepare_run,
    registered_workflow,
    require_run,
    run_from_record,
    step_from_record,
)
from workpool.clock import Clock, SystemClock
from workpool.cron import Cron
from workpool.definitions import (
    ConcurrencyKey,
    FailureCallback,
    Handler,
    PreparedRun,
    Register,
    Workflow,
)
from workpool.errors import (
    ConfigurationError,
    RunNotFoundError,
    RunStateError,
    UnknownWorkflowError,
)
from workpool.logs import apply_level
from workpool.loops import LoopBackends
from workpool.models import RegisteredWorkflow, Run, RunList, RunState, Step
from workpool.options import RateLimit, RetryPolicy
from workpool.serialization import DEFAULT_MAX_PAYLOAD_BYTES, to_json
from workpool.stats import MAX_WINDOW, Stats, summarize
from workpool.sync import Portal
from workpool.validation import as_timedelta, check_name
from workpool.worker import Worker, WorkerOptions

CANCEL_BATCH = 500
DEFAULT_RETENTION = timedelta(days=7)
"""How long finished runs are kept by default."""
MAX_PAGE = 1000
"""The most runs one ``list_runs`` page may hold."""
RUN_STATES: frozenset[str] = frozenset(get_args(RunState))

client_logger = logging.getLogger("workpool.client")


class Workpool:
    """A pool of durable workflows over one backend.

    Args:
        url: ``sqlite:///path.db`` or ``redis://[:password@]host:port/db`` (``rediss://``
            for TLS). Defaults to ``$WORKPOOL_URL``, else ``sqlite:///workpool.db``.
        prefix: namespace of every Redis key, so pools can share a server.
        app: name of the application that defines these workflows (needed by workers).
        retry_by_default: whether runs retry when neither the run nor its workflow says.
        default_retry: the policy used by ``retry=True`` and ``retry_by_default``.
        max_payload_bytes: largest input, output or context, in bytes of JSON.
        clock: where time comes from (tests pass a manual clock).
        log_level: DEBUG, INFO, WARNING or ERROR for workpool's loggers; defaults to
            ``$WORKPOOL_LOG_LEVEL``, else INFO (an invalid value: a warning, and INFO).
        retention: how long finished runs (and their steps) are kept before workers
            delete them; None keeps them forever. Give every app sharing a backend
            the same value: whichever worker does the housekeeping applies its own.
        fail_unserved_after: fail a run (``UnservedWorkflowError``) that has waited
            this long for a worker that defines its workflow on its queue, while no
            live worker does; None (the default) lets it wait. Applied by the worker
            doing the housekeeping, like ``retention``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str = "workpool",
        app: str | None = None,
        retry_by_default: bool = False,
        default_retry: RetryPolicy | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        clock: Clock | None = None,
        log_level: str | None = None,
        retention: timedelta | float | None = DEFAULT_RETENTION,
        fail_unserved_after: timedelta | float | None = None,
    ) -> None:
        apply_level(log_level)
        self.retention = (
            None
            if retention is None
            else as_timedelta(retention, what="retention (or None: keep forever)", positive=True)
        )
        self.fail_unserved_after = (
            None
            if fail_unserved_after is None
            else as_timedelta(fail_unserved_after, what="fail_unserved_after", positive=True)
        )
        self.url = url or os.environ.get("WORKPOOL_URL") or DEFAULT_URL
        _check_url(self.url)
        self.prefix = check_name(prefix, what="prefix")
        self.app = None if app is None else check_name(app, what="app")
        self.retry_by_default = retry_by_default
        if default_retry is not None and not isinstance(default_retry, RetryPolicy):
            raise ConfigurationError(f"default_retry must be a RetryPolicy, got {default_retry!r}")
        self.default_retry = default_retry or RetryPolicy()
        if type(max_payload_bytes) is not int or max_payload_bytes < 1:
            raise ConfigurationError(
                f"max_payload_bytes must be a positive whole number, got {max_payload_bytes!r}"
            )
        self.max_payload_bytes = max_payload_bytes
        self.clock: Clock = clock or SystemClock()
        self._workflows: dict[str, Workflow[Any, Any]] = {}
        self._queue_defaults: dict[str, int | None] = {}
        self._queue_rate_limits: dict[str, RateLimit] = {}
        self._backends = LoopBackends(lambda: open_backend(self.url, prefix=self.prefix))
        """One backend per event loop, closed with its loop (see ``workpool.loops``)."""
        self._registered: tuple[float, frozenset[str]] | None = None
        """(when read, monotonic; the workflow names of every app's registry)."""
        self._portal = Portal()

    def __repr__(self) -> str:
        return f"<Workpool {self.url!r} workflows={len(self._workflows)}>"

    # -- definitions ---------------------------------------------------------------

    def workflow(
        self,
        name: str | None = None,
        *,
        queue: str = "default",
        retries: bool | RetryPolicy | None = None,
        on_failure: Workflow[Any, Any] | FailureCallback | None = None,
        max_concurrency: int | None = 1,
        concurrency_key: ConcurrencyKey | None = None,
        cron: Sequence[Cron] = (),
        rate_limit: RateLimit | None = None,
    ) -> Register:
        """Register a handler ``(ctx, input)`` (async or sync) as a workflow.

        Args:
            name: defaults to the function's name; must be unique in the pool (a
                non-empty name of at most 200 printable characters).
            queue: the queue its runs go to unless a run says otherwise.
            retries: True for the pool's default policy, False for one attempt, a
                RetryPolicy, or None to follow the pool's ``retry_by_default``.
            on_failure: a workflow enqueued (atomically) or a callable called (in the
                worker) with an ``OnComplete`` once a run of this workflow fails for good.
            max_concurrency: at most this many runs of the workflow run at once across
                every worker (default 1: one at a time); None for no limit.
            concurrency_key: scope the limit per key computed from each run's input, e.g.
                ``lambda order: order.customer_id`` (runs of one customer one at a time).
            rate_limit: at most ``RateLimit(count, per=...)`` runs started per period
                across every worker (optionally per key); runs over it wait for their
                start time without using an attempt.
            cron: ``Cron`` triggers; one worker of the pool (the leader) starts a run at
                each tick. A tick is skipped while the workflow is at max_concurrency.
        """
        if name is not None:
            check_name(name, what="workflow name")
        check_name(queue, what="queue name")

        def register(handler: Handler[Any, Any]) -> Workflow[Any, Any]:
            workflow_name = name
            if workflow_name is None:
                default = getattr(handler, "__name__", None)
                workflow_name = check_name(default, what="workflow name (give name=...)")
            if workflow_name in self._workflows:
                raise ConfigurationError(f"a workflow named {workflow_name!r} is already defined")
            definition = Workflow(
                self,
                handler,
                name=workflow_name,
                queue=queue,
                retries=retries,
                on_failure=on_failure,
                max_concurrency=max_concurrency,
                concurrency_key=concurrency_key,
                cron=cron,
                rate_limit=rate_limit,
            )
            self._workflows[workflow_name] = definition
            return definition

        return register

    def queue(
        self,
        name: str,
        *,
        max_parallelism: int | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        """Declare a queue's default ``max_parallelism`` (runs of it running at once,
        across every worker; 0 starts none) and its ``rate_limit`` (runs started per
        period, applied to runs this pool enqueues to the queue).

        A worker serving the queue stores it when it starts, unless the queue already
        has settings: a change made with ``set_max_parallelism``, ``pause`` or the
        ``workpool queues`` command is kept.
        """
        queue = check_name(name, what="queue name")
        self._queue_defaults[queue] = _check_parallelism(max_parallelism)
        if rate_limit is not None:
            if rate_limit.key is not None:
                raise ConfigurationError(
                    f"queue {queue!r}: a queue's rate_limit has no key (keys are computed "
                    "from a workflow's input); put a keyed RateLimit on the workflow"
                )
            self._queue_rate_limits[queue] = rate_limit

    @property
    def queue_rate_limits(self) -> Mapping[str, RateLimit]:
        """The rate limits declared with ``queue()``, by queue."""
        return MappingProxyType(self._queue_rate_limits)

    @property
    def queue_defaults(self) -> Mapping[str, int | None]:
        """The queues declared with ``queue()``, and their default ``max_parallelism``."""
        return MappingProxyType(self._queue_defaults)

    @property
    def workflows(self) -> Mapping[str, Workflow[Any, Any]]:
        """The workflows defined on this pool, by name."""
        return MappingProxyType(self._workflows)

    def get_workflow(self, name: str) -> Workflow[Any, Any]:
        """The workflow of that name, or UnknownWorkflowError."""
        try:
            return self._workflows[name]
        except KeyError:
            known = ", ".join(sorted(self._workflows)) or "none"
            raise UnknownWorkflowError(
                f"no workflow named {name!r} is defined on this pool (defined: {known})"
            ) from None

    def resolve_retry(
        self, explicit: bool | RetryPolicy | None, workflow_retries: bool | RetryPolicy | None
    ) -> RetryPolicy | None:
        """The policy a run gets: the run's choice, else its workflow's, else the pool's."""
        for choice in (explicit, workflow_retries):
            if isinstance(choice, RetryPolicy):
                return choice
            if choice is True:
                return self.default_retry
            if choice is False:
                return None
        return self.default_retry if self.retry_by_default else None

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
        """Close the connections of the ``*_sync`` methods and stop their thread (the
        next ``*_sync`` call starts them again)."""
        self._portal.close()

    async def __aenter__(self) -> Workpool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def portal(self) -> Portal:
        """The private loop thread that serves the ``*_sync`` methods."""
        return self._portal

    # -- client --------------------------------------------------------------------

    async def enqueue_many(self, runs: Sequence[PreparedRun]) -> list[RunHandle[Any]]:
        """Store a batch of runs (from ``Workflow.prepare``) in one backend operation.

        Returns handles in input order; an idempotency key already in use yields the
        handle of the earlier run.
        """
        now = self.clock.now()
        new_runs = [build_new_run(self, prepared, now) for prepared in runs]
        if not new_runs:
            return []
        backend = await self.backend()
        stored = await backend.enqueue(new_runs, now)
        if client_logger.isEnabledFor(logging.INFO):
            _log_enqueued(new_runs, stored)
        return [
            RunHandle(self, outcome.run_id, prepared.output_adapter)
            for outcome, prepared in zip(stored, runs, strict=True)
        ]

    async def run_by_name(self, name: str, input: Any, **options: Any) -> RunHandle[Any]:
        """Enqueue a run of a workflow known by name only (defined in another codebase).

        Takes the same options as ``Workflow.run``. If the workflow is defined on this
        pool, its input is validated as ``run`` would. Otherwise the name must be in the
        backend's registry (what the workers of every app define), unless the registry
        is empty: a typo is an ``UnknownWorkflowError`` at once, not a run that waits
        for a worker forever. The registry's names are cached, so this costs a read
        only when a name is not among them.
        """
        prepared = prepare_run(self, name, input, **options)
        if prepared.definition is None:
            await self._check_registered(prepared.workflow)
        return (await self.enqueue_many([prepared]))[0]

    async def _check_registered(self, name: str) -> None:
        if self._registered is not None and name in self._registered[1]:
            return
        backend = await self.backend()
        names = frozenset(info.name for info in await backend.list_workflows())
        self._registered = (time.monotonic(), names)
        if names and name not in names:
            close = difflib.get_close_matches(name, sorted(names), n=3)
            hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise UnknownWorkflowError(
                f"no app's workers define a workflow named {name!r}: {hint}the registry "
                f"knows {', '.join(sorted(names)[:20])}. Deploy the workers that define "
                "it before the code that enqueues it"
            )

    def handle(self, run_id: str) -> RunHandle[Any]:
        """A handle on an existing run, by id."""
        return RunHandle(self, run_id)

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
        now = self.clock.now()
        return [step_from_record(run_id, record, now) for record in records]

    async def cancel(self, run_id: str, reason: str | None = None) -> CancelResult:
        """Cancel a run: a pending run ends ``canceled`` at once; a running run is
        interrupted by its worker within one lease renewal. A finished run is left as is.

        Returns ``"canceled"``, ``"requested"`` (running) or ``"finished"``.
        """
        backend = await self.backend()
        result = await backend.cancel(run_id, reason, self.clock.now())
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
                cutoff, workflow, reason, CANCEL_BATCH, self.clock.now()
            )
            total += count
            if count == 0:
                return total

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
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
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
        now = self.clock.now()
        snapshot = await backend.get_stats(now - window.total_seconds(), now)
        return summarize(snapshot, now, window, queue=queue, workflow=workflow)

    async def retry_run(self, run_id: str) -> RunHandle[Any]:
        """Enqueue a failed or canceled run again, as a new run (same workflow, queue,
        input, retry policy and limits) linked to the old one by ``retry_of`` and
        ``retried_as``. Retrying a run twice returns the run made the first time.
        RunNotFoundError for an unknown id; RunStateError for a run that has not failed
        or been canceled."""
        backend = await self.backend()
        now = self.clock.now()
        result = await backend.rerun(run_id, new_run_id(now), now)
        if result.status == "not_found":
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        if result.run_id is None:
            state = "still active" if result.status == "not_finished" else "succeeded"
            raise RunStateError(
                f"run {run_id} {state}: only a failed or canceled run can be retried"
            )
        return RunHandle(self, result.run_id)

    async def live_workers(self) -> list[WorkerRecord]:
        """The workers that announced themselves lately: what each serves (its app,
        queues and workflows), by id."""
        backend = await self.backend()
        return await backend.list_workers(self.clock.now())

    async def waiting_reason(self, run: Run) -> str | None:
        """Why a pending run has not started, if something other than a busy worker
        holds it: no live worker defines its workflow on its queue, or its queue is
        paused. None for runs that are not pending."""
        if run.status not in ("queued", "scheduled"):
            return None
        workers = await self.live_workers()
        if not any(worker.serves(run.queue, run.workflow) for worker in workers):
            return (
                f"waiting: no worker defines workflow {run.workflow!r} on queue "
                f"{run.queue!r} ({len(workers)} live workers)"
            )
        if run.waiting is not None:
            return run.waiting
        if (await self.get_queue(run.queue)).paused:
            return f"waiting: queue {run.queue!r} is paused"
        return None

    async def list_workflows(self) -> list[RegisteredWorkflow]:
        """The workflows registered by the workers of every app, by name."""
        backend = await self.backend()
        return [registered_workflow(info) for info in await backend.list_workflows()]

    def registry_records(self) -> list[WorkflowInfo]:
        """This pool's definitions as registry records (stored by workers at start)."""
        if not self.app:
            raise ConfigurationError(
                "starting a worker needs Workpool(app='<name>'): the application that "
                "defines these workflows, so that only its own workers remove its stale "
                "definitions from the registry"
            )
        records = []
        for workflow in self._workflows.values():
            retry = self.resolve_retry(None, workflow.retries)
            records.append(
                WorkflowInfo(
                    name=workflow.name,
                    app=self.app,
                    queue=workflow.queue,
                    max_concurrency=workflow.max_concurrency,
                    retry=json.dumps(retry.to_json()) if retry is not None else None,
                    cron=to_json(
                        [trigger.to_json() for trigger in workflow.cron],
                        what=f"cron triggers of workflow {workflow.name!r}",
                    ),
                    updated_at=0.0,
                )
            )
        return records

    async def get_queue(self, queue: str) -> QueueSettings:
        """A queue's settings: ``max_parallelism`` (None: no limit) and ``paused``."""
        backend = await self.backend()
        return await backend.get_queue(check_name(queue, what="queue name"))

    async def set_max_parallelism(self, queue: str, limit: int | None) -> QueueSettings:
        """Let at most ``limit`` runs of ``queue`` run at once across every worker (None:
        no limit; 0: start none). Raising it starts waiting runs at once."""
        backend = await self.backend()
        name = check_name(queue, what="queue name")
        return await backend.set_queue(name, max_parallelism=_check_parallelism(limit))

    async def pause(self, queue: str) -> QueueSettings:
        """Start no more runs of ``queue``; running runs finish and are recorded."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=True)

    async def resume(self, queue: str) -> QueueSettings:
        """Start runs of ``queue`` again (within its ``max_parallelism``)."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=False)

    def worker(
        self,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        lease: timedelta | float = timedelta(seconds=20),
        renew_every: timedelta | float = timedelta(seconds=2),
        shutdown_grace: timedelta | float = timedelta(seconds=30),
        max_lease_losses: int = 3,
        housekeeping_every: timedelta | float = timedelta(minutes=1),
    ) -> Worker:
        """A worker for this pool: ``await worker.run()`` or ``async with pool.worker():``.
        Durations are timedeltas or seconds."""
        options = WorkerOptions(
            queues=tuple(queues),
            concurrency=concurrency,
            lease=as_timedelta(lease, what="lease", positive=True),
            renew_every=as_timedelta(renew_every, what="renew_every", positive=True),
            shutdown_grace=as_timedelta(shutdown_grace, what="shutdown_grace"),
            max_lease_losses=max_lease_losses,
            housekeeping_every=as_timedelta(
                housekeeping_every, what="housekeeping_every", positive=True
            ),
        )
        return Worker(self, options)

    # -- synchronous twins ---------------------------------------------------------

    def enqueue_many_sync(self, runs: Sequence[PreparedRun]) -> list[RunHandle[Any]]:
        """``enqueue_many`` for synchronous code."""
        return self.portal.call(self.enqueue_many(runs), "pool.enqueue_many")

    def run_by_name_sync(self, name: str, input: Any, **options: Any) -> RunHandle[Any]:
        """``run_by_name`` for synchronous code."""
        return self.portal.call(self.run_by_name(name, input, **options), "pool.run_by_name")

    def get_run_sync(self, run_id: str) -> Run:
        """``get_run`` for synchronous code."""
        return self.portal.call(self.get_run(run_id), "pool.get_run")

    def get_steps_sync(self, run_id: str) -> list[Step]:
        """``get_steps`` for synchronous code."""
        return self.portal.call(self.get_steps(run_id), "pool.get_steps")

    def cancel_sync(self, run_id: str, reason: str | None = None) -> CancelResult:
        """``cancel`` for synchronous code."""
        return self.portal.call(self.cancel(run_id, reason), "pool.cancel")

    def list_runs_sync(
        self,
        *,
        status: RunState | None = None,
        workflow: str | None = None,
        queue: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunList:
        """``list_runs`` for synchronous code."""
        return self.portal.call(
            self.list_runs(
                status=status, workflow=workflow, queue=queue, limit=limit, cursor=cursor
            ),
            "pool.list_runs",
        )

    def stats_sync(
        self,
        window: timedelta | float = timedelta(minutes=5),
        *,
        queue: str | None = None,
        workflow: str | None = None,
    ) -> Stats:
        """``stats`` for synchronous code."""
        return self.portal.call(self.stats(window, queue=queue, workflow=workflow), "pool.stats")

    def retry_run_sync(self, run_id: str) -> RunHandle[Any]:
        """``retry_run`` for synchronous code."""
        return self.portal.call(self.retry_run(run_id), "pool.retry_run")

    def list_workflows_sync(self) -> list[RegisteredWorkflow]:
        """``list_workflows`` for synchronous code."""
        return self.portal.call(self.list_workflows(), "pool.list_workflows")

    def get_queue_sync(self, queue: str) -> QueueSettings:
        """``get_queue`` for synchronous code."""
        return self.portal.call(self.get_queue(queue), "pool.get_queue")

    def set_max_parallelism_sync(self, queue: str, limit: int | None) -> QueueSettings:
        """``set_max_parallelism`` for synchronous code."""
        return self.portal.call(self.set_max_parallelism(queue, limit), "pool.set_max_parallelism")

    def pause_sync(self, queue: str) -> QueueSettings:
        """``pause`` for synchronous code."""
        return self.portal.call(self.pause(queue), "pool.pause")

    def resume_sync(self, queue: str) -> QueueSettings:
        """``resume`` for synchronous code."""
        return self.portal.call(self.resume(queue), "pool.resume")

    def cancel_all_sync(
        self,
        *,
        before: datetime | None = None,
        workflow: str | None = None,
        reason: str | None = None,
    ) -> int:
        """``cancel_all`` for synchronous code."""
        return self.portal.call(
            self.cancel_all(before=before, workflow=workflow, reason=reason), "pool.cancel_all"
        )


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


def _check_parallelism(limit: int | None) -> int | None:
    if limit is not None and (type(limit) is not int or limit < 0):  # bools too
        raise ConfigurationError(
            f"max_parallelism must be a whole number >= 0 (0 starts nothing) or None (no "
            f"limit), got {limit!r}"
        )
    return limit


def _check_url(url: str) -> None:
    lowered = url.lower()
    if lowered.startswith("sqlite:"):
        sqlite_synchronous(url)  # checks the path and the options
    elif not lowered.startswith(("redis://", "rediss://")):
        raise ConfigurationError(
            f"unsupported backend URL {url!r}: use sqlite:///path/to.db or "
            "redis://host:port/db (rediss:// for TLS)"
        )
