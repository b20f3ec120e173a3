"""What one execution's steps work with (``StepEnvironment``), the signals that unwind a
handler (``SuspendRun``, ``LeaseLost``), and how its backend calls ride out an outage
(``ride_out``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TypeVar

from workpool.backends.base import Backend, Lease
from workpool.engine.fencing import LocalLease
from workpool.errors import BackendUnavailableError
from workpool.registry import Registry
from workpool.settings import Settings

OUTAGE_FIRST_PAUSE = 0.05
OUTAGE_LONGEST_PAUSE = 1.0
"""Seconds between tries of a step's backend call while the backend is unreachable."""
T = TypeVar("T")


class SuspendRun(BaseException):
    """Unwinds a handler whose run now waits durably; the worker suspends the run.

    A BaseException so that handlers' ``except Exception`` blocks let it through.
    """


class LeaseLost(BaseException):
    """A step could not be saved because the run's lease is gone."""


@dataclass(frozen=True, slots=True)
class Suspension:
    """What a suspended run waits for: any of these children to end, an event of any of
    these keys, or the time."""

    wake_at: float | None
    waiting_on: tuple[str, ...]
    events: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StepEnvironment:
    """What the steps of one execution need from the worker."""

    registry: Registry
    """The pool's workflows (children are built from them)."""
    settings: Settings
    """The pool's configuration (clock, payload limit, retry defaults)."""
    backend: Backend
    lease: Lease
    threads: Executor
    """Where sync step functions run."""
    has_steps: bool
    """The run has saved steps: load them before the first step (else start empty)."""
    local_lease: LocalLease | None = None
    """The worker's deadline for acting on the run: no step function starts and no step
    is saved after it (None: unfenced)."""


def check_lease(env: StepEnvironment, what: str) -> None:
    """Raise LeaseLost if the worker may no longer act on the run (``what``: the action)."""
    lease = env.local_lease
    if lease is not None and not lease.held():
        raise LeaseLost(f"run {env.lease.run_id}: lease not confirmed in time; did not {what}")


async def ride_out(env: StepEnvironment, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Call the backend; while it is unreachable, try again until the local lease would
    run out (the calls made this way are idempotent). Then the error propagates: an
    infrastructure failure, which uses no attempt (see ``execute``)."""
    delay = OUTAGE_FIRST_PAUSE
    while True:
        check_lease(env, what)
        try:
            return await call()
        except BackendUnavailableError:
            lease = env.local_lease
            if lease is None or lease.remaining() <= delay:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, OUTAGE_LONGEST_PAUSE)
