"""workpool: durable functions for Python on SQLite or Redis."""

from workpool.app import Workpool
from workpool.backends.base import QueueSettings, WorkerRecord
from workpool.batches import Batch
from workpool.cron import Cron
from workpool.definitions import PreparedRun, Workflow
from workpool.engine.context import CancelRequestedError, RunContext
from workpool.engine.steps import Steps
from workpool.errors import (
    BackendUnavailableError,
    BatchClosedError,
    BatchNotFoundError,
    ConfigurationError,
    CorruptRecordError,
    DeadlineExceededError,
    DuplicateStepError,
    NonRetriableError,
    PayloadError,
    ResultTimeoutError,
    RunCanceledError,
    RunFailedError,
    RunNotFoundError,
    RunStateError,
    RunTimeoutError,
    StepMismatchError,
    StepTimeoutError,
    SyncCallInEventLoopError,
    UnknownWorkflowError,
    UnservedWorkflowError,
    WorkpoolError,
)
from workpool.handles import RunHandle
from workpool.history import History, Outcomes, Series
from workpool.limits import LimitUsage
from workpool.models import (
    BatchStatus,
    Canceled,
    Failure,
    FailureGroup,
    Finished,
    NeedsAttention,
    OnBatchComplete,
    OnComplete,
    Pending,
    RegisteredWorkflow,
    Run,
    RunError,
    RunFilter,
    RunList,
    Running,
    RunResult,
    RunStatus,
    SkippedTick,
    Step,
    Success,
)
from workpool.options import Limit, RateLimit, RetryPolicy
from workpool.stats import Figures, Stats, Unserved
from workpool.worker import Worker, WorkerOptions

__all__ = [
    # the pool and its definitions
    "Workpool",
    "Workflow",
    "PreparedRun",
    "RetryPolicy",
    "Limit",
    "LimitUsage",
    "RateLimit",
    "Cron",
    "QueueSettings",
    "RunContext",
    "Steps",
    # runs
    "RunHandle",
    "Run",
    "RunError",
    "RunStatus",
    "NeedsAttention",
    "Pending",
    "Running",
    "Finished",
    "RunResult",
    "Success",
    "Failure",
    "Canceled",
    "OnComplete",
    "Step",
    "RunFilter",
    "FailureGroup",
    # batches
    "Batch",
    "BatchStatus",
    "OnBatchComplete",
    "RunList",
    "RegisteredWorkflow",
    "SkippedTick",
    "Stats",
    "Figures",
    "History",
    "Series",
    "Outcomes",
    "Unserved",
    # workers
    "Worker",
    "WorkerOptions",
    "WorkerRecord",
    # errors
    "WorkpoolError",
    "ConfigurationError",
    "BackendUnavailableError",
    "PayloadError",
    "UnknownWorkflowError",
    "UnservedWorkflowError",
    "RunNotFoundError",
    "RunStateError",
    "BatchNotFoundError",
    "BatchClosedError",
    "CorruptRecordError",
    "NonRetriableError",
    "RunFailedError",
    "RunCanceledError",
    "CancelRequestedError",
    "DeadlineExceededError",
    "DuplicateStepError",
    "ResultTimeoutError",
    "RunTimeoutError",
    "StepMismatchError",
    "StepTimeoutError",
    "SyncCallInEventLoopError",
]
