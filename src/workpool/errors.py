"""Every exception workpool raises, under one root.

    WorkpoolError
    ├── ConfigurationError          bad URL, unknown scheme, bad option value
    ├── BackendUnavailableError     the backend cannot be reached
    ├── PayloadError                input or output is not JSON or is too large
    ├── UnknownWorkflowError        no workflow of that name is registered here
    ├── UnservedWorkflowError       a run waited too long for a worker defining its workflow
    ├── RunNotFoundError            no run with that id
    ├── BatchNotFoundError          no batch with that id
    ├── BatchClosedError            runs added to a batch that was closed
    ├── CorruptRecordError          a stored record cannot be read back
    ├── RunFailedError              RunHandle.result(): the run ended failed
    │   └── DeadlineExceededError   ... because it passed its whole-run deadline
    ├── RunCanceledError            RunHandle.result(), ctx.step.run_workflow(): canceled
    ├── StepTimeoutError            a step ran (or waited for its child) over its timeout
    ├── RunTimeoutError             an attempt executed longer than its run's timeout
    ├── ResultTimeoutError          RunHandle.result(timeout=): the run did not finish
    │                               in time (also a TimeoutError)
    ├── SyncCallInEventLoopError    a ``*_sync`` method called where an event loop runs
    └── NonRetriableError           raise it from a handler: fail now, no retry
        └── DuplicateStepError      one execution used a step name twice

Input validation errors are pydantic's own ``ValidationError``, raised unchanged
to the caller of ``run()``.
"""

from __future__ import annotations

from typing import Any


class WorkpoolError(Exception):
    """Base class of every error workpool raises."""


class ConfigurationError(WorkpoolError):
    """A URL or option is invalid; the message says which and how to fix it."""


class BackendUnavailableError(WorkpoolError):
    """The backend could not be reached; check the URL and that the server runs."""


class PayloadError(WorkpoolError):
    """A value could not be stored: it is not JSON-serializable or is too large."""


class UnknownWorkflowError(WorkpoolError):
    """No workflow of that name is registered with this pool."""


class UnservedWorkflowError(WorkpoolError):
    """Stored on a run failed because no live worker defined its workflow on its queue
    for ``Workpool(fail_unserved_after=...)``."""


class RunNotFoundError(WorkpoolError):
    """No run with that id exists (it may have been deleted by retention)."""


class BatchNotFoundError(WorkpoolError):
    """No batch with that id exists (it may have been deleted by retention after it
    completed)."""


class BatchClosedError(WorkpoolError):
    """Runs were added to a batch that is closed (made without ``open=True``, or
    ``close()``-d): nothing was stored. Add runs before closing it, or start a new batch."""


class CorruptRecordError(WorkpoolError):
    """A stored record could not be decoded; the message names the run and field."""


class NonRetriableError(WorkpoolError):
    """Raise from a handler to fail the run at once, without further attempts."""


class DuplicateStepError(NonRetriableError):
    """One execution of a run used the same step name twice; the run fails, not retried."""


class RunStateError(WorkpoolError):
    """The run is not in a state that allows the operation (e.g. retrying a run that
    has not failed); the message says which state it is in."""


class StepMismatchError(WorkpoolError):
    """A replay met saved steps that no longer fit the run's code (a step called with
    other arguments, or skipped before a later one); the run stops in
    ``needs_attention``, whatever the handler does with this error."""


class StepTimeoutError(WorkpoolError):
    """A step ran, or waited for its child run, longer than its ``timeout``."""


class RunTimeoutError(WorkpoolError):
    """An attempt executed longer than its ``timeout``; the worker ended it, and the
    run's retry policy decides what follows. The message gives the limit, the attempt
    and how long it ran."""


class ResultTimeoutError(WorkpoolError, TimeoutError):
    """``RunHandle.result(timeout=...)`` gave up waiting; the run goes on. A TimeoutError
    too. The message says what the run is doing: its state and, for a pending run, why
    it waits (``waiting``: the text of ``Workpool.waiting_reason``, or None)."""

    def __init__(self, message: str, run_id: str, waiting: str | None) -> None:
        self.run_id = run_id
        self.waiting = waiting
        super().__init__(message)


class SyncCallInEventLoopError(WorkpoolError, RuntimeError):
    """A ``*_sync`` method was called on a thread running an event loop, which it would
    have blocked; the message names the method to await instead."""


class RunFailedError(WorkpoolError):
    """The run ended ``failed``; ``error`` carries the stored error.

    ``ctx.step.run_workflow`` raises it when the child run failed.
    """

    def __init__(self, run_id: str, error: Any) -> None:
        self.run_id = run_id
        self.error = error
        super().__init__(f"run {run_id} failed: {error.type}: {error.message}")


class DeadlineExceededError(RunFailedError):
    """The run ended ``failed`` because its ``deadline`` passed (wherever it was: waiting,
    backing off, suspended or running); it is not retried. Stored as the error type
    ``DeadlineExceededError``."""


def failed_error(run_id: str, error: Any) -> RunFailedError:
    """The error a failed run raises: DeadlineExceededError for a run its deadline
    ended, else RunFailedError."""
    if getattr(error, "type", None) == DeadlineExceededError.__name__:
        return DeadlineExceededError(run_id, error)
    return RunFailedError(run_id, error)


class RunCanceledError(WorkpoolError):
    """The run ended ``canceled``; ``reason`` is the reason given to cancel, if any."""

    def __init__(self, run_id: str, reason: str | None) -> None:
        self.run_id = run_id
        self.reason = reason
        suffix = f": {reason}" if reason else ""
        super().__init__(f"run {run_id} was canceled{suffix}")
