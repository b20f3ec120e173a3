"""WorkerOptions: how a worker claims, leases and shuts down."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from workpool.errors import ConfigurationError
from workpool.validation import MAX_TIMEOUT, check_count, describe_value


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """Settings of one worker process (or in-process worker)."""

    queues: tuple[str, ...] = ("default",)
    """Queues to take runs from, in priority order."""
    concurrency: int = 10
    """Runs executed at once by this worker (its slots)."""
    lease: timedelta = timedelta(seconds=20)
    """How long a claimed run stays ours without renewal; a dead worker's runs are
    taken by others this long after its last renewal."""
    renew_every: timedelta = timedelta(seconds=2)
    """How often leases are renewed, in one batch; also how soon a cancel is noticed."""
    shutdown_grace: timedelta = timedelta(seconds=30)
    """On stop, how long in-flight runs may finish before their leases are handed back."""
    max_lease_losses: int = 3
    """A run whose worker is lost this many times ends failed instead of retrying."""
    max_idle_wait: timedelta = timedelta(seconds=5)
    """Longest an idle worker blocks before it looks again (for expired leases)."""
    housekeeping_every: timedelta = timedelta(minutes=1)
    """How often the worker leading housekeeping logs the report and deletes finished
    runs past the pool's retention (see ``workpool.worker.housekeeping``)."""
    max_runs: int | None = None
    """Recycle the worker once it has started this many executions (a resumed run
    counts again): it claims no more, lets the runs it holds finish, and ``run()``
    returns (see ``Worker.request_recycle``). None (the default): no limit."""
    claim_ahead: bool = True
    """While a queue has a backlog, claim a few runs ahead of free slots so short runs
    drain at the speed of slots, not of claims (``workpool.worker.ahead``). False:
    claim only for free slots, so every start is the best run startable at that very
    moment (strict priority order under gates and rate limits), at the cost of a claim
    round trip between runs."""
    recycle_on_abandoned_thread: bool = False
    """Recycle the worker (``Worker.request_recycle``) once a sync handler's thread had
    to be abandoned (its time limit passed, its run was canceled or lost its lease):
    the process ends, and the thread with it, after handing its runs back. For a
    process something restarts: ``workpool worker --processes`` sets it."""

    def __post_init__(self) -> None:
        check_count(self.concurrency, what="concurrency", minimum=1)
        check_count(self.max_lease_losses, what="max_lease_losses", minimum=1)
        if self.max_runs is not None:
            check_count(self.max_runs, what="max_runs", minimum=1, none="no limit")
        if not self.queues or not all(self.queues):
            raise ConfigurationError("a worker needs at least one non-empty queue name")
        for name in DURATIONS:
            _check_duration(name, getattr(self, name))
        if self.renew_every >= self.lease:
            raise ConfigurationError(
                f"renew_every ({self.renew_every}) must be shorter than lease ({self.lease})"
            )
        if self.housekeeping_every <= timedelta(0):
            raise ConfigurationError("housekeeping_every must be positive")


DURATIONS = ("lease", "renew_every", "shutdown_grace", "max_idle_wait", "housekeeping_every")
LONGEST_DURATION = timedelta(seconds=MAX_TIMEOUT)
"""The longest of each of a worker's durations (about 31 years): a lease must end at a
time the store keeps, whenever it is taken."""


def _check_duration(name: str, value: object) -> None:
    if not isinstance(value, timedelta) or not timedelta(0) <= value <= LONGEST_DURATION:
        raise ConfigurationError(
            f"{name} must be a timedelta from 0 to {MAX_TIMEOUT:g} seconds, got "
            f"{describe_value(value)}"
        )
