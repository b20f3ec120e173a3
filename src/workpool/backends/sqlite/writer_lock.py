"""The lock that orders a database's writers: ``flock`` on a file beside it.

SQLite's own write lock does not queue: a connection that finds it held sleeps in its
busy handler, in growing steps (1, 2, 5, 10 ... 100 ms), and tries again, so a waiter
learns late that the lock came free, and under steady load one process can lose every
race for long stretches. Every workpool transaction that writes first takes an
exclusive ``flock`` on ``<database>-lock``: a waiter blocks in the kernel, which wakes
it as the holder lets go, and SQLite's lock is then free (the holder committed before
letting go). Writers that do not take it (the ``sqlite3`` shell) still meet SQLite's
busy handler, as before.

The file holds nothing and stays after the last close: deleting a lock file another
process may have open would let two writers hold "the" lock at once. A lock is released
by the kernel when its holder dies, so a SIGKILL leaves nothing held. Where the file
cannot be opened (a read-only directory, a file system refusing locks) the backend
does without it: ``open`` returns None.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

SUFFIX = "-lock"
"""Added to the database file's name to name the lock file."""


class WriterLock:
    """An open lock file; ``acquire``/``release`` an exclusive ``flock`` on it."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    @classmethod
    def open(cls, database: Path) -> WriterLock | None:
        """The lock of ``database``, or None where it cannot be had (see the module)."""
        path = database.with_name(database.name + SUFFIX)
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return None
        lock = cls(descriptor)
        try:  # a file system that refuses flock fails here, not in the middle of a write
            lock.acquire(wait=False)
        except OSError:
            lock.close()
            return None
        lock.release()
        return lock

    def acquire(self, *, wait: bool = True) -> bool:
        """Take the lock (blocking until it is free if ``wait``); False if held elsewhere."""
        flags = fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(self._require(), flags)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        """Let go of the lock."""
        fcntl.flock(self._require(), fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file, which releases the lock if no other descriptor shares it: a
        forked child closes its copy without touching the parent's lock. Idempotent."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(descriptor)

    def _require(self) -> int:
        if self._descriptor is None:
            raise OSError("the writer lock is closed")
        return self._descriptor
