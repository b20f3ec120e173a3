"""What the peers' no-op task does besides returning its input: note when it ran.

workpool stores when each run started and finished; the peers store nothing we could
read back, so their task body calls ``observe(x)``, which costs a clock read, a lock and
a counter. The worker process writes what it saw to ``$BENCH_PEER_OUT`` once it has run
``$BENCH_PEER_EXPECT`` jobs:

- drain: ``x`` is 0; the file holds the first and last start times (time.time());
- latency: ``x`` is the time.time() at which the client enqueued the job; the file
  holds every job's enqueue-to-start delay. A job with ``x < 0`` is a probe: it only
  creates ``$BENCH_PEER_OUT.ready`` (the worker is up) and is not counted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

_lock = threading.Lock()
_delays: list[float] = []
_first: list[float] = []
_count = [0]


class Client(Protocol):
    """A peer's client in the harness process."""

    async def enqueue(self, x: float) -> None:
        """Enqueue one no-op job with argument ``x``, one at a time."""
        ...

    async def close(self) -> None: ...


class SyncClient:
    """A peer whose client is synchronous: ``send(x)`` enqueues, blocking the loop."""

    def __init__(self, send: Callable[[float], Any]) -> None:
        self.send = send

    async def enqueue(self, x: float) -> None:
        self.send(x)

    async def close(self) -> None:
        return None


def observe(x: float) -> None:
    """Count this job; write the file when the expected number have run."""
    now = time.time()
    out = os.environ.get("BENCH_PEER_OUT")
    if out is None:
        return
    if x < 0:
        Path(out + ".ready").write_text("ready")
        return
    expect = int(os.environ["BENCH_PEER_EXPECT"])
    with _lock:
        _count[0] += 1
        if not _first:
            _first.append(now)
        if x > 0:
            _delays.append(now - x)
        if _count[0] != expect:
            return
        payload = {"first": _first[0], "last": time.time(), "count": expect, "delays": _delays}
    partial = Path(out + ".partial")
    partial.write_text(json.dumps(payload))
    partial.rename(out)
