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
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from workpool import tracing
from workpool.backends.base import NewRun, StepKind, StepRecord
from workpool.definitions import RunOptions, Workflow
from workpool.engine.calls import call_step, result_json, step_duration, step_timeout
from workpool.engine.children import child_result, child_run
from workpool.engine.environment import (
    LeaseLost,
    StepEnvironment,
    check_lease,
    ride_out,
)
from workpool.engine.replay import PATCH_PREFIX, Replay, args_hash
from workpool.engine.suspending import Suspending
from workpool.errors import (
    DuplicateStepError,
    StepMismatchError,
    StepTimeoutError,
)
from workpool.serialization import error_json, from_json, to_json
from workpool.validation import check_name, timestamp_of

SLEEP_IN_SLOT_UNDER = 0.5
"""Seconds: a shorter sleep waits in the slot instead of suspending the run."""
REPLAYED = {"workpool.step.replayed": True}
"""The attribute of a step's span when the step returned its saved result."""


class Steps(Suspending):
    """The ``ctx.step`` API of one execution of a run (async handlers only)."""

    def __init__(self, env: StepEnvironment) -> None:
        self._env = env
        self._run_id = env.lease.run_id
        self._saved: dict[str, StepRecord] | None = None if env.has_steps else {}
        self._loading = asyncio.Lock()
        self._replay = Replay(self._run_id)
        super().__init__()

    @property
    def duplicate(self) -> DuplicateStepError | None:
        """Set when a step name was used twice: the run fails whatever the handler does."""
        return self._replay.duplicate

    @property
    def mismatch(self) -> StepMismatchError | None:
        """Set when the saved steps no longer fit the code: the run stops whatever the
        handler does (``needs_attention``)."""
        return self._replay.mismatch

    def check_end(self) -> None:
        """At the end of the execution: stop if a saved completed step was skipped."""
        if self._saved is not None and self.mismatch is None:
            self._replay.check_order(self._saved)

    def _before_suspend(self) -> None:
        with suppress(StepMismatchError):  # recorded in self.mismatch
            self.check_end()

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
        seconds = step_timeout(self._now(), name, timeout)
        position = self._replay.reach(name)
        called_with = args_hash(args, kwargs)
        with self._active(), tracing.step_span("run", name) as span:
            saved = (await self._load()).get(name)
            if saved is not None and saved.status == "succeeded":
                self._replay.replay(saved, "run", called_with)
                tracing.annotate(span, REPLAYED)
                return from_json(saved.output)
            await self._before_new(saved, "run")
            attempts = saved.attempts + 1 if saved is not None else 1
            tracing.annotate(span, {"workpool.step.attempt": attempts})
            started = self._now()
            check_lease(self._env, name)
            try:
                value = await call_step(self._env, name, partial(fn, *args, **kwargs), seconds)
                output = result_json(name, value, self._limit)
            except Exception as error:
                failed = StepRecord(
                    name,
                    "run",
                    "failed",
                    attempts,
                    started,
                    error=error_json(error),
                    finished_at=self._now(),
                    position=position,
                    args_hash=called_with,
                )
                await self._save(failed)
                raise
            done = StepRecord(
                name,
                "run",
                "succeeded",
                attempts,
                started,
                output=output,
                finished_at=self._now(),
                position=position,
                args_hash=called_with,
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
        seconds = step_timeout(self._now(), name, timeout)
        RunOptions(queue=queue)  # checks the queue name as run() would
        position = self._replay.reach(name)
        called_with = args_hash(child.name if isinstance(child, Workflow) else child, input)
        with self._active(), tracing.step_span("workflow", name) as span:
            saved = (await self._load()).get(name)
            if saved is not None and saved.status in ("waiting", "succeeded"):
                self._replay.replay(saved, "workflow", called_with)
                tracing.annotate(span, REPLAYED)
            else:
                await self._before_new(saved, "workflow")
                now = self._now()
                waiting = StepRecord(
                    name,
                    "workflow",
                    "waiting",
                    saved.attempts + 1 if saved else 1,
                    now,
                    wake_at=now + seconds if seconds is not None else None,
                    position=position,
                    args_hash=called_with,
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
        position = self._replay.reach(name)
        called_with = args_hash(child.name if isinstance(child, Workflow) else child, input)
        with self._active(), tracing.step_span("emit", name) as span:
            saved = (await self._load()).get(name)
            if saved is None or saved.child_run_id is None:
                await self._before_new(saved, "emit")
                now = self._now()
                emitted = StepRecord(
                    name,
                    "emit",
                    "succeeded",
                    1,
                    now,
                    finished_at=now,
                    position=position,
                    args_hash=called_with,
                )
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
                self._replay.replay(saved, "emit", called_with)
                tracing.annotate(span, REPLAYED)
            assert saved.child_run_id is not None
            return saved.child_run_id

    async def patched(self, change_id: str) -> bool:
        """Whether this run reaches this point on code with the change ``change_id``.

        True for a run that first reaches this call on code that has it; False for a
        run that went past this point on older code (it has saved steps this execution
        has not reached yet). The answer is saved as the step ``patched:<change_id>``,
        so every later replay of the run gets the same one.
        """
        check_name(change_id, what="change id")
        name = PATCH_PREFIX + change_id
        position = self._replay.reach(name)
        with self._active():
            saved = await self._load()
            marker = saved.get(name)
            if marker is not None:
                self._replay.replay(marker, "run", None)
                return bool(from_json(marker.output))
            for _ in range(3):  # let concurrent branches reach their saved steps first
                await asyncio.sleep(0)
            new = all(self._replay.reached(step) for step in saved)
            now = self._now()
            output = to_json(new, what=name)
            await self._save(
                StepRecord(
                    name, "run", "succeeded", 1, now, output, finished_at=now, position=position
                )
            )
            return new

    async def sleep(self, name: str, duration: timedelta | float) -> None:
        """Wait ``duration`` (seconds or timedelta) durably: a restart does not reset it.

        Waits of ``SLEEP_IN_SLOT_UNDER`` seconds or more suspend the run and free its slot.
        """
        seconds = step_duration(self._now(), name, "duration", duration, positive=False)
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
        seconds = step_timeout(self._now(), name, timeout)
        check_name(key, what=f"step {name!r}: event key")
        position = self._replay.reach(name)
        called_with = args_hash(key)
        with self._active():
            saved = (await self._load()).get(name)
            if saved is not None:
                self._replay.replay(saved, "event", called_with)
            else:
                await self._before_new(saved, "event")
            if saved is None or saved.status == "waiting":
                now = self._now()
                wake_at = None if seconds is None else now + seconds
                step = saved or StepRecord(
                    name,
                    "event",
                    "waiting",
                    1,
                    now,
                    wake_at=wake_at,
                    position=position,
                    args_hash=called_with,
                )
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

    # -- replay state -------------------------------------------------------------------

    async def _sleep(self, name: str, wake_at_from: Callable[[float], float]) -> None:
        position = self._replay.reach(name)
        with self._active():
            saved = (await self._load()).get(name)
            if saved is not None:
                self._replay.replay(saved, "sleep", None)
            else:
                await self._before_new(saved, "sleep")
                now = self._now()
                timer = StepRecord(
                    name,
                    "sleep",
                    "waiting",
                    1,
                    now,
                    wake_at=wake_at_from(now),
                    position=position,
                )
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

    async def _before_new(self, saved: StepRecord | None, kind: StepKind) -> None:
        """Before a step does something new (calls its function again, starts a child,
        saves a wait): stop if its saved record is of another kind, or if a saved
        completed step was skipped, once concurrent branches have had a turn to reach it."""
        if saved is not None and saved.kind != kind:
            self._replay.replay(saved, kind, None)
        assert self._saved is not None
        if self._replay.unreached(self._saved):
            for _ in range(3):
                await asyncio.sleep(0)
            self._replay.check_order(self._saved)

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

    def _now(self) -> float:
        return self._env.settings.clock.now()

    @property
    def _limit(self) -> int:
        return self._env.settings.max_payload_bytes
