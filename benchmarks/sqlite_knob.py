"""A benchmark-only knob: SQLite's ``synchronous`` level, which workpool fixes at FULL.

workpool exposes no setting for it, and the benchmarks do not edit workpool. Instead
this wraps ``workpool.backends.sqlite.connection.open_connection`` (the function each
SQLite backend opens its connection with) so that every connection opened in this
process afterwards also runs ``PRAGMA synchronous = <level>``. Worker processes get it
through ``$WORKPOOL_BENCH_SQLITE_SYNCHRONOUS`` (read when ``benchmarks.app`` is
imported) and append ``<pid> <level>`` to ``$WORKPOOL_BENCH_SQLITE_KNOB_LOG`` for each
connection, so the harness can check the knob really took effect in every process.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

LEVEL_VARIABLE = "WORKPOOL_BENCH_SQLITE_SYNCHRONOUS"
LOG_VARIABLE = "WORKPOOL_BENCH_SQLITE_KNOB_LOG"
LEVELS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
OPENER = "open_connection"
"""The function of ``workpool.backends.sqlite.connection`` that is wrapped."""

Opener = Callable[[Path], sqlite3.Connection]


def _install(level: str, log_path: str | None) -> Opener:
    """Wrap the opener; return the original (to restore it)."""
    if level not in LEVELS:
        raise ValueError(f"unknown SQLite synchronous level {level!r}")
    from workpool.backends.sqlite import connection as module

    original: Opener = getattr(module, OPENER)

    def open_with_level(path: Path) -> sqlite3.Connection:
        opened = original(path)
        opened.execute(f"PRAGMA synchronous = {level}")
        if log_path is not None:
            with open(log_path, "a") as log:
                log.write(f"{os.getpid()} {level}\n")
        return opened

    setattr(module, OPENER, open_with_level)
    return original


def apply_from_environment(environ: Mapping[str, str]) -> None:
    """In a worker process: apply the level the harness asked for, if any."""
    level = environ.get(LEVEL_VARIABLE)
    if level:
        _install(level, environ.get(LOG_VARIABLE))


@contextmanager
def synchronous(level: str, log_path: Path) -> Iterator[dict[str, str]]:
    """In the harness: use ``level`` here and yield the environment for worker processes."""
    original = _install(level, str(log_path))
    try:
        yield {LEVEL_VARIABLE: level, LOG_VARIABLE: str(log_path)}
    finally:
        from workpool.backends.sqlite import connection as module

        setattr(module, OPENER, original)


def processes_with_level(log_path: Path, level: str) -> set[int]:
    """The pids that opened a connection with ``level`` (from the knob's log)."""
    if not log_path.exists():
        return set()
    pids = set()
    for line in log_path.read_text().splitlines():
        pid, _, logged = line.partition(" ")
        if logged == level:
            pids.add(int(pid))
    return pids
