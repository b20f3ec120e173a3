"""Run ids: 32 hex digits that begin with the creation time and sort in creation order.

An id is one 128-bit number: the creation time in milliseconds (48 bits, 12 hex digits)
followed by 80 bits that start at a random point in each new millisecond. Within one
process each id is greater than the one before it: a second id in the same millisecond
(or after the clock stepped back) is the previous one plus a small random step, carrying
into the time part if it must. So the ids of one process list in creation order, while
two processes (each starting from a random point of a 2**79 range) do not collide.
"""

from __future__ import annotations

import os
import threading

TAIL_BITS = 80
"""Bits after the time."""
START_BITS = TAIL_BITS - 1
"""A new millisecond starts in the lower half of the tail: room for 2**79 more ids."""
STEP_BITS = 20
"""The step between two ids of one millisecond is 1 to 2**20: ordered, not guessable."""


RANDOM_BUFFER_BYTES = 4096
"""Random bytes read from the OS at a time: one read serves 256 ids."""


class RunIds:
    """A generator of increasing run ids (thread-safe). ``workpool`` uses one per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0
        self._random = b""
        self._used = 0

    def new(self, now: float) -> str:
        """A fresh id for a run created at ``now`` (seconds since the epoch): greater than
        every id this generator made before, even if ``now`` went backwards."""
        with self._lock:
            if self._used == len(self._random):
                self._random, self._used = os.urandom(RANDOM_BUFFER_BYTES), 0
            bits = int.from_bytes(self._random[self._used : self._used + 16])
            self._used += 16
            fresh = (int(now * 1000) << TAIL_BITS) | (bits >> (128 - START_BITS))
            step = 1 + (bits & ((1 << STEP_BITS) - 1))
            value = self._last = max(fresh, self._last + step)
        return f"{value:032x}"

    def forget(self) -> None:
        """Start over (in a forked child: its parent goes on from the same state, and
        must not share its unused random bytes)."""
        self._lock = threading.Lock()
        self._last = 0
        self._random = b""
        self._used = 0


PROCESS_RUN_IDS = RunIds()
"""The ids of every pool in this process: one sequence, so they all keep creation order."""

if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=PROCESS_RUN_IDS.forget)
