"""``ctx.step``: durable steps, child runs, sleeps and events, replayed from saved results.

Each step is saved under its name when it completes, in one backend operation that
only the lease holder can perform. A later execution of the same run (a retry, a
reclaim after a crash, a resume after a wait) replays the handler from the start:
completed steps return their saved result without running again.

Waiting does not hold a worker slot. When the handler is blocked on durable waits
only (a child run, a sleep, an event) and no step is in progress, every pending wait
raises ``SuspendRun``; the worker then suspends the run, and the backend queues it again
when a child ends, an awaited event is sent or the timer is due. Sleeps shorter than
``SLEEP_IN_SLOT_UNDER`` stay in the slot: a suspend and resume costs a few backend
operations and a replay.

Over 400 lines, and kept whole: it is one class, whose replay bookkeeping (saved steps,
names used, steps in progress, pending waits) every step kind reads and writes; its
environment and signals live in ``environment.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NoReturn

from workpool import tracing
from workpool.backends.base import NewRun, StepKind, StepRecord
from workpool.definitions import RunOptions, Workflow
from workpool.engine.children import child_result, child_run
from workpool.engine.environment import (
    LeaseLost,
    StepEnvironment,
    SuspendRun,
    Suspension,
    check_lease,
    ride_out,
)
from workpool.errors import (
    DuplicateStepError,
    NonRetriableError,
    PayloadError,
    StepTimeoutError,
)
from workpool.serialization import check_size, error_json, from_json, to_json
from workpool.validation import check_name, check_time, duration_seconds, timestamp_of

SLEEP_IN_SLOT_UNDER = 0.5
"""Seconds: a shorter sleep waits in the slot instead of suspending the run."""
REPLAYED = {"workpool.step.replayed": True}
"""The attribute of a step's span when the step returned its saved result."""


