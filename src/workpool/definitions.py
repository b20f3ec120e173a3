"""Workflow definitions: what ``@pool.workflow`` returns, and the runs it prepares."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar, overload

from pydantic import TypeAdapter

from workpool.cron import Cron, trigger_ids
from workpool.errors import ConfigurationError
from workpool.handles import RunHandle
from workpool.models import OnComplete
from workpool.options import Limit, RateLimit, RetryPolicy
from workpool.serialization import from_json, handler_adapters, to_json
from workpool.sync import Portal, call_sync, refuse_in_event_loop
from workpool.validation import (
    check_count,
    check_name,
    check_priority,
    deadline_given,
    duration_seconds,
    timeout_seconds,
    timestamp_of,
)

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")

# A handler's first argument is a ``workpool.RunContext``. The engine, which defines it,
# is a layer above this module (it executes these definitions), so the alias says Any:
# definitions never import the engine, not even for type checking.
Handler = Callable[[Any, InputT], Awaitable[OutputT] | OutputT]
AsyncHandler = Callable[[Any, InputT], Awaitable[OutputT]]
SyncHandler = Callable[[Any, InputT], OutputT]
FailureCallback = Callable[[OnComplete], Awaitable[None] | None]
ConcurrencyKey = Callable[[Any], object]
"""Computes a run's concurrency key from its (validated) input; the result is str()-ed."""


DEFAULT_IDEMPOTENCY_TTL = timedelta(days=7)
"""How long an idempotency key is remembered unless a run says otherwise."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How one run is enqueued. See ``Workflow.run`` for each field."""

    run_at: datetime | None = None
    run_after: timedelta | float | None = None
    idempotency_key: str | None = None
    idempotency_ttl: timedelta | float = DEFAULT_IDEMPOTENCY_TTL
    queue: str | None = None
    retry: bool | RetryPolicy | None = None
    on_complete: Workflow[Any, Any] | str | None = None
    context: Any = None
    timeout: timedelta | float | None = None
    deadline: timedelta | float | datetime | None = None
    priority: int | None = None
    debounce: timedelta | float | None = None
    debounce_key: str | None = None
    debounce_max: timedelta | float | None = None

    def __post_init__(self) -> None:
        if self.priority is not None:
            check_priority(self.priority)
        if self.run_at is not None and self.run_after is not None:
            raise ConfigurationError("give run_at or run_after, not both")
        if self.run_at is not None:
            timestamp_of(self.run_at, what="run_at")
        if self.run_after is not None:
            duration_seconds(self.run_after, what="run_after")
        duration_seconds(self.idempotency_ttl, what="idempotency_ttl", positive=True)
        if self.idempotency_key is not None:
            check_name(self.idempotency_key, what="idempotency_key")
        if self.queue is not None:
            check_name(self.queue, what="queue name")
        self._check_completion()
        self._check_limits()
        if self.debounce is not None or self.debounce_key is not None:
            self._check_debounce()
        elif self.debounce_max is not None:
            raise ConfigurationError("debounce_max bounds a debounce: give debounce=... too")

    def _check_limits(self) -> None:
        if self.timeout is not None:
            timeout_seconds(self.timeout, what="timeout")
        if self.deadline is not None:
            deadline_given(self.deadline, what="deadline")

    def _check_debounce(self) -> None:
        if self.debounce is None:
            raise ConfigurationError("debounce_key names a debounce: give debounce=... too")
        window = duration_seconds(self.debounce, what="debounce", positive=True)
        if self.debounce_key is not None:
            check_name(self.debounce_key, what="debounce_key")
        if self.debounce_max is not None:
            most = duration_seconds(self.debounce_max, what="debounce_max", positive=True)
            if most < window:
                raise ConfigurationError(
                    f"debounce_max ({most:g} s) is shorter than the debounce window "
                    f"({window:g} s); give at least the window"
                )
        if self.run_at is not None or self.run_after is not None:
            raise ConfigurationError(
                "a debounced run starts when its window has been quiet: give debounce or "
                "run_at/run_after, not both"
            )
        if self.idempotency_key is not None:
            raise ConfigurationError(
                "give debounce or idempotency_key, not both: a debounced run takes the last "
                "input of its window, an idempotency key keeps the first run"
            )

    def _check_completion(self) -> None:
        if self.retry is not None and not isinstance(self.retry, bool | RetryPolicy):
            raise ConfigurationError(
                f"retry must be True, False, a RetryPolicy or None, got {self.retry!r}"
            )
        check_completion(self.on_complete, self.context)


