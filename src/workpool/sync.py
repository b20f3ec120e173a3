"""The ``*_sync`` methods' private event loop (the portal), driven by its callers.

Synchronous code (Django and Flask views, scripts, sync handlers) has no event loop; the
portal runs the async API's coroutines on one of its own and blocks the caller until
they finish. The loop has no thread of its own: a caller runs it until its coroutine is
done (it *drives* it). A caller that comes while another thread drives hands its
coroutine to that loop and waits; when the driver's own call is done it stops, and a
waiting caller drives on. So one caller at a time pays no hand-off between threads (a
``*_sync`` call costs about what its ``await`` does), and concurrent callers share one
loop, hence one connection and one group commit (``workpool.coalescing``).

Three rules make that safe wherever such code runs:

- On a thread that is running an event loop, a ``*_sync`` call raises
  ``SyncCallInEventLoopError`` at once: blocking there would freeze that loop (a
  worker's, past its leases) until the call returned.
- In a child made by ``os.fork()`` (gunicorn ``--preload``, multiprocessing, prefork
  servers), the portal starts afresh: the parent's loop and connections are left
  untouched (see ``forks``).
- ``close()`` shuts the loop down as ``asyncio.run`` does, which closes every backend
  opened on it. The next call starts a new loop.

Between calls nobody runs the loop, so nothing happens on it: its connections wait, as
an idle connection does. A caller interrupted while it drives (``KeyboardInterrupt``)
leaves its coroutine to be finished by the next call (at exit, with no next call, it is
dropped quietly).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from workpool.errors import SyncCallInEventLoopError
from workpool.forks import INHERITED, disown_loop, on_fork

ResultT = TypeVar("ResultT")
ParamsT = ParamSpec("ParamsT")


def in_event_loop() -> bool:
    """Whether this thread runs an event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def refuse_in_event_loop(call: str, coroutine: Coroutine[Any, Any, Any] | None = None) -> None:
    """Raise SyncCallInEventLoopError if this thread runs an event loop.

    ``call`` names the async method to await instead, as the caller would write it
    (``"pool.get_run"``, ``"charge.run"``); ``coroutine``, if given, is closed unrun.
    """
    if not in_event_loop():
        return
    if coroutine is not None:
        coroutine.close()
    raise SyncCallInEventLoopError(
        f"{call}_sync() was called from a running event loop, which it would block until "
        f"it returned; use `await {call}(...)` instead (from sync code inside async code, "
        "run it in a thread: `await asyncio.to_thread(...)`)"
    )


def drive(coroutine: Coroutine[Any, Any, ResultT], call: str) -> ResultT:
    """Run ``coroutine`` to its end in this thread, without an event loop: it must never
    suspend (a ``*_sync`` call with ``connection=``, whose statements go to the caller's
    synchronous connection, finishes on its first step)."""
    refuse_in_event_loop(call, coroutine)
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: ResultT = done.value
        return result
    coroutine.close()
    raise RuntimeError(f"{call}_sync() waited on an event loop, which it runs without")


def call_sync(
    portal: Portal, coroutine: Coroutine[Any, Any, ResultT], call: str, connection: object
) -> ResultT:
    """A ``*_sync`` call: on the portal's loop, or with ``connection=`` (the caller's own
    transaction) driven in the caller's thread (see ``drive``)."""
    if connection is not None:
        return drive(coroutine, call)
    return portal.call(coroutine, call)


@dataclass(eq=False)
class _Loop:
    """The portal's loop and whether a thread drives it now."""

    loop: asyncio.AbstractEventLoop
    driven: bool = False