class Steps:
    """The ``ctx.step`` API of one execution of a run (async handlers only)."""

    def __init__(self, env: StepEnvironment) -> None:
        self._env = env
        self._run_id = env.lease.run_id
        self._saved: dict[str, StepRecord] | None = None if env.has_steps else {}
        self._loading = asyncio.Lock()
        self._used: set[str] = set()
        self._busy = 0
        self._settled = asyncio.Event()
        self._settled.set()
        self._waits: list[tuple[str | None, float | None, str | None, asyncio.Future[None]]] = []
        self._watcher: asyncio.Task[None] | None = None
        self.duplicate: DuplicateStepError | None = None
        """Set when a step name was used twice: the run fails whatever the handler does."""
        self.suspension: Suspension | None = None
        """Set once the run is to be suspended (the pending waits were unwound)."""

    # -- the API ----------------------------------------------------------------------

    async def run(
        self,
        name: str,
        fn: Callable[..., Any],
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` (sync or async) once per run; return its result.

        The result is saved as JSON under ``name``; a replay returns the saved value
        (decoded from JSON, so the first execution returns the same) without calling
        ``fn``. If ``fn`` raises, nothing is cached and the error propagates (the run's
        retry policy applies). Over ``timeout`` (a timedelta or seconds):
        StepTimeoutError; a sync ``fn`` cannot be interrupted and finishes in its
        thread, unobserved.
        """
        seconds = self._timeout(name, timeout)
        self._use_name(name)
        with self._active(), tracing.step_span("run", name) as span:
            saved = (await self._load()).get(name)
            self._check_kind(saved, name, "run")
            if saved is not None and saved.status == "succeeded":
                tracing.annotate(span, REPLAYED)
                return from_json(saved.output)
            attempts = saved.attempts + 1 if saved is not None else 1
            tracing.annotate(span, {"workpool.step.attempt": attempts})
            started = self._now()
            check_lease(self._env, name)
            try:
                value = await self._call(name, fn, args, kwargs, seconds)
                output = self._result_json(name, value)
            except Exception as error:
                failed = StepRecord(
                    name,
                    "run",
                    "failed",
                    attempts,
                    started,
                    error=error_json(error),
                    finished_at=self._now(),
                )
                await self._save(failed)
                raise
            done = StepRecord(
                name, "run", "succeeded", attempts, started, output=output, finished_at=self._now()
            )
            await self._save(done)
            return from_json(output)

    async def run_workflow(
        self,
        name: str,
        child: Workflow[Any, Any] | str,
        input: Any,
        *,
        timeout: timedelta | float | None = None,
        queue: str | None = None,
    ) -> Any:
        """Start a child run of ``child`` (a workflow or its name), wait, return its output.

        The child is enqueued once per run (idempotency key from this run's id, the
        step name and the child's name). While it runs this run is suspended and frees
        its slot. Raises RunFailedError / RunCanceledError if the child failed or was
        canceled, StepTimeoutError if it did not end within ``timeout`` (a timedelta
        or seconds; it then runs on). Canceling this run cancels the child.
        """
        seconds = self._timeout(name, timeout)
        RunOptions(queue=queue)  # checks the queue name as run() would
        self._use_name(name)
        with self._active(), tracing.step_span("workflow", name) as span:
            saved = (await self._load()).get(name)
            self._check_kind(saved, name, "workflow")
            if saved is not None and saved.status in ("waiting", "succeeded"):
                tracing.annotate(span, REPLAYED)
            else:
                now = self._now()
                waiting = StepRecord(
                    name,
                    "workflow",
                    "waiting",
                    saved.attempts + 1 if saved else 1,
                    now,
                    wake_at=now + seconds if seconds is not None else None,
                )
                saved = await self._start_child(waiting, child, input, queue=queue)
            if saved.status == "waiting":
                if saved.wake_at is not None and self._now() >= saved.wake_at:
                    error = StepTimeoutError(
                        f"step {name!r}: child run {saved.child_run_id} did not end within "
                        f"{seconds} s; it keeps running"
                    )
                    await self._save(
                        replace(
                            saved, status="failed", error=error_json(error), finished_at=self._now()
                        )
                    )
                    raise error
                await self._suspend_until(saved.child_run_id, saved.wake_at)
            return child_result(saved, child)

    async def emit_workflow(
        self,
        name: str,
        child: Workflow[Any, Any] | str,
        input: Any,
        *,
        run_at: datetime | None = None,
        run_after: timedelta | float | None = None,
        queue: str | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        """Start a child run without waiting for it; return its run id.

        Enqueued once per run: by default the idempotency key comes from this run's
        id, the step name and the child's name. The child is not canceled with this run.
        """
        RunOptions(  # checks the options as run() would
            run_at=run_at, run_after=run_after, queue=queue, idempotency_key=idempotency_key
        )
        self._use_name(name)
        with self._active(), tracing.step_span("emit", name) as span:
            saved = (await self._load()).get(name)
            self._check_kind(saved, name, "emit")
            if saved is None or saved.child_run_id is None:
                now = self._now()
                emitted = StepRecord(name, "emit", "succeeded", 1, now, finished_at=now)
                saved = await self._start_child(
                    emitted,
                    child,
                    input,
                    queue=queue,
                    run_at=run_at,
                    run_after=run_after,
                    idempotency_key=idempotency_key,
                )
            else:
                tracing.annotate(span, REPLAYED)
            assert saved.child_run_id is not None
            return saved.child_run_id

    async def sleep(self, name: str, duration: timedelta | float) -> None:
        """Wait ``duration`` (seconds or timedelta) durably: a restart does not reset it.

        Waits of ``SLEEP_IN_SLOT_UNDER`` seconds or more suspend the run and free its slot.
        """
        seconds = self._duration(name, "duration", duration, positive=False)
        await self._sleep(name, lambda now: now + max(0.0, seconds))

    async def sleep_until(self, name: str, when: datetime) -> None:
        """Wait durably until ``when`` (naive datetimes are local time)."""
        wake_at = timestamp_of(when, what=f"step {name!r}: when")
        await self._sleep(name, lambda _: wake_at)

    async def wait_for_event(
        self, name: str, key: str, *, timeout: timedelta | float | None = None
    ) -> Any:
        """Wait durably for an event sent to this run under ``key``; return its payload.

        Events are kept from when they are sent (``pool.send_event``), also before this
        wait, and each goes to one wait, oldest first. While none has come the run is
        suspended and frees its slot. After ``timeout`` (a timedelta or seconds, counted
        from the first execution that reached this step: a replay does not restart it)
        it returns None, as a null payload would: send non-null payloads when the two
        must be told apart. A replay returns the saved payload.
        """
        seconds = self._timeout(name, timeout)
        check_name(key, what=f"step {name!r}: event key")
        self._use_name(name)
        with self._active():
            saved = (await self._load()).get(name)
            self._check_kind(saved, name, "event")
            if saved is None or saved.status == "waiting":
                now = self._now()
                wake_at = None if seconds is None else now + seconds
                step = saved or StepRecord(name, "event", "waiting", 1, now, wake_at=wake_at)
                if step.wake_at is not None and now >= step.wake_at:
                    step = replace(step, status="succeeded", output="null", finished_at=now)
                saved = await self._save(step, event=key)
                tracing.note(
                    "wait for event" if saved.status == "waiting" else "event taken",
                    {"workpool.step": name, "workpool.event": key},
                )
            if saved.status == "waiting":
                await self._suspend_until(None, saved.wake_at, event=key)
            return from_json(saved.output)

    def _timeout(self, name: str, timeout: timedelta | float | None) -> float | None:
        """Seconds of a step's ``timeout`` (None: no limit)."""
        if timeout is None:
            return None
        return self._duration(name, "timeout", timeout, positive=True)

    def _duration(self, name: str, what: str, value: object, *, positive: bool) -> float:
        """Seconds of a step's duration argument, ending at a time workpool can store."""
        seconds = duration_seconds(value, what=f"step {name!r}: {what}", positive=positive)
        check_time(self._now() + max(0.0, seconds), what=f"step {name!r}: the end of its {what}")
        return seconds

    # -- replay state -------------------------------------------------------------------

    async def _sleep(self, name: str, wake_at_from: Callable[[float], float]) -> None:
        self._use_name(name)
        with self._active():
            saved = (await self._load()).get(name)
            self._check_kind(saved, name, "sleep")
            if saved is None:
                now = self._now()
                timer = StepRecord(name, "sleep", "waiting", 1, now, wake_at=wake_at_from(now))
                saved = await self._save(timer)
                tracing.note(
                    "sleep", {"workpool.step": name, "workpool.sleep_until": timer.wake_at}
                )
            assert saved.wake_at is not None
            remaining = saved.wake_at - self._now()
            if remaining <= 0:
                return
            if remaining < SLEEP_IN_SLOT_UNDER:
                await asyncio.sleep(remaining)
                return
            await self._suspend_until(None, saved.wake_at)

    async def _load(self) -> dict[str, StepRecord]:
        async with self._loading:
            if self._saved is None:
                backend = self._env.backend
                steps = await ride_out(
                    self._env, "load steps", lambda: backend.get_steps(self._run_id)
                )
                self._saved = {step.name: step for step in steps}
        return self._saved

    async def _save(
        self, step: StepRecord, child: NewRun | None = None, *, event: str | None = None
    ) -> StepRecord:
        """Save a step (a save is idempotent: it replaces the step, a child keeps its key,
        and a step that took its event keeps it). With ``event``, take the oldest event
        of that key into the step if one was sent."""
        backend, lease = self._env.backend, self._env.lease

        async def call() -> StepRecord | None:
            if event is not None:
                return await backend.take_event(lease, step, event, self._now())
            return await backend.save_step(lease, step, self._now(), child)

        stored = await ride_out(self._env, f"save step {step.name!r}", call)
        if stored is None:
            raise LeaseLost(f"run {self._run_id}: lease lost, step {step.name!r} not saved")
        assert self._saved is not None
        self._saved[step.name] = stored
        return stored

    def _result_json(self, name: str, value: Any) -> str:
        """A step result as JSON; one that cannot be stored fails the run for good (the
        same function would return the same thing on a retry)."""
        try:
            output = to_json(value, what=f"result of step {name!r}")
            check_size(output, what=f"result of step {name!r}", limit=self._limit)
        except PayloadError as error:
            raise NonRetriableError(str(error)) from error
        return output

    def _use_name(self, name: str) -> None:
        check_name(name, what="step name")
        if name in self._used:
            self.duplicate = DuplicateStepError(
                f"run {self._run_id} used the step name {name!r} twice in one execution; "
                "give every step its own name (e.g. add the loop index: f'charge-{i}')"
            )
            raise self.duplicate
        self._used.add(name)

    def _check_kind(self, saved: StepRecord | None, name: str, kind: StepKind) -> None:
        if saved is not None and saved.kind != kind:
            raise NonRetriableError(
                f"run {self._run_id}: step {name!r} was saved as a {saved.kind!r} step and is "
                f"now used as a {kind!r} step; step names must mean the same thing on replay"
            )

    async def _start_child(
        self, step: StepRecord, child: Workflow[Any, Any] | str, input: Any, **options: Any
    ) -> StepRecord:
        """Save ``step`` with the child run it starts (with tracing on, in a PRODUCER span
        whose context the child keeps: its executions are under this step)."""
        child_name = child.name if isinstance(child, Workflow) else child
        with tracing.sending([child_name]) as sending:
            new_run = child_run(self._env, step.name, (child, input), options, sending.context)
            saved = await self._save(step, new_run)
            sending.sent([(saved.child_run_id or new_run.id, new_run.queue, new_run.priority)])
        return saved

    async def _call(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        timeout: float | None,
    ) -> Any:
        try:
            async with asyncio.timeout(timeout) as limit:
                if inspect.iscoroutinefunction(fn):
                    return await fn(*args, **kwargs)
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._env.threads, partial(fn, *args, **kwargs))
        except TimeoutError:
            if not limit.expired():
                raise
            raise StepTimeoutError(
                f"step {name!r} of run {self._run_id} ran over its timeout of {timeout} s"
            ) from None

    # -- suspension ---------------------------------------------------------------------

    @contextmanager
    def _active(self) -> Iterator[None]:
        """A step call in progress: the run is not suspended until none is."""
        self._busy += 1
        self._settled.clear()
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._settled.set()

    async def _suspend_until(
        self, child: str | None, wake_at: float | None, *, event: str | None = None
    ) -> NoReturn:
        """Wait durably; raises SuspendRun once the whole handler is waiting durably."""
        if self.suspension is not None:  # already unwinding (a wait in a finally block)
            raise SuspendRun
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waits.append((child, wake_at, event, future))
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._suspend_when_settled())
        self._busy -= 1  # a durable wait is not activity
        if self._busy == 0:
            self._settled.set()
        try:
            await future
        finally:
            self._busy += 1
        raise AssertionError("a durable wait only ends by SuspendRun")

    async def _suspend_when_settled(self) -> None:
        while True:
            # Let sibling coroutines (asyncio.gather) reach their own steps first.
            for _ in range(3):
                await asyncio.sleep(0)
            if self._busy == 0:
                break
            await self._settled.wait()
        times = [wake_at for _, wake_at, _, _ in self._waits if wake_at is not None]
        children = tuple(dict.fromkeys(child for child, _, _, _ in self._waits if child))
        events = tuple(dict.fromkeys(event for _, _, event, _ in self._waits if event))
        self.suspension = Suspension(min(times) if times else None, children, events)
        for _, _, _, future in self._waits:
            if not future.done():
                future.set_exception(SuspendRun())

    def _now(self) -> float:
        return self._env.settings.clock.now()

    @property
    def _limit(self) -> int:
        return self._env.settings.max_payload_bytes
