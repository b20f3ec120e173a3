"""HandlerThreads: the threads sync handlers run in, and the ones left behind.

A thread cannot be interrupted. When a sync handler's run is stopped (its time limit,
a cancel, a lost lease, shutdown) the worker stops waiting for it and frees its slot,
but the thread runs on until the function returns: it is *abandoned*. A fixed-size
pool would then lend that thread's place to nobody, so a few stuck handlers would
stall every sync run after them. This executor starts a thread whenever none is idle
and lets idle threads end after a while, so abandoned threads never take the place
of live runs; it counts them, for logs and metrics.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

logger = logging.getLogger("workpool.worker")

P = ParamSpec("P")
T = TypeVar("T")

IDLE_SECONDS = 60.0
"""An idle thread ends after this long without work."""

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Thread:
    def __init__(self, owner: HandlerThreads, name: str) -> None:
        self.inbox: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._owner = owner
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                work = self.inbox.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self._owner._retire(self):
                    return
                continue  # work was handed to it as it timed out
            if work is None:
                return
            future, function, args, kwargs = work
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args, **kwargs))
                except BaseException as error:  # handed to whoever waits on the future
                    future.set_exception(error)
            del work, future, function, args, kwargs
            if not self._owner._rest(self):
                return


class HandlerThreads(Executor):
    """An executor with a thread per running call: idle threads are reused, and a new
    one is started when none is idle. ``abandon`` marks a call nobody waits for (and
    calls ``on_abandon`` with its description, on the caller's thread)."""

    def __init__(
        self,
        thread_name_prefix: str = "workpool-handler",
        on_abandon: Callable[[str], None] | None = None,
    ) -> None:
        self._prefix = thread_name_prefix
        self._on_abandon = on_abandon
        self._lock = threading.Lock()
        self._idle: list[_Thread] = []
        self._started = 0
        self._shut_down = False
        self._abandoned: set[Future[Any]] = set()

    @property
    def abandoned(self) -> int:
        """Calls given up on (``abandon``) whose thread has not returned yet."""
        with self._lock:
            return len(self._abandoned)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` on an idle thread, or on a new one."""
        future: Future[T] = Future()
        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot run handlers after the worker's threads shut down")
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self._started += 1
                worker = _Thread(self, f"{self._prefix}_{self._started}")
                worker.thread.start()
        worker.inbox.put((future, fn, args, kwargs))
        return future

    def abandon(self, future: Future[Any], what: str) -> None:
        """Nobody waits for ``future`` any more: cancel it if it has not started, else
        count its thread as abandoned until the call returns. ``what`` names the call
        in the log lines (e.g. "run 0192...")."""
        if future.cancel() or future.done():
            return
        with self._lock:
            self._abandoned.add(future)
            count = len(self._abandoned)
        logger.warning(
            "%s: its sync handler's thread runs on after the run was stopped (a thread "
            "cannot be interrupted); %d abandoned thread(s) in this process",
            what,
            count,
        )
        future.add_done_callback(lambda done: self._returned(done, what))
        if self._on_abandon is not None:
            self._on_abandon(what)

    def _returned(self, future: Future[Any], what: str) -> None:
        with self._lock:
            self._abandoned.discard(future)
        logger.info("%s: its abandoned handler thread returned", what)

    def _rest(self, worker: _Thread) -> bool:
        """A thread finished its work: keep it idle, unless shut down."""
        with self._lock:
            if self._shut_down:
                return False
            self._idle.append(worker)
            return True

    def _retire(self, worker: _Thread) -> bool:
        """An idle thread timed out: let it end, unless work was just handed to it."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """End idle threads; busy ones end when their call returns. Calls are not
        queued here, so ``cancel_futures`` has nothing to cancel."""
        with self._lock:
            self._shut_down = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.inbox.put(None)
        if wait:
            for worker in idle:
                worker.thread.join()
