"""What a child made by ``os.fork()`` must not touch of what its parent had open.

A forked child (gunicorn ``--preload``, multiprocessing's fork start method, prefork
servers) gets a copy of the parent's memory and descriptors but only the thread that
forked. The parent's connections are still the parent's: a child that used them would
mix its replies with the parent's, and one that closed them could close them for the
parent too. So objects holding connections register here (``on_fork``) and:

- ``before_fork()`` runs in the parent just before the fork (e.g. the SQLite thread
  waits between transactions, so that no SQLite lock is copied held);
- ``after_fork(in_child=False)`` runs in the parent after it, ``after_fork(in_child=True)``
  in the child, which starts afresh: what it must keep but never use goes to
  ``INHERITED``, so that no finalizer runs on it while the child lives.

One ``os.register_at_fork`` hook serves every object (it has no undo); the objects are
held weakly. It must run before ``concurrent.futures.thread``'s own hook, which takes
the lock every executor's ``submit`` needs until the fork is done (``before_fork`` may
submit to an executor): hooks run in the reverse order of registration, so that module
is imported, and its hook registered, before ours.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (registers its fork hook before ours)
import os
import selectors
import threading
import weakref
from typing import Protocol

INHERITED: list[object] = []
"""What a forked child inherited from its parent and must never use, close or finalize."""


class ForkAware(Protocol):
    def before_fork(self) -> None:
        """In the parent, just before ``os.fork()``."""

    def after_fork(self, *, in_child: bool) -> None:
        """In the parent and in the child, just after ``os.fork()``."""


_registered: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_lock = threading.Lock()
_hooked = False


def on_fork(item: ForkAware) -> None:
    """Call ``item``'s fork methods at every ``os.fork()`` while ``item`` lives."""
    global _hooked
    with _lock:
        if not _hooked:
            os.register_at_fork(
                before=_before,
                after_in_parent=_after_in_parent,
                after_in_child=_after_in_child,
            )
            _hooked = True
        _registered.add(item)


_forking: list[ForkAware] = []
"""The objects whose ``before_fork`` ran: they get ``after_fork``."""


_one_fork_at_a_time = threading.Lock()
"""Held from ``before`` to ``after``: two threads forking at once take turns."""


def _before() -> None:
    _one_fork_at_a_time.acquire()
    with _lock:
        _forking[:] = list(_registered)
    for item in _forking:
        item.before_fork()


def _after_in_parent() -> None:
    try:
        for item in _forking:
            item.after_fork(in_child=False)
    finally:
        _forking.clear()
        _one_fork_at_a_time.release()


def _after_in_child() -> None:
    global _lock, _one_fork_at_a_time
    _lock = threading.Lock()  # other threads may have held them at the fork
    _one_fork_at_a_time = threading.Lock()
    try:
        for item in _forking:
            item.after_fork(in_child=True)
    finally:
        _forking.clear()


def disown_loop(loop: asyncio.AbstractEventLoop) -> None:
    """In a forked child, point the descriptors of a parent's loop at ``/dev/null``.

    For a loop no thread of the child runs. The child holds copies of that loop's
    descriptors: its sockets, which would keep the parent's connections open after the
    parent closes them, and its epoll set, which is the same kernel object as the
    parent's, so the child unregistering anything (a finalizer closing a transport)
    would deafen the parent's loop, and the child writing to its wake-up pipe would wake
    it for nothing. ``dup2`` keeps the numbers taken, so later finalizers act on
    ``/dev/null`` and fail quietly, and nothing is sent on the parent's sockets (not
    even a TLS close).
    """
    selector = getattr(loop, "_selector", None)  # selector loops only (the default)
    if not isinstance(selector, selectors.BaseSelector):
        return
    descriptors = [key.fd for key in selector.get_map().values()]
    own = getattr(selector, "fileno", None)
    if own is not None:
        descriptors.append(own())
    waker = getattr(loop, "_csock", None)  # the write end of its wake-up pipe
    if waker is not None:
        descriptors.append(waker.fileno())
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for descriptor in descriptors:
            if descriptor >= 0:
                os.dup2(null, descriptor)
    finally:
        os.close(null)
