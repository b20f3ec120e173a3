"""Worker processes for the multi-process tests, and the lines their runs log."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Workers:
    """Starts worker processes of ``process_app`` against one backend; kills them at exit."""

    def __init__(self, url: str, log_path: Path) -> None:
        self.url = url
        self.log_path = log_path
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        *extra: str,
        app: str = "tests.integration.process_app:pool",
        stderr: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start a worker process of ``app``; its log lines go to ``stderr`` if given,
        else to the file ``errors()`` reads."""
        env = {**os.environ, "WORKPOOL_URL": self.url, "WORKPOOL_TEST_LOG": str(self.log_path)}
        command = [sys.executable, "-m", "workpool", "worker", app]
        # Their failures log WARNINGs by design: keep them out of the test output, in a
        # file that a failed assertion can show (``errors``).
        with contextlib.ExitStack() as files:
            errors = files.enter_context((stderr or self.errors_path).open("ab"))
            process = subprocess.Popen(
                [*command, "--log-level", "WARNING", *extra],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
        self.processes.append(process)
        return process

    @property
    def errors_path(self) -> Path:
        """Where the processes started without a ``stderr`` of their own write theirs."""
        return self.log_path.with_name(self.log_path.name + ".stderr")

    def errors(self) -> str:
        """What those processes wrote to stderr so far (WARNING and above, tracebacks)."""
        if not self.errors_path.exists():
            return ""
        return self.errors_path.read_text(errors="replace")

    def lines(self, kind: str) -> list[list[str]]:
        if not self.log_path.exists():
            return []
        rows = [line.split() for line in self.log_path.read_text().splitlines()]
        return [row[1:] for row in rows if row and row[0] == kind]

    async def wait_for_line(self, kind: str, run_id: str, count: int = 1) -> None:
        for _ in range(400):
            if sum(1 for row in self.lines(kind) if row[0] == run_id) >= count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"no {kind!r} line for run {run_id} within 20 s")

    def stop_all(self) -> None:
        """Kill every process started, and the worker processes of a supervisor."""
        for process in self.processes:
            children = children_of(process.pid)
            if process.poll() is None:
                process.kill()
            process.wait()
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)


def children_of(pid: int) -> set[int]:
    """The live child processes of ``pid`` (from /proc: Linux)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            state, parent = stat.read_text().rpartition(")")[2].split()[:2]
            if int(parent) == pid and state != "Z":
                found.add(int(stat.parent.name))
    return found


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (from /proc: Linux)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state == "T"


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (from /proc: Linux)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
