"""Runs claimed ahead of free slots, so the next claim's round trip overlaps the runs
before it instead of following them."""

from __future__ import annotations

from collections import deque

from workpool.backends.base import ClaimedRun

MARGIN = 4.0
"""Hold ahead twice the runs expected to start during one claim's round trip."""
SMOOTHING = 0.3
"""Weight of the newest sample in the moving averages of start rate and round trip."""
MAX_HOLD_SECONDS = 1.0
"""A run held ahead this long (or a quarter of the lease, if less) is handed back."""


class ClaimAhead:
    """The runs a worker claimed before it had slots for them, and how many to hold.

    A worker that claims only when slots are free leaves them empty for a round trip
    after each batch; short runs then drain at the speed of claims, not of slots. So
    while a queue has a backlog (the last claim came back full) the worker holds
    ahead about as many runs as its slots start during one claim's round trip. With
    long runs that is none, so runs are not hoarded while another worker is idle: a
    held run starts within a round trip or two. One that waits longer (a slow run
    came after fast ones) is handed back after ``max_hold`` for any worker to take.
    """

    def __init__(self, limit: int, lease_seconds: float) -> None:
        self._limit = limit
        self.max_hold = min(MAX_HOLD_SECONDS, lease_seconds / 4)
        """Seconds a run may be held before it is handed back."""
        self._held: deque[tuple[ClaimedRun, float, float]] = deque()
        self._start_rate = 0.0
        self._round_trip = 0.0
        self._backlog = False
        self._last_claim: tuple[float, int] | None = None

    def __len__(self) -> int:
        return len(self._held)

    def wanted(self) -> int:
        """How many more runs to claim ahead now."""
        if not self._backlog:
            return 0
        target = min(self._limit, int(self._start_rate * self._round_trip * MARGIN))
        if len(self._held) > target // 2:
            return 0  # refill in batches: a claim costs about the same for 1 run or 20
        return target - len(self._held)

    def claim_sent(self, slots_freed: int, now: float) -> None:
        """Note a claim sent at ``now`` (monotonic), ``slots_freed`` being the worker's
        count of slots freed so far."""
        if self._last_claim is not None:
            since, freed_before = self._last_claim
            if now > since:
                self._start_rate = _smooth(
                    self._start_rate, (slots_freed - freed_before) / (now - since)
                )
        self._last_claim = (now, slots_freed)

    def claim_returned(
        self, sent_at: float, asked: int, runs: list[ClaimedRun], now: float
    ) -> None:
        """Hold the runs of a claim sent at ``sent_at`` that asked for ``asked`` and
        returned at ``now`` (monotonic); a claim that came back short means no backlog:
        hold none ahead."""
        self._round_trip = _smooth(self._round_trip, now - sent_at)
        self._backlog = len(runs) >= asked
        self._held.extend((run, sent_at, now) for run in runs)

    def take(self) -> tuple[ClaimedRun, float] | None:
        """The oldest held run and when its claim was sent, or None."""
        if not self._held:
            return None
        run, sent_at, _ = self._held.popleft()
        return run, sent_at

    def hand_back_at(self) -> float | None:
        """The monotonic time the oldest held run is due to be handed back, or None."""
        return self._held[0][2] + self.max_hold if self._held else None

    def take_all(self) -> list[ClaimedRun]:
        """Every held run (to hand back); holds none ahead until a claim comes back full."""
        runs = [run for run, _, _ in self._held]
        self._held.clear()
        self._backlog = False
        return runs


def _smooth(average: float, sample: float) -> float:
    return sample if average == 0.0 else average + SMOOTHING * (sample - average)
