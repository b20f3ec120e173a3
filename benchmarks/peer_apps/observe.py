"""What a peer's task does besides its work: note when it started, for the harness.

workpool stores when each run started and finished; the peers store nothing we could
read back, so their task body calls ``observe(x)`` as it starts: a clock read, a lock
and an append. ``$BENCH_PEER_OUT`` is a directory; every worker process that ran jobs
writes ``seen-<pid>.json`` there (``starts``: each job's start time, ``delays``: for
jobs whose ``x`` is an enqueue time, start minus ``x``) from a thread of its own, once
it has been quiet for ``QUIET_SECONDS`` after new jobs, so nothing is written while
jobs arrive:

- drain: ``x`` is 0; the harness merges the processes' start times;
- latency: ``x`` is the time.time() at which the client enqueued the job;
- a job with ``x < 0`` is a probe: it only creates ``ready-<pid>`` (the worker is up)
  and is not counted.

The clients the harness drives (``Client``) live here too, beside the task they feed.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

QUIET_SECONDS = 0.1
"""A worker writes what it saw once no job has started for this long."""
CALLERS = 100
"""Concurrent callers of ``Client.enqueue_concurrently``."""
IO_SECONDS = 0.01
"""How long the I/O-bound task sleeps (as ``io_sleep`` in ``benchmarks.app``)."""

_lock = threading.Lock()
_starts: list[float] = []
_delays: list[float] = []
_writer_pid = [0]
"""The process whose writer thread runs (a forked child starts its own)."""


def observe(x: float) -> None:
    """Note that a job started now (see the module's docstring)."""
    now = time.time()
    out = os.environ.get("BENCH_PEER_OUT")
    if out is None:
        return
    if x < 0:
        Path(out, f"ready-{os.getpid()}").write_text("ready")
        return
    with _lock:
        if _writer_pid[0] != os.getpid():
            _starts.clear()
            _delays.clear()
            _writer_pid[0] = os.getpid()
            threading.Thread(target=_write_when_quiet, args=(Path(out),), daemon=True).start()
        _starts.append(now)
        if x > 0:
            _delays.append(now - x)


def _write_when_quiet(out: Path) -> None:
    written = 0
    target = out / f"seen-{os.getpid()}.json"
    while True:
        time.sleep(QUIET_SECONDS / 2)
        with _lock:
            count = len(_starts)
            if count == written or time.time() - _starts[-1] < QUIET_SECONDS:
                continue
            text = json.dumps({"starts": _starts, "delays": _delays})
        partial = target.with_suffix(".partial")
        partial.write_text(text)
        partial.rename(target)
        written = count


class Client(Protocol):
    """A subject's client in the harness process."""

    async def enqueue(self, x: float) -> None:
        """Enqueue one job with argument ``x`` and wait until it is stored."""
        ...

    async def enqueue_concurrently(self, xs: Sequence[float]) -> None:
        """Enqueue one job per ``x`` from ``CALLERS`` concurrent callers."""
        ...

    async def close(self) -> None: ...


class SyncClient:
    """A peer whose client is synchronous: ``send(x)`` enqueues, blocking the loop.

    Its concurrent callers are ``CALLERS`` threads, each sending its share of the jobs
    one after another (a threaded web server's request threads): a sync client has no
    other way to be called concurrently.
    """

    def __init__(self, send: Callable[[float], Any], close: Callable[[], Any] = lambda: None):
        self.send = send
        self._close = close

    async def enqueue(self, x: float) -> None:
        self.send(x)

    async def enqueue_concurrently(self, xs: Sequence[float]) -> None:
        errors: list[BaseException] = []

        def caller(share: Sequence[float]) -> None:
            try:
                for x in share:
                    self.send(x)
            except BaseException as error:
                errors.append(error)

        threads = [
            threading.Thread(target=caller, args=(xs[start::CALLERS],))
            for start in range(min(CALLERS, len(xs)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    async def close(self) -> None:
        self._close()


class AsyncClient:
    """A peer whose client is async: ``await send(x)`` enqueues; its concurrent callers
    are rounds of ``CALLERS`` calls under ``asyncio.gather``, as B1's."""

    def __init__(
        self, send: Callable[[float], Awaitable[Any]], close: Callable[[], Awaitable[Any]]
    ) -> None:
        self.send = send
        self._close = close

    async def enqueue(self, x: float) -> None:
        await self.send(x)

    async def enqueue_concurrently(self, xs: Sequence[float]) -> None:
        for first in range(0, len(xs), CALLERS):
            await asyncio.gather(*(self.send(x) for x in xs[first : first + CALLERS]))

    async def close(self) -> None:
        await self._close()
