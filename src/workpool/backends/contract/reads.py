"""Reading runs for people and dashboards: one run, pages of runs, stats and counters.

Listing: every run is indexed by (queue, workflow, status) in run id order, and the
backend remembers every (queue, workflow) pair that has had a run. Run ids begin with
their creation time in milliseconds (see ``NewRun``), so id order is creation order:
``list_runs`` pages walk these indexes newest first, and ``get_stats`` reads the
pairs' active counts, so neither grows with the history size.

Counters: the operations that change a run's state also add to per-minute and per-hour
counters of the run's (queue, workflow), in the same atomic operation (see
``PairCounters`` for what counts where). A minute is ``floor(now / 60) * 60``, an hour
``floor(now / 3600) * 3600``; ``purge`` deletes minutes and hours older than it is told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from workpool.backends.contract.runs import RunRecord
from workpool.backends.contract.workers import WorkerRecord


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of ``list_runs``."""

    runs: list[RunRecord]
    cursor: str | None
    """Pass it back for the next page; None when this page was not full (no more)."""


@dataclass(frozen=True, slots=True)
class PairActivity:
    """How many runs of one (queue, workflow) are in each active state, now."""

    queue: str
    workflow: str
    scheduled: int
    queued: int
    """Queued runs, claimable or waiting for a place at a concurrency gate."""
    running: int
    suspended: int
    needs_attention: int = 0
    """Runs stopped because their saved steps no longer fit their code (not terminal)."""
    paused: int = 0
    """Runs an operator paused (``pause_run``): never claimed until resumed."""


@dataclass(frozen=True, slots=True)
class PairCounters:
    """What happened to runs of one (queue, workflow) in the minutes asked for.

    - ``executions``: attempts that ended: reported by ``finish`` with ``succeeded``,
      ``failed``, ``canceled`` or ``retry`` (not ``suspend``: the attempt goes on,
      even when a cancel request turns the suspend into ``canceled``), or reaped by
      ``claim`` after their lease expired.
    - ``timed``: those reported by ``finish``; ``run_time`` sums their ``now -
      started_at`` in seconds (a reaped attempt's duration is unknown).
    - ``succeeded``, ``failed``, ``canceled``: runs that reached that terminal state
      by any transition (a queued run canceled counts, though it never executed).
    - ``retried``: attempts that ended with the run scheduled or queued again for
      another one: ``finish`` with ``retry`` and lease-expiry requeues by ``claim``.
    """

    queue: str
    workflow: str
    executions: int = 0
    timed: int = 0
    run_time: float = 0.0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    retried: int = 0


@dataclass(frozen=True, slots=True)
class PeriodCounters:
    """The counters of one period, as ``get_counters`` returns them."""

    start: float
    """The period's start: ``floor(t / period) * period`` of the transitions it counts."""
    counters: list[PairCounters]
    """Every pair with a count in that period, sorted by (queue, workflow)."""


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """What ``get_stats`` returns."""

    activity: list[PairActivity]
    """Every (queue, workflow) pair that has had a run, sorted by (queue, workflow)."""
    counters: list[PairCounters]
    """Summed over the minutes asked for; only pairs with a count, sorted likewise."""
    oldest_claimable: dict[str, float]
    """Per queue with claimable runs (queued, not waiting at a gate): the smallest
    ``available_at`` among the first run, in claim order, of each of its (queue,
    workflow) pairs, so ``now - value`` is how long the work next in line has waited for a
    worker. Without priorities that is the queue's oldest claimable run; with them, a
    low-priority run kept waiting behind higher ones does not show here."""
    workers: list[WorkerRecord] = field(default_factory=list)
    """The live workers (unexpired at ``now``), by id."""


@dataclass(frozen=True, slots=True)
class GateUsage:
    """A gate as ``get_gates`` reads it."""

    gate: str
    admitted: int
    """Runs holding a place now (queued to be claimed, or running)."""
    waiting: int
    """Runs waiting at it (queued, not admitted). A run under several gates waits at one
    at a time: the first that was full when it was last examined."""


class Reads(Protocol):
    """Reads of runs and their counts; none writes."""

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Read one run, or None if there is no such run."""
        ...

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        """Up to ``limit`` runs matching every filter given, by id descending.

        With a ``cursor`` (the id of the last run of the previous page), only runs
        with a smaller id. The page's ``cursor`` is its last run's id if it holds
        ``limit`` runs, else None. Reads at most ``limit`` entries from each of the
        (queue, workflow, status) indexes the filters match: the cost of a page does
        not grow with the history size. Runs change state between pages; a run is
        listed where it was when its page was read.
        """
        ...

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        """Active counts per (queue, workflow), counters of the minutes from the one
        holding ``since`` to the one holding ``now``, and each queue's oldest claimable
        run. One read; its cost grows with the pairs and the minutes, not the history."""
        ...

    async def get_gates(self, prefix: str) -> list[GateUsage]:
        """Every gate whose id starts with ``prefix`` that has admitted or waiting runs,
        by id. One read; its cost grows with those gates and their waiting runs."""
        ...

    async def get_counters(self, since: float, now: float, period: int) -> list[PeriodCounters]:
        """The counters summed per period of ``period`` seconds, for each period from the
        one holding ``since`` to the one holding ``now`` that has a count, oldest first.

        A period of whole minutes that divides an hour (60, 300, 900...) sums the
        per-minute counters (``get_stats``' counters before they are summed); a period
        of whole hours sums the per-hour counters, which ``purge`` keeps longer. Other
        periods raise ValueError (see ``counter_rows``). One read; its cost grows with
        the pairs and the minute or hour rows in the range, not the history."""
        ...
