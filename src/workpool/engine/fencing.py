"""The local view of a run's lease: until when this worker may still act for the run.

The backend's lease is the truth, but a worker that is stalled (a long pause, a SIGSTOP,
a blocked event loop) cannot know that it expired meanwhile. So the worker keeps, per
run, the deadline of its last *confirmed* lease on the monotonic clock: the time the
claim or renewal that confirmed it was sent, plus the lease's length. Past it, another
worker may hold the run, so this one starts no step function, writes nothing, and
interrupts the handler.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class LocalLease:
    """The monotonic deadline of a run's last confirmed lease."""

    deadline: float
    """``time.monotonic()`` value after which the lease cannot be trusted."""

    def held(self) -> bool:
        """Whether the lease is still confirmed (the deadline has not passed)."""
        return time.monotonic() < self.deadline

    def remaining(self) -> float:
        """Seconds left until the deadline (negative once passed)."""
        return self.deadline - time.monotonic()

    def confirm(self, sent_at: float, lease_seconds: float) -> None:
        """A renewal sent at ``sent_at`` (monotonic) was confirmed: move the deadline."""
        self.deadline = max(self.deadline, sent_at + lease_seconds)