def check_completion(on_complete: object, context: object) -> None:
    """Refuse an ``on_complete`` that is neither a workflow nor its name, or a
    ``context`` without one."""
    if context is not None and on_complete is None:
        raise ConfigurationError(
            "context is passed to on_complete; give on_complete=... or drop context"
        )
    if isinstance(on_complete, str):
        check_name(on_complete, what="on_complete workflow name")
    elif on_complete is not None and not isinstance(on_complete, Workflow):
        raise ConfigurationError(f"on_complete must be a workflow or its name, got {on_complete!r}")


DEFAULT_RUN_OPTIONS = RunOptions()


def run_options(options: dict[str, Any]) -> RunOptions:
    """``RunOptions(**options)``, or the shared defaults when every option is its default
    (``Workflow.run`` passes each one): most runs give none, and checking them costs
    more than the rest of ``prepare``."""
    for value in options.values():
        if value is not None and value is not DEFAULT_IDEMPOTENCY_TTL:
            return RunOptions(**options)
    return DEFAULT_RUN_OPTIONS


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """A validated, serialized run ready to enqueue (see ``Workpool.enqueue_many``)."""

    workflow: str
    input_json: str
    options: RunOptions
    definition: Workflow[Any, Any] | None = None
    """The workflow that prepared it, if defined here: its queue and retries apply."""
    concurrency_key: str | None = None
    """The run's key for its workflow's ``max_concurrency``, if the workflow has one."""
    rate_key: str | None = None
    """The run's key for its workflow's ``rate_limit``, if that has a key."""
    limit_keys: tuple[str | None, ...] = ()
    """The run's key for each of its workflow's shared ``limits`` (None: unkeyed)."""

    @property
    def output_adapter(self) -> TypeAdapter[Any] | None:
        """Decodes the output for the run's handle, if the workflow declares its type."""
        return self.definition.output_adapter if self.definition is not None else None


class Enqueuer(Protocol):
    """What a workflow needs of the client it enqueues through (``Workflow.run``)."""

    @property
    def portal(self) -> Portal:
        """The event loop of the ``*_sync`` methods."""
        ...

    async def enqueue_many(
        self, runs: Sequence[PreparedRun], *, connection: object = None
    ) -> list[RunHandle[Any]]:
        """Store runs in one operation (in ``connection``'s transaction); their handles."""
        ...


class Register(Protocol):
    """What ``@pool.workflow(...)`` returns: turns a handler into a Workflow."""

    @overload
    def __call__(self, handler: AsyncHandler[InputT, OutputT]) -> Workflow[InputT, OutputT]: ...

    @overload
    def __call__(self, handler: SyncHandler[InputT, OutputT]) -> Workflow[InputT, OutputT]: ...


