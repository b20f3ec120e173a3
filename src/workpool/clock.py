"""Time as a dependency: the system clock, and a manual clock for tests."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time in seconds since the epoch."""

    def now(self) -> float:
        """Return the current time."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> float:
        """Return ``time.time()``."""
        return time.time()


class ManualClock:
    """A clock that moves only when told to; for tests of leases and schedules."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        """Return the clock's current time."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self._now += seconds
