"""RunContext: what a handler knows about the run it executes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workpool.backends.base import ClaimedRun
from workpool.definitions import PreparedRun
from workpool.engine.batching import add_to_own_batch
from workpool.engine.environment import StepEnvironment
from workpool.engine.publishing import Publisher
from workpool.engine.steps import Steps
from workpool.errors import ConfigurationError, WorkpoolError
from workpool.logs import RunLogger
from workpool.serialization import DEFAULT_MAX_PAYLOAD_BYTES, check_size, to_json


class CancelRequestedError(WorkpoolError):
    """Raised by ``ctx.raise_if_cancelled()`` once a cancel of the run was requested."""


@dataclass
class RunContext:
    """Passed as the first argument to every handler."""

    run_id: str
    workflow: str
    queue: str
    attempt: int
    """This attempt's number, from 1."""
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger]
    """Log through it (``ctx.logger.info(...)``): a worker gives a ``RunLogger``, whose
    records carry this run's ``run_id``, ``workflow``, ``queue`` and ``attempt``."""
    fencing_token: int = 0
    """Grows with every claim of the run: a worker that takes the run over after this
    one lost it has a larger one. Pass it to your own stores to refuse stale writes
    (e.g. ``UPDATE ... WHERE fence < :token``)."""
    batch_id: str | None = None
    """The batch the run belongs to (``Workpool.batch``), if any (see ``add_to_batch``)."""
    # A plain flag: set by the worker's loop, read by handler threads; assigning and
    # reading a bool is atomic in CPython, and a threading.Event per run costs ~5 us.
    _cancel_requested: bool = field(default=False, repr=False)
    _canceled_by: str | None = field(default=None, repr=False)
    """The trace context of the cancel that was requested, if it carried one."""
    _timed_out: bool = field(default=False, repr=False)
    _steps: Steps | None = field(default=None, repr=False)
    _publisher: Publisher | None = field(default=None, repr=False)
    # The latest progress (JSON text) and the one last stored: a new value is a new
    # object, so the worker compares identities and handler threads need no lock.
    _progress: str | None = field(default=None, repr=False)
    _progress_stored: str | None = field(default=None, repr=False)
    _max_progress_bytes: int = field(default=DEFAULT_MAX_PAYLOAD_BYTES, repr=False)
    _env: StepEnvironment | None = field(default=None, repr=False)

    @property
    def step(self) -> Steps:
        """Durable steps, child runs and sleeps of this run (async handlers only)."""
        if self._steps is None:
            raise ConfigurationError(
                f"ctx.step is only available in async handlers; make the handler of "
                f"workflow {self.workflow!r} an 'async def' (its steps may still be sync)"
            )
        return self._steps

    async def patched(self, change_id: str) -> bool:
        """Whether this run reaches this point on code with the change ``change_id``:
        False for a run that went past it on older code (see ``Steps.patched``)."""
        return await self.step.patched(change_id)

    @property
    def cancelled(self) -> bool:
        """True once a cancel of this run was requested or its time limit passed; sync
        handlers, which cannot be interrupted, should poll it and return."""
        return self._cancel_requested

    @property
    def timed_out(self) -> bool:
        """True once this attempt ran past its ``timeout``."""
        return self._timed_out

    async def set_progress(self, value: Any) -> None:
        """Report progress: any JSON value (within the pool's ``max_payload_bytes``),
        which callers read with ``handle.progress()``. Only the latest value is kept;
        it is stored with the worker's next lease renewal (``renew_every``, 2 s by
        default) or with the attempt's outcome, whichever comes first, so reporting
        costs no backend call of its own. Raises PayloadError for a value JSON cannot
        hold as it is."""
        self.set_progress_sync(value)

    def set_progress_sync(self, value: Any) -> None:
        """``set_progress`` for sync handlers (it does no I/O, so it never blocks)."""
        what = f"progress of run {self.run_id}"
        text = to_json(value, what=what)
        self._progress = check_size(text, what=what, limit=self._max_progress_bytes)

    async def set_event(self, key: str, value: Any) -> None:
        """Publish ``value`` (any JSON value, within the pool's ``max_payload_bytes``)
        under ``key``, for callers to read or wait for with ``handle.get_event(key)``:
        a status for a UI, an intermediate result. Stored at once (one backend call),
        replacing the key's earlier value; only the run's current lease holder writes
        (a worker that lost the run stops). Raises PayloadError for a value JSON cannot
        hold as it is."""
        await self._events().publish(key, value)

    def set_event_sync(self, key: str, value: Any) -> None:
        """``set_event`` for sync handlers: blocks the handler's thread until stored."""
        self._events().publish_sync(key, value)

    def _events(self) -> Publisher:
        if self._publisher is None:
            raise ConfigurationError(
                f"run {self.run_id}: ctx.set_event needs the context a worker hands to the "
                "handler; this one was made by hand"
            )
        return self._publisher

    async def add_to_batch(self, name: str, runs: Sequence[PreparedRun]) -> list[str]:
        """Add runs (from ``Workflow.prepare``) to this run's batch, in one operation: a
        run of a batch may add to it while it runs, even once the batch is closed (it
        completes only when these have ended too). ``name``, unique within the run like
        a step's, makes the add safe to repeat: each run without an idempotency key of
        its own gets one from (this run, ``name``, its position), so a retry or replay
        stores each run once. Returns the runs' ids. ConfigurationError if the run is in
        no batch; LeaseLost (nothing stored) if this worker's lease ran out, as for a
        step."""
        if self.batch_id is None or self._env is None:
            raise ConfigurationError(
                f"run {self.run_id} is in no batch: only runs stored by pool.batch(...) "
                "(or added to one) can add to their batch"
            )
        return await add_to_own_batch(self._env, self.batch_id, name, runs)

    def unstored_progress(self) -> str | None:
        """The latest progress as JSON text, unless it was stored (for the worker)."""
        progress = self._progress
        return None if progress is self._progress_stored else progress

    def progress_stored(self, progress: str) -> None:
        """The worker stored this progress (from ``unstored_progress``)."""
        self._progress_stored = progress

    def time_ran_out(self) -> None:
        """Mark the attempt over its time limit (called by the engine, not by handlers)."""
        self._timed_out = True
        self._cancel_requested = True

    def raise_if_cancelled(self) -> None:
        """Raise if a cancel was requested, so the run ends ``canceled``."""
        if self._cancel_requested:
            raise CancelRequestedError(f"run {self.run_id} was canceled")

    def request_cancel(self, canceled_by: str | None = None) -> None:
        """Mark the run cancelled (called by the worker, not by handlers); the
        execution's span links ``canceled_by`` (the cancel's trace context)."""
        self._canceled_by = canceled_by
        self._cancel_requested = True


def context_for(claimed: ClaimedRun, env: StepEnvironment, *, with_steps: bool) -> RunContext:
    """The context of one execution of a claimed run: its logger carries the run's
    fields, and ``ctx.step`` works over ``env`` when ``with_steps`` (async handlers)."""
    ctx = RunContext(
        run_id=claimed.lease.run_id,
        workflow=claimed.workflow,
        queue=claimed.queue,
        attempt=claimed.attempt,
        logger=RunLogger(claimed.lease.run_id, claimed.workflow, claimed.queue, claimed.attempt),
        fencing_token=claimed.fence,
        batch_id=claimed.batch_id,
        _max_progress_bytes=env.settings.max_payload_bytes,
        _publisher=Publisher(env, asyncio.get_running_loop()),
        _env=env,
    )
    if with_steps:
        ctx._steps = Steps(env)
    return ctx
