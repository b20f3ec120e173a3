"""What ``Workpool.stats`` reports: backlog, activity and recent outcomes of runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta

from workpool.backends.base import PairActivity, PairCounters, StatsSnapshot

MAX_WINDOW = timedelta(hours=24)
"""The longest window ``stats`` accepts: counters are kept per minute for this long."""


@dataclass(frozen=True, slots=True)
class Figures:
    """Runs now, and what happened to runs in the window.

    ``error_rate`` = (retries + failed) / executions; ``permanent_failure_rate`` =
    failed / completed; both None with nothing to divide by. ``oldest_pending_age``:
    how long the oldest of the runs workers would start next (each workflow's first, in
    claim order: with priorities, not a low-priority run kept waiting behind higher
    ones) has waited since it became available (runs waiting for a concurrency place
    or a rate limit are in ``pending`` but not here); None when there is none, and
    always None in the per-workflow breakdown (that order is kept per queue).
    """

    pending: int = 0
    """Queued plus scheduled runs."""
    unserved: int = 0
    """Pending runs whose workflow no live worker defines on their queue: they wait
    until a worker that defines it starts (see ``Stats.unserved``)."""
    queued: int = 0
    scheduled: int = 0
    running: int = 0
    suspended: int = 0
    needs_attention: int = 0
    """Runs stopped because their saved steps no longer fit their code (``needs_attention``)."""
    paused: int = 0
    """Runs an operator paused: never claimed until resumed (``paused``)."""
    oldest_pending_age: timedelta | None = None
    executions: int = 0
    """Attempts that ended in the window (a suspended attempt has not ended)."""
    completed: int = 0
    """Runs that ended for good: succeeded + failed + canceled."""
    succeeded: int = 0
    failed: int = 0
    """Runs that failed for good (no retry left, or not retriable)."""
    canceled: int = 0
    retries: int = 0
    """Attempts that ended with another one scheduled."""
    error_rate: float | None = None
    permanent_failure_rate: float | None = None
    average_run_time: timedelta | None = None
    """Mean duration of the attempts that ended in the window."""


@dataclass(frozen=True, slots=True)
class Stats:
    """``Workpool.stats``: the totals, and the same figures per queue and per workflow."""

    window: timedelta
    total: Figures
    by_queue: dict[str, Figures] = field(default_factory=dict)
    by_workflow: dict[str, Figures] = field(default_factory=dict)
    unserved: list[Unserved] = field(default_factory=list)
    """Each (queue, workflow) with pending runs that no live worker serves."""
    workers: int = 0
    """Live workers (each announces what it serves every few seconds)."""


@dataclass(frozen=True, slots=True)
class Unserved:
    """Pending runs of a workflow that no live worker defines on their queue."""

    queue: str
    workflow: str
    pending: int

    def describe(self) -> str:
        """One line for people: why these runs wait."""
        return (
            f"{self.pending} run(s) of workflow {self.workflow!r} on queue {self.queue!r} "
            f"waiting: no worker defines workflow {self.workflow!r} on that queue"
        )


def served_pairs(snapshot: StatsSnapshot) -> set[tuple[str, str]]:
    """The (queue, workflow) pairs some live worker of the snapshot serves."""
    return {
        (queue, workflow)
        for worker in snapshot.workers
        for queue in worker.queues
        for workflow in worker.workflows
    }


def summarize(
    snapshot: StatsSnapshot,
    now: float,
    window: timedelta,
    queue: str | None = None,
    workflow: str | None = None,
) -> Stats:
    """Add up a backend snapshot, keeping the pairs that match the filters."""

    def wanted(pair: PairActivity | PairCounters) -> bool:
        return (queue is None or pair.queue == queue) and (
            workflow is None or pair.workflow == workflow
        )

    activity = [pair for pair in snapshot.activity if wanted(pair)]
    counters = [pair for pair in snapshot.counters if wanted(pair)]
    queues = sorted({pair.queue for pair in activity} | {pair.queue for pair in counters})
    workflows = sorted({pair.workflow for pair in activity} | {pair.workflow for pair in counters})

    def age(names: Iterable[str]) -> timedelta | None:
        starts = [
            snapshot.oldest_claimable[name] for name in names if name in snapshot.oldest_claimable
        ]
        return timedelta(seconds=max(0.0, now - min(starts))) if starts else None

    by_queue = {
        name: _figures(
            [a for a in activity if a.queue == name],
            [c for c in counters if c.queue == name],
            age([name]) if workflow is None else None,
        )
        for name in queues
    }
    by_workflow = {
        name: _figures(
            [a for a in activity if a.workflow == name],
            [c for c in counters if c.workflow == name],
            None,
        )
        for name in workflows
    }
    total = _figures(activity, counters, age(queues) if workflow is None else None)
    served = served_pairs(snapshot)
    unserved = [
        Unserved(pair.queue, pair.workflow, pair.queued + pair.scheduled)
        for pair in activity
        if pair.queued + pair.scheduled and (pair.queue, pair.workflow) not in served
    ]
    by_queue = {name: _with_unserved(f, unserved, queue=name) for name, f in by_queue.items()}
    by_workflow = {
        name: _with_unserved(f, unserved, workflow=name) for name, f in by_workflow.items()
    }
    return Stats(
        window=window,
        total=_with_unserved(total, unserved),
        by_queue=by_queue,
        by_workflow=by_workflow,
        unserved=unserved,
        workers=len(snapshot.workers),
    )


def _with_unserved(
    figures: Figures,
    unserved: list[Unserved],
    *,
    queue: str | None = None,
    workflow: str | None = None,
) -> Figures:
    count = sum(
        item.pending
        for item in unserved
        if (queue is None or item.queue == queue)
        and (workflow is None or item.workflow == workflow)
    )
    return replace(figures, unserved=count)


def _figures(
    activity: list[PairActivity], counters: list[PairCounters], oldest: timedelta | None
) -> Figures:
    queued = sum(pair.queued for pair in activity)
    scheduled = sum(pair.scheduled for pair in activity)
    executions = sum(pair.executions for pair in counters)
    timed = sum(pair.timed for pair in counters)
    run_time = sum(pair.run_time for pair in counters)
    succeeded = sum(pair.succeeded for pair in counters)
    failed = sum(pair.failed for pair in counters)
    canceled = sum(pair.canceled for pair in counters)
    retries = sum(pair.retried for pair in counters)
    completed = succeeded + failed + canceled
    return Figures(
        pending=queued + scheduled,
        queued=queued,
        scheduled=scheduled,
        running=sum(pair.running for pair in activity),
        suspended=sum(pair.suspended for pair in activity),
        needs_attention=sum(pair.needs_attention for pair in activity),
        paused=sum(pair.paused for pair in activity),
        oldest_pending_age=oldest,
        executions=executions,
        completed=completed,
        succeeded=succeeded,
        failed=failed,
        canceled=canceled,
        retries=retries,
        error_rate=(retries + failed) / executions if executions else None,
        permanent_failure_rate=failed / completed if completed else None,
        average_run_time=timedelta(seconds=run_time / timed) if timed else None,
    )
