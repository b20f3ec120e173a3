"""The public API is exactly what __init__ exports."""

from __future__ import annotations

import workpool

EXPECTED = {
    "Workpool",
    "Workflow",
    "PreparedRun",
    "RetryPolicy",
    "RunContext",
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
    "RunFilter",
    "FailureGroup",
    "History",
    "Outcomes",
    "Series",
    "Batch",
    "BatchStatus",
    "OnBatchComplete",
    "BatchNotFoundError",
    "BatchClosedError",
    "Worker",
    "WorkerOptions",
    "WorkerRecord",
    "Unserved",
    "UnservedWorkflowError",
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
    "Steps",
    "Step",
    "DeadlineExceededError",
    "DuplicateStepError",
    "ResultTimeoutError",
    "RunTimeoutError",
    "StepMismatchError",
    "StepTimeoutError",
    "SyncCallInEventLoopError",
    "QueueSettings",
    "RegisteredWorkflow",
    "SkippedTick",
    "Cron",
    "RateLimit",
    "RunList",
    "RunStateError",
    "Stats",
    "Figures",
}


def test_exports_are_pinned() -> None:
    assert set(workpool.__all__) == EXPECTED
    assert len(workpool.__all__) == len(EXPECTED)


def test_every_export_exists_and_errors_share_one_root() -> None:
    for name in workpool.__all__:
        assert hasattr(workpool, name), name
    for name in EXPECTED:
        value = getattr(workpool, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, workpool.WorkpoolError), name
