"""What one execution's steps work with (``StepEnvironment``), and the signals that
unwind a handler (``SuspendRun``, ``LeaseLost``)."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

from workpool.backends.base import Backend, Lease
from workpool.engine.fencing import LocalLease
from workpool.registry import Registry
from workpool.settings import Settings


class SuspendRun(BaseException):
    """Unwinds a handler whose run now waits durably; the worker suspends the run.

    A BaseException so that handlers' ``except Exception`` blocks let it through.
    """


class LeaseLost(BaseException):
    """A step could not be saved because the run's lease is gone."""


@dataclass(frozen=True, slots=True)
class Suspension:
    """What a suspended run waits for: any of these children to end, or the time."""

    wake_at: float | None
    waiting_on: tuple[str, ...]


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