class Portal:
    """Runs coroutines to completion on a private loop, from any thread without a running
    loop, blocking the caller (see the module's docstring). The loop starts at the first
    call."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        """Guards ``_current`` and each loop's ``driven``; notified when a loop stops
        being driven and when a handed-over coroutine is done."""
        self._current: _Loop | None = None
        on_fork(self)

    def call(self, coroutine: Coroutine[Any, Any, ResultT], call: str) -> ResultT:
        """Run ``coroutine`` on the portal's loop and return its result.

        ``call`` names the async method the ``*_sync`` method stands for (see
        ``refuse_in_event_loop``).
        """
        refuse_in_event_loop(call, coroutine)
        with self._state:
            if self._current is None:
                self._current = _Loop(asyncio.new_event_loop())
            current = self._current
            drive = not current.driven
            current.driven = True
        if drive:
            return self._drive(current, coroutine)
        return self._await_handed(
            current, asyncio.run_coroutine_threadsafe(coroutine, current.loop)
        )

    def close(self) -> None:
        """Shut the loop down like ``asyncio.run`` (calls still in flight are cancelled,
        then its async generators are finalized: that closes each backend opened on
        it), then close it. A later call starts a new loop.

        From a thread that runs an event loop (an async test's teardown), a thread of
        its own shuts the portal's loop down, since this one cannot run it."""
        if in_event_loop():
            closer = threading.Thread(target=self.close, name="workpool-portal-close")
            closer.start()
            closer.join()
            return
        with self._state:
            current, self._current = self._current, None
            if current is None:
                return
            drive = not current.driven
            current.driven = True
        if drive:
            self._drive(current, _shut_down())
        else:
            self._await_handed(
                current, asyncio.run_coroutine_threadsafe(_shut_down(), current.loop)
            )
            with self._state:
                while current.driven:  # its driver stops once its own call is cancelled
                    self._state.wait()
        current.loop.close()

    def before_fork(self) -> None:
        """Nothing to do (see ``after_fork``)."""

    def after_fork(self, *, in_child: bool) -> None:
        """In a forked child: leave the parent's loop alone (the thread that may have
        driven it is not there); the next call starts the child's own."""
        if not in_child:
            return
        if self._current is not None:
            disown_loop(self._current.loop)
            INHERITED.append(self._current)
        self._state = threading.Condition()  # another thread may have held it at the fork
        self._current = None

    def _drive(self, current: _Loop, awaited: Awaitable[ResultT]) -> ResultT:
        """Run ``current``'s loop in this thread until ``awaited`` is done (this thread
        has marked it driven), then let a waiting caller drive it."""
        # As run_until_complete, less one loop turn: the task stops the loop itself as
        # it ends, where run_until_complete's done callback would run a turn later.
        stop = _Stop(current.loop)
        task = current.loop.create_task(_then_stop(awaited, stop))
        # Also as run_until_complete: a caller interrupted here (Ctrl-C) leaves the task
        # pending, for the next call to finish; if none comes, the interpreter's exit
        # drops it without "Task was destroyed but it is pending!".
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        try:
            current.loop.run_forever()
        finally:
            stop.armed = False  # interrupted: the task, finished later, stops no one's loop
            with self._state:
                current.driven = False
                self._state.notify_all()
        if not task.done():
            raise RuntimeError("the portal's loop stopped before its call was done")
        return task.result()

    def _await_handed(self, current: _Loop, handed: concurrent.futures.Future[ResultT]) -> ResultT:
        """Wait for a coroutine handed to ``current``'s loop while another thread drove
        it; drive the loop in its place if that thread stops first."""
        handed.add_done_callback(self._notify)
        with self._state:
            while not handed.done() and current.driven:
                self._state.wait()
            drive = not handed.done()
            current.driven = current.driven or drive
        if drive:
            return self._drive(current, asyncio.wrap_future(handed, loop=current.loop))
        return handed.result()

    def _notify(self, _: object) -> None:
        with self._state:
            self._state.notify_all()


@dataclass(eq=False)
class _Stop:
    """Stops a loop for the caller that drives it, while that caller still does."""

    loop: asyncio.AbstractEventLoop
    armed: bool = True


async def _then_stop(awaited: Awaitable[ResultT], stop: _Stop) -> ResultT:
    """Await ``awaited``, then stop the loop its driver runs until then (if it still
    does)."""
    try:
        return await awaited
    finally:
        if stop.armed:
            stop.loop.stop()


async def _shut_down() -> None:
    """What ``asyncio.run`` does before closing its loop: cancel the other tasks, then
    finalize the async generators begun on the loop."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class HasPortal(Protocol):
    """An object whose async methods have ``*_sync`` twins (see ``sync_twin``)."""

    @property
    def portal(self) -> Portal:
        """The loop thread its ``*_sync`` methods run on."""
        ...


OwnerT = TypeVar("OwnerT", bound=HasPortal)


def sync_twin(
    method: Callable[Concatenate[OwnerT, ParamsT], Coroutine[Any, Any, ResultT]], owner: str
) -> Callable[Concatenate[OwnerT, ParamsT], ResultT]:
    """The ``*_sync`` twin of an async method, written once for every method:
    ``get_run_sync = sync_twin(get_run, "pool")`` in the class body.

    The twin takes what the method takes (mypy checks callers against the method's own
    parameters; ``inspect.signature`` shows them too), runs it on the owner's portal
    and blocks until it returns. ``owner`` is how users name the object in the
    ``SyncCallInEventLoopError`` message (``"await pool.get_run(...)"``).
    """
    call = f"{owner}.{method.__name__}"

    @functools.wraps(method)
    def twin(self: OwnerT, /, *args: ParamsT.args, **kwargs: ParamsT.kwargs) -> ResultT:
        coroutine = method(self, *args, **kwargs)
        return call_sync(self.portal, coroutine, call, kwargs.get("connection"))

    twin.__name__ = f"{method.__name__}_sync"
    twin.__qualname__ = f"{method.__qualname__}_sync"
    twin.__doc__ = f"``{method.__name__}`` for synchronous code."
    return twin