class Workflow(Generic[InputT, OutputT]):
    """A function registered with a pool; call ``run`` to enqueue a run of it."""

    def __init__(
        self,
        client: Enqueuer,
        handler: Handler[InputT, OutputT],
        *,
        name: str,
        queue: str,
        retries: bool | RetryPolicy | None,
        on_failure: Workflow[Any, Any] | FailureCallback | None,
        max_concurrency: int | None = 1,
        concurrency_key: ConcurrencyKey | None = None,
        cron: Sequence[Cron] = (),
        rate_limit: RateLimit | None = None,
        timeout: timedelta | float | None = None,
        priority: int = 0,
        deadline: timedelta | float | None = None,
        limits: Sequence[Limit] = (),
    ) -> None:
        check_priority(priority, what=f"workflow {name!r}: priority")
        if max_concurrency is not None:
            max_concurrency = check_count(
                max_concurrency,
                what=f"workflow {name!r}: max_concurrency",
                minimum=1,
                none="no limit",
            )
        _check_options(name, retries, on_failure, concurrency_key, rate_limit)
        if concurrency_key is not None and max_concurrency is None:
            raise ConfigurationError(
                f"workflow {name!r}: concurrency_key needs a max_concurrency to scope; "
                "give max_concurrency=N (runs with one key at a time: 1)"
            )
        self.client = client
        """Where ``run`` enqueues: the pool that defined it."""
        self.handler = handler
        self.name = name
        self.queue = queue
        self.retries = retries
        self.on_failure = on_failure
        self.max_concurrency = max_concurrency
        self.concurrency_key = concurrency_key
        self.cron = tuple(cron)
        self.rate_limit = rate_limit
        self.limits = tuple(limits)
        """The shared limits (``Workpool.limit``) its runs count against."""
        self.timeout = (
            None
            if timeout is None
            else timeout_seconds(timeout, what=f"workflow {name!r}: timeout")
        )
        """Seconds one attempt of a run may execute (None: no limit); a run's own wins."""
        self.deadline = None
        if deadline is not None:
            self.deadline = timeout_seconds(deadline, what=f"workflow {name!r}: deadline")
        """Seconds from enqueue by which each run must have ended (None: no deadline)."""
        self.priority = priority
        """The priority of its runs that do not give one (children and hooks included)."""
        self.is_async = inspect.iscoroutinefunction(handler)
        self.input_adapter, self.output_adapter = handler_adapters(handler, name)
        for trigger in self.cron:
            if not isinstance(trigger, Cron):
                raise ConfigurationError(
                    f"workflow {name!r}: cron takes Cron(...) triggers, got {trigger!r}"
                )
            self.prepare(trigger.input)  # a trigger's input must be valid now, not at 3 am
        self.cron_ids = trigger_ids(self.cron, name)
        """Each cron trigger's id (``workpool.cron.trigger_ids``), in ``cron``'s order."""

    def __repr__(self) -> str:
        return f"<Workflow {self.name!r} queue={self.queue!r}>"

    def prepare(self, input: InputT, **options: Any) -> PreparedRun:
        """Validate and serialize a run without storing it; options as for ``run``.

        Raises pydantic's ``ValidationError`` for invalid input and ``PayloadError``
        for input that is not JSON or is over the size limit. Without an input
        annotation, the input must be JSON as it is: a set, a tuple, an int dict key, a
        datetime, a Decimal, a model... is a PayloadError giving its path (the handler
        would receive something else). ``ConfigurationError`` for bad options, e.g. a
        ``context`` without ``on_complete``.
        """
        value: Any = input
        if self.input_adapter is not None:
            value = self.input_adapter.validate_python(input)
        text = to_json(
            value,
            what=f"input of workflow {self.name!r}",
            adapter=self.input_adapter,
            annotate="annotate the handler's input with its type",
        )
        rate_key = self.rate_limit.key if self.rate_limit is not None else None
        return PreparedRun(
            self.name,
            text,
            run_options(options),
            self,
            self._key_of(value, self.concurrency_key, "concurrency_key"),
            self._key_of(value, rate_key, "rate_limit key"),
            tuple(
                self._key_of(value, limit.key, f"limit {limit.name!r} key") for limit in self.limits
            ),
        )

    def _key_of(self, value: Any, compute: Callable[[Any], object] | None, what: str) -> str | None:
        if compute is None:
            return None
        try:
            key = str(compute(value))
        except Exception as error:
            raise ConfigurationError(
                f"workflow {self.name!r}: {what} raised {type(error).__name__}: "
                f"{error}; it must compute a key from every valid input"
            ) from error
        return check_name(key, what=f"workflow {self.name!r}: the key {what} gave")

    async def run(
        self,
        input: InputT,
        *,
        run_at: datetime | None = None,
        run_after: timedelta | float | None = None,
        idempotency_key: str | None = None,
        idempotency_ttl: timedelta | float = DEFAULT_IDEMPOTENCY_TTL,
        queue: str | None = None,
        retry: bool | RetryPolicy | None = None,
        on_complete: Workflow[Any, Any] | str | None = None,
        context: Any = None,
        timeout: timedelta | float | None = None,
        deadline: timedelta | float | datetime | None = None,
        priority: int | None = None,
        debounce: timedelta | float | None = None,
        debounce_key: str | None = None,
        debounce_max: timedelta | float | None = None,
        connection: object = None,
    ) -> RunHandle[OutputT]:
        """Enqueue a run and return its handle.

        Args:
            input: the handler's input; validated against its annotation, if any.
            run_at: start no earlier than this time (naive datetimes are local time).
            run_after: start no earlier than this long from now (seconds or timedelta).
            idempotency_key: a second enqueue with the same key for this workflow
                within ``idempotency_ttl`` returns the first run's handle.
            idempotency_ttl: how long the key is remembered (timedelta or seconds).
            queue: the queue to use instead of the workflow's.
            retry: True for the pool's default policy, False for one attempt, or a
                RetryPolicy; None uses the workflow's ``retries``, else the pool's.
            on_complete: a workflow (or its name) enqueued when this run ends, with
                input ``OnComplete``.
            context: a JSON value passed through to ``on_complete`` (as it is: a
                value JSON would change is a PayloadError); needs ``on_complete``.
            timeout: the longest one attempt of this run may execute (timedelta or
                seconds), instead of the workflow's ``timeout``.
            deadline: when the whole run (every attempt, backoff and wait) must have
                ended: a timedelta (or seconds) from now, or an aware datetime; instead
                of the workflow's ``deadline``. Past it the run fails, not retried.
            priority: a whole number from -100 to 100, higher first within a queue;
                None uses the workflow's ``priority`` (default 0).
            debounce: a window (timedelta or seconds): the run starts once no other run
                with its ``debounce_key`` was enqueued for that long; such runs enqueued
                meanwhile collapse into it, with the last input (the handle is of that
                one run). Not with ``run_at``, ``run_after`` or ``idempotency_key``.
            debounce_key: whose enqueues collapse (default: the workflow's name, one
                debounced run per workflow).
            debounce_max: the longest a debounced run waits from its first enqueue,
                however often more come (default: no limit).
            connection: your open transaction's (README "Enqueue in your transaction").
        """
        prepared = self.prepare(
            input,
            run_at=run_at,
            run_after=run_after,
            idempotency_key=idempotency_key,
            idempotency_ttl=idempotency_ttl,
            queue=queue,
            retry=retry,
            on_complete=on_complete,
            context=context,
            timeout=timeout,
            deadline=deadline,
            priority=priority,
            debounce=debounce,
            debounce_key=debounce_key,
            debounce_max=debounce_max,
        )
        return (await self.client.enqueue_many([prepared], connection=connection))[0]

    def run_sync(
        self, input: InputT, *, connection: object = None, **options: Any
    ) -> RunHandle[OutputT]:
        """``run`` for synchronous code: blocks until the run is stored.

        Raises ``SyncCallInEventLoopError`` at once on a thread running an event loop.
        """
        call = f"{self.name}.run"
        refuse_in_event_loop(call)
        prepared = self.prepare(input, **options)
        enqueuing = self.client.enqueue_many([prepared], connection=connection)
        return call_sync(self.client.portal, enqueuing, call, connection)[0]

    def decode_input(self, text: str) -> InputT:
        """Turn stored input JSON into the value the handler receives."""
        value = from_json(text)
        if self.input_adapter is not None:
            return typing.cast(InputT, self.input_adapter.validate_python(value))
        return typing.cast(InputT, value)

    def encode_output(self, value: OutputT) -> str:
        """Serialize the handler's return value by its annotation; without one it must
        be JSON as it is (see ``workpool.serialization``). PayloadError says what is not."""
        return to_json(
            value,
            what=f"output of workflow {self.name!r}",
            adapter=self.output_adapter,
            annotate="annotate the handler's return type",
        )


def _check_options(
    name: str,
    retries: object,
    on_failure: object,
    concurrency_key: object,
    rate_limit: object,
) -> None:
    """Refuse a workflow's options of the wrong kind (they would fail at enqueue or run)."""
    if retries is not None and not isinstance(retries, bool | RetryPolicy):
        raise ConfigurationError(
            f"workflow {name!r}: retries must be True, False, a RetryPolicy or None, "
            f"got {retries!r}"
        )
    if rate_limit is not None and not isinstance(rate_limit, RateLimit):
        raise ConfigurationError(
            f"workflow {name!r}: rate_limit must be a RateLimit(count, per=...) or None, "
            f"got {rate_limit!r}"
        )
    if on_failure is not None and not (isinstance(on_failure, Workflow) or callable(on_failure)):
        raise ConfigurationError(
            f"workflow {name!r}: on_failure must be a workflow, a function taking an "
            f"OnComplete, or None, got {on_failure!r}"
        )
    if concurrency_key is not None and not callable(concurrency_key):
        raise ConfigurationError(
            f"workflow {name!r}: concurrency_key must be a function of the run's input "
            f"(e.g. lambda order: order.customer_id), got {concurrency_key!r}"
        )
