"""Workpool: the one object users hold, a thin facade composing the layers below.

It builds the ``Settings`` (resolved configuration) and the ``Registry`` (definitions)
and is a ``Client`` over them (enqueue, read, cancel, admin, and their ``*_sync``
twins); on top it adds the definitions API (``workflow``, ``queue``) and the worker
factory. It holds no run state and no logic of its own: nothing below imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from types import TracebackType
from typing import Any

from workpool.backends import describe_store
from workpool.backends.base import WorkflowInfo
from workpool.client import MAX_PAGE, Client
from workpool.clock import Clock
from workpool.cron import Cron
from workpool.definitions import ConcurrencyKey, FailureCallback, Handler, Register, Workflow
from workpool.logs import apply_level
from workpool.options import Limit, RateLimit, RetryPolicy
from workpool.registry import Registry
from workpool.serialization import DEFAULT_MAX_PAYLOAD_BYTES
from workpool.settings import DEFAULT_RETENTION, Settings
from workpool.validation import as_timedelta, check_name, check_priority
from workpool.worker import Worker, WorkerOptions

__all__ = ["DEFAULT_RETENTION", "MAX_PAGE", "Workpool"]


class Workpool(Client):
    """A pool of durable workflows over one backend.

    Args:
        url: ``sqlite:///path.db``, ``redis://[:password@]host:port/db`` (``rediss://``
            for TLS) or ``postgresql://user@host/database?schema=name`` (``schema``:
            default ``workpool``). Defaults to ``$WORKPOOL_URL``, else
            ``sqlite:///workpool.db``.
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
        trace_links: with OpenTelemetry tracing on (README "Tracing"), each execution
            of a run starts a trace of its own, linked to the span that enqueued the
            run, instead of being that span's child (the default). Read by workers.
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
        trace_links: bool = False,
    ) -> None:
        apply_level(log_level)
        settings = Settings.resolve(
            url,
            prefix=prefix,
            app=app,
            retry_by_default=retry_by_default,
            default_retry=default_retry,
            max_payload_bytes=max_payload_bytes,
            clock=clock,
            retention=retention,
            fail_unserved_after=fail_unserved_after,
            trace_links=trace_links,
        )
        super().__init__(Registry(), settings)

    def __repr__(self) -> str:
        store = describe_store(self.url, prefix=self.prefix)  # no password in logs
        return f"<Workpool {store} workflows={len(self.registry)}>"

    async def __aenter__(self) -> Workpool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- configuration (read from ``settings``) --------------------------------------

    @property
    def url(self) -> str:
        """The backend's URL."""
        return self.settings.url

    @property
    def prefix(self) -> str:
        """Namespace of every Redis key."""
        return self.settings.prefix

    @property
    def app(self) -> str | None:
        """The application that defines these workflows."""
        return self.settings.app

    @property
    def retry_by_default(self) -> bool:
        """Whether runs retry when neither the run nor its workflow says."""
        return self.settings.retry_by_default

    @property
    def default_retry(self) -> RetryPolicy:
        """The policy of ``retry=True`` and ``retry_by_default``."""
        return self.settings.default_retry

    @property
    def max_payload_bytes(self) -> int:
        """Largest input, output or context, in bytes of JSON."""
        return self.settings.max_payload_bytes

    @property
    def retention(self) -> timedelta | None:
        """How long finished runs are kept (None: forever)."""
        return self.settings.retention

    @property
    def fail_unserved_after(self) -> timedelta | None:
        """How long a run may wait unserved before it fails (None: forever)."""
        return self.settings.fail_unserved_after

    @property
    def clock(self) -> Clock:
        """Where time comes from."""
        return self.settings.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        """Use another clock from now on (tests); workers made later read it."""
        self.settings = replace(self.settings, clock=clock)

    def resolve_retry(
        self, explicit: bool | RetryPolicy | None, workflow_retries: bool | RetryPolicy | None
    ) -> RetryPolicy | None:
        """The policy a run gets: the run's choice, else its workflow's, else the pool's."""
        return self.settings.resolve_retry(explicit, workflow_retries)

    # -- definitions (kept in ``registry``) ------------------------------------------

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
        timeout: timedelta | float | None = None,
        priority: int = 0,
        deadline: timedelta | float | None = None,
        limits: Sequence[Limit | str] = (),
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
                each tick, unless the trigger's ``overlap`` policy skips it while the
                trigger's own previous run is active (see ``Cron``); a started tick
                waits at max_concurrency like any run.
            timeout: the longest one attempt may execute (timedelta or seconds; None:
                no limit); over it the attempt fails with ``RunTimeoutError`` and the
                retry policy decides. A run's own ``timeout=`` wins.
            priority: the priority of its runs that give none (their children, hooks
                and cron ticks included): a whole number from -100 to 100, higher first
                within a queue (see ``queue(priority_aging=...)``); default 0.
            deadline: how long after its enqueue each run must have ended, across
                every attempt, backoff and durable wait (timedelta or seconds; None: no
                deadline); past it the run fails with ``DeadlineExceededError`` wherever
                it is, not retried. A run's own ``deadline=`` wins.
            limits: shared limits (``limit(...)``, or their names) its runs count
                against besides its own: a run starts only once every one admits it.
        """
        if name is not None:
            check_name(name, what="workflow name")
        check_name(queue, what="queue name")
        check_priority(priority, what="priority")

        def register(handler: Handler[Any, Any]) -> Workflow[Any, Any]:
            workflow_name = name
            if workflow_name is None:
                default = getattr(handler, "__name__", None)
                workflow_name = check_name(default, what="workflow name (give name=...)")
            self.registry.check_free(workflow_name)
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
                timeout=timeout,
                priority=priority,
                deadline=deadline,
                limits=self.registry.resolve_limits(limits, f"workflow {workflow_name!r}"),
            )
            self.registry.add(definition)
            return definition

        return register

    def queue(
        self,
        name: str,
        *,
        max_parallelism: int | None = None,
        rate_limit: RateLimit | None = None,
        priority_aging: timedelta | float | None = None,
        limits: Sequence[Limit | str] = (),
    ) -> None:
        """Declare a queue's default ``max_parallelism`` (runs of it running at once,
        across every worker; 0 starts none), its ``rate_limit`` (runs started per
        period, applied to runs this pool enqueues to the queue) and its
        ``priority_aging``.

        A worker serving the queue stores ``max_parallelism`` when it starts, unless the
        queue already has settings: a change made with ``set_max_parallelism``,
        ``pause`` or the ``workpool queues`` command is kept.

        ``priority_aging`` (a timedelta or seconds, at most 2**33 s): how much waiting
        one priority level is worth in this queue. Its runs are then claimed by
        ``available_at - priority * priority_aging``, so a run that has waited longer
        than ``priority_aging`` times the difference goes before a newer run of higher
        priority. None (the default): strict, priority first, then the oldest. Like
        ``rate_limit``, it applies to the runs this pool enqueues (the value is fixed
        into each run when it is enqueued). ``limits``: shared limits (unkeyed) every
        run this pool enqueues to the queue counts against.
        """
        self.registry.declare_queue(name, max_parallelism, rate_limit, priority_aging)
        queue = check_name(name, what="queue name")
        self.registry.declare_queue_limits(
            queue, self.registry.resolve_limits(limits, f"queue {queue!r}")
        )

    def limit(
        self,
        name: str,
        *,
        max_concurrency: int | None = None,
        rate: RateLimit | None = None,
        key: Callable[[Any], object] | None = None,
    ) -> Limit:
        """Define a limit shared by the workflows and queues that name it (their
        ``limits=``): at most ``max_concurrency`` of their runs admitted (queued to
        start, or running) at once and at most ``rate`` starts per period, across every
        worker. ``key``: one such limit per key computed from a run's input (workflows
        only). A run counts against its workflow's own limits too: it starts once every
        limit admits it, and waits holding no worker slot. Returns the limit.
        """
        return self.registry.declare_limit(
            Limit(check_name(name, what="limit name"), max_concurrency, rate, key)
        )

    @property
    def limits(self) -> Mapping[str, Limit]:
        """The shared limits defined with ``limit()``, by name."""
        return self.registry.limits

    @property
    def queue_rate_limits(self) -> Mapping[str, RateLimit]:
        """The rate limits declared with ``queue()``, by queue."""
        return self.registry.queue_rate_limits

    @property
    def queue_defaults(self) -> Mapping[str, int | None]:
        """The queues declared with ``queue()``, and their default ``max_parallelism``."""
        return self.registry.queue_defaults

    @property
    def workflows(self) -> Mapping[str, Workflow[Any, Any]]:
        """The workflows defined on this pool, by name."""
        return self.registry.workflows

    def get_workflow(self, name: str) -> Workflow[Any, Any]:
        """The workflow of that name, or UnknownWorkflowError."""
        return self.registry.get_workflow(name)

    def registry_records(self) -> list[WorkflowInfo]:
        """This pool's definitions as registry records (stored by workers at start)."""
        return self.registry.records(self.settings)

    # -- workers -------------------------------------------------------------------

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
        max_runs: int | None = None,
        claim_ahead: bool = True,
        recycle_on_abandoned_thread: bool = False,
    ) -> Worker:
        """A worker for this pool: ``await worker.run()`` or ``async with pool.worker():``.
        Durations are timedeltas or seconds; ``max_runs``, ``claim_ahead`` and
        ``recycle_on_abandoned_thread``: see ``WorkerOptions``."""
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
            max_runs=max_runs,
            claim_ahead=claim_ahead,
            recycle_on_abandoned_thread=recycle_on_abandoned_thread,
        )
        return Worker(self, options)
