"""A benchmark-only knob: extra PRAGMAs on workpool's SQLite connections.

workpool fixes ``synchronous=FULL`` and exposes no setting for it, and the benchmarks do
not edit workpool. Instead this wraps ``workpool.backends.sqlite.connection.
open_connection`` (the function each SQLite backend opens its connection with), so that
every connection opened in this process afterwards also runs the given PRAGMAs. Worker
processes get them through ``$WORKPOOL_BENCH_SQLITE_PRAGMAS`` (``name=value,...``, read
when ``benchmarks.app`` is imported) and append ``<pid> <pragmas>`` to
``$WORKPOOL_BENCH_SQLITE_KNOB_LOG`` per connection, so the harness can check that the
knob took effect in every process.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

PRAGMAS_VARIABLE = "WORKPOOL_BENCH_SQLITE_PRAGMAS"
LOG_VARIABLE = "WORKPOOL_BENCH_SQLITE_KNOB_LOG"
ALLOWED = frozenset({"synchronous", "wal_autocheckpoint"})
VALUE = re.compile(r"^[A-Za-z0-9_]+$")
OPENER = "open_connection"
"""The function of ``workpool.backends.sqlite.connection`` that is wrapped."""

Opener = Callable[[Path], sqlite3.Connection]


def encode(pragmas: Mapping[str, str]) -> str:
    """``{"synchronous": "NORMAL"}`` -> ``"synchronous=NORMAL"`` (checked)."""
    for name, value in pragmas.items():
        if name not in ALLOWED or not VALUE.match(value):
            raise ValueError(f"PRAGMA {name}={value!r} is not allowed by the benchmark knob")
    return ",".join(f"{name}={value}" for name, value in pragmas.items())


def _install(text: str, log_path: str | None) -> Opener:
    """Wrap the opener so it also runs the PRAGMAs in ``text``; return the original."""
    pairs = [part.split("=", 1) for part in text.split(",") if part]
    encode(dict(pairs))  # validate
    from workpool.backends.sqlite import connection as module

    original: Opener = getattr(module, OPENER)

    def open_with_pragmas(path: Path) -> sqlite3.Connection:
        opened = original(path)
        for name, value in pairs:
            opened.execute(f"PRAGMA {name} = {value}")
        if log_path is not None:
            with open(log_path, "a") as log:
                log.write(f"{os.getpid()} {text}\n")
        return opened

    setattr(module, OPENER, open_with_pragmas)
    return original


def apply_from_environment(environ: Mapping[str, str]) -> None:
    """In a worker process: apply the PRAGMAs the harness asked for, if any."""
    text = environ.get(PRAGMAS_VARIABLE)
    if text:
        _install(text, environ.get(LOG_VARIABLE))


@contextmanager
def pragmas(settings: Mapping[str, str], log_path: Path) -> Iterator[dict[str, str]]:
    """In the harness: use ``settings`` here and yield the environment for workers."""
    text = encode(settings)
    original = _install(text, str(log_path))
    try:
        yield {PRAGMAS_VARIABLE: text, LOG_VARIABLE: str(log_path)}
    finally:
        from workpool.backends.sqlite import connection as module

        setattr(module, OPENER, original)


def processes_with(log_path: Path, settings: Mapping[str, str]) -> set[int]:
    """The pids that opened a connection with exactly these PRAGMAs (from the log)."""
    if not log_path.exists():
        return set()
    text = encode(settings)
    pids = set()
    for line in log_path.read_text().splitlines():
        pid, _, logged = line.partition(" ")
        if logged == text:
            pids.add(int(pid))
    return pids
