"""The ``*_sync`` methods' private event loop, in a daemon thread (the portal).

Synchronous code (Django and Flask views, scripts, sync handlers) has no event loop; the
portal runs the async API's coroutines on one of its own and blocks the caller until
they finish. Three rules make that safe wherever such code runs:

- On a thread that is running an event loop, a ``*_sync`` call raises
  ``SyncCallInEventLoopError`` at once: blocking there would freeze that loop (a
  worker's, past its leases) until the call returned.
- In a child made by ``os.fork()`` (gunicorn ``--preload``, multiprocessing, prefork
  servers), the portal starts afresh: the parent's loop thread does not exist there,
  and the parent's loop and connections are left untouched (see ``forks``).
- ``close()`` shuts the loop down as ``asyncio.run`` does, which closes every backend
  opened on it, then ends the thread. The next call starts a new portal.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from workpool.errors import SyncCallInEventLoopError
from workpool.forks import INHERITED, disown_loop, on_fork

ResultT = TypeVar("ResultT")
ParamsT = ParamSpec("ParamsT")


def refuse_in_event_loop(call: str, coroutine: Coroutine[Any, Any, Any] | None = None) -> None:
    """Raise SyncCallInEventLoopError if this thread runs an event loop.

    ``call`` names the async method to await instead, as the caller would write it
    (``"pool.get_run"``, ``"charge.run"``); ``coroutine``, if given, is closed unrun.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    if coroutine is not None:
        coroutine.close()
    raise SyncCallInEventLoopError(
        f"{call}_sync() was called from a running event loop, which it would block until "
        f"it returned; use `await {call}(...)` instead (from sync code inside async code, "
        "run it in a thread: `await asyncio.to_thread(...)`)"
    )


class Portal:
    """Runs coroutines to completion on its own loop, from any thread, blocking the caller.

    The loop and its thread start at the first call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        on_fork(self)

    def call(self, coroutine: Coroutine[Any, Any, ResultT], call: str) -> ResultT:
        """Run ``coroutine`` on the portal's loop and return its result.

        ``call`` names the async method the ``*_sync`` method stands for (see
        ``refuse_in_event_loop``).
        """
        refuse_in_event_loop(call, coroutine)
        try:
            loop = self._started()
        except BaseException:
            coroutine.close()
            raise
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def close(self) -> None:
        """Shut the loop down like ``asyncio.run`` (calls still in flight are cancelled,
        then its async generators are finalized: that closes each backend opened on
        it), then stop the loop and its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("the workpool portal cannot close itself from its own thread")
        try:
            asyncio.run_coroutine_threadsafe(_shut_down(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def before_fork(self) -> None:
        """Nothing to do (see ``after_fork``)."""

    def after_fork(self, *, in_child: bool) -> None:
        """In a forked child: leave the parent's loop alone (its thread is not there);
        the next call starts the child's own."""
        if not in_child:
            return
        if self._loop is not None:
            disown_loop(self._loop)
            INHERITED.append((self._loop, self._thread))
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._loop = self._thread = None

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="workpool-sync", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop


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
        return self.portal.call(method(self, *args, **kwargs), call)

    twin.__name__ = f"{method.__name__}_sync"
    twin.__qualname__ = f"{method.__qualname__}_sync"
    twin.__doc__ = f"``{method.__name__}`` for synchronous code."
    return twin
