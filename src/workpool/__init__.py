"""workpool: durable functions for Python on SQLite or Redis."""

from workpool.app import Workpool
from workpool.client import RunHandle
from workpool.definitions import PreparedRun, Workflow
from workpool.engine.context import CancelRequestedError, RunContext
from workpool.errors import (
    BackendUnavailableError,
    ConfigurationError,
    CorruptRecordError,
    NonRetriableError,
    PayloadError,
    RunCanceledError,
    RunFailedError,
    RunNotFoundError,
    UnknownWorkflowError,
    WorkpoolError,
)
from workpool.models import (
    Canceled,
    Failure,
    Finished,
    OnComplete,
    Pending,
    Run,
    RunError,
    Running,
    RunResult,
    RunStatus,
    Success,
)
from workpool.options import RetryPolicy
from workpool.worker import Worker, WorkerOptions

__all__ = [
    # the pool and its definitions
    "Workpool",
    "Workflow",
    "PreparedRun",
    "RetryPolicy",
    "RunContext",
    # runs
    "RunHandle",
    "Run",
    "RunError",
    "RunStatus",
    "Pending",
    "Running",
    "Finished",
    "RunResult",
    "Success",
    "Failure",
    "Canceled",
    "OnComplete",
    # workers
    "Worker",
    "WorkerOptions",
    # errors
    "WorkpoolError",
    "ConfigurationError",
    "BackendUnavailableError",
    "PayloadError",
    "UnknownWorkflowError",
    "RunNotFoundError",
    "CorruptRecordError",
    "NonRetriableError",
    "RunFailedError",
    "RunCanceledError",
    "CancelRequestedError",
]
