"""The Backend protocol: every state transition of a run, each one atomic.

``Backend`` is the protocol every backend implements: the protocols of the concerns in
``contract/`` (read its package docstring first, then one module per concern), and
``close``. Every value the operations take and return is re-exported here, so
``from workpool.backends.base import NewRun`` is the one import callers need.
"""

from __future__ import annotations

from typing import Protocol

from workpool.backends.contract.batches import MAX_FAILED_IDS, Batches, BatchRecord, NewBatch
from workpool.backends.contract.control import (
    ACTS_ON,
    CancelResult,
    Control,
    QueueSettings,
    Rerun,
    RerunFromStep,
    RerunStatus,
    RunAction,
)
from workpool.backends.contract.enqueue import Enqueuing
from workpool.backends.contract.leases import (
    ClaimedRun,
    ClaimResult,
    Finish,
    FinishStatus,
    Lease,
    Leasing,
    RenewResult,
    SetAside,
)
from workpool.backends.contract.reads import (
    GateUsage,
    PairActivity,
    PairCounters,
    PeriodCounters,
    Reads,
    RunPage,
    StatsSnapshot,
)
from workpool.backends.contract.recovery import (
    BulkAction,
    BulkPage,
    FailureGroup,
    Recovery,
    RunFilter,
)
from workpool.backends.contract.runs import (
    ACTIVE_STATES,
    MAX_RANK_OFFSET,
    TERMINAL_STATES,
    CompletionHook,
    Enqueued,
    GateSpec,
    NewRun,
    RateLimitSpec,
    RunRecord,
    RunState,
)
from workpool.backends.contract.steps import (
    EventSent,
    EventValue,
    StepKind,
    StepRecord,
    Steps,
    StepStatus,
)
from workpool.backends.contract.ticks import (
    SKIPPED_TICKS_KEPT,
    TICK_OVERLAPS,
    CronTicks,
    NewTick,
    SkippedTickRecord,
    SkipReason,
    TickOverlap,
    TickStarted,
)
from workpool.backends.contract.workers import WorkerRecord, Workers, WorkflowInfo

__all__ = [
    "Backend",
    "RunState",
    "TERMINAL_STATES",
    "ACTIVE_STATES",
    "MAX_RANK_OFFSET",
    "MAX_FAILED_IDS",
    "FinishStatus",
    "StepKind",
    "StepStatus",
    "CancelResult",
    "EventSent",
    "EventValue",
    "CompletionHook",
    "GateSpec",
    "RateLimitSpec",
    "NewRun",
    "NewBatch",
    "BatchRecord",
    "Enqueued",
    "RunRecord",
    "RunPage",
    "PairActivity",
    "PairCounters",
    "PeriodCounters",
    "GateUsage",
    "WorkerRecord",
    "StatsSnapshot",
    "RerunStatus",
    "RerunFromStep",
    "Rerun",
    "RunAction",
    "ACTS_ON",
    "Lease",
    "ClaimedRun",
    "WorkflowInfo",
    "QueueSettings",
    "ClaimResult",
    "SetAside",
    "RenewResult",
    "Finish",
    "StepRecord",
    "NewTick",
    "TickOverlap",
    "TICK_OVERLAPS",
    "SkipReason",
    "SkippedTickRecord",
    "SKIPPED_TICKS_KEPT",
    "TickStarted",
    "BulkAction",
    "BulkPage",
    "FailureGroup",
    "RunFilter",
]


class Backend(
    Enqueuing, Leasing, Steps, Batches, Control, Recovery, Reads, Workers, CronTicks, Protocol
):
    """Storage and every state transition of runs. Implementations: sqlite, redis, postgres."""

    async def close(self) -> None:
        """Release connections and threads. The backend is unusable afterwards."""
        ...
