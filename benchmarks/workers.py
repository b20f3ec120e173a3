"""Worker processes, started with the real CLI and stopped with SIGTERM."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import psutil

from benchmarks.stores import Target

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
_numbers = itertools.count(1)
"""Numbers the worker log files of one suite run."""


class BenchmarkError(Exception):
    """A workload cannot report honest figures: runs lost or failed, a worker died."""


class WorkerProcess:
    """``python -m workpool worker benchmarks.app:pool`` on one store."""

    def __init__(
        self,
        url: str,
        concurrency: int,
        log_path: Path,
        env: Mapping[str, str],
        args: Sequence[str] = (),
    ) -> None:
        self.log_path = log_path
        self.killed_on_purpose = False
        """It died of the SIGKILL a workload meant it to (``wait_killed``): not an error."""
        command = [
            sys.executable,
            "-m",
            "workpool",
            "worker",
            "benchmarks.app:pool",
            "--concurrency",
            str(concurrency),
            "--log-level",
            "WARNING",
            *args,
        ]
        environment = {**os.environ, **env, "WORKPOOL_URL": url}
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(
                command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT
            )
        self.process = psutil.Process(self.popen.pid)
        arguments = list(args)
        self.supervised = (
            int(arguments[arguments.index("--processes") + 1]) if "--processes" in arguments else 0
        )
        """With ``--processes N``: N, the worker processes of this supervisor; else 0."""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def serving(self) -> list[psutil.Process] | None:
        """The processes that run workers: this one, or a supervisor's children (None
        until all N are started)."""
        if not self.supervised:
            return [self.process]
        children: list[psutil.Process] = self.process.children()
        return children if len(children) == self.supervised else None

    def check_alive(self) -> None:
        """Raise BenchmarkError (with the end of its log) if the process has exited."""
        if self.popen.poll() is not None:
            raise BenchmarkError(
                f"worker process {self.pid} exited with code {self.popen.returncode}:\n"
                f"{self.log_tail()}"
            )

    def cpu_seconds(self) -> float:
        """User plus system CPU time consumed so far."""
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def rss_bytes(self) -> int:
        """Resident set size now."""
        return int(self.process.memory_info().rss)

    async def wait_killed(self, timeout: float) -> None:
        """Wait for the process to die of SIGKILL (sent by itself); raise otherwise."""
        deadline = time.monotonic() + timeout
        while self.popen.poll() is None:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"worker process {self.pid} still alive after {timeout} s")
            await asyncio.sleep(0.002)
        if self.popen.returncode != -signal.SIGKILL:
            raise BenchmarkError(
                f"worker process {self.pid} exited with code {self.popen.returncode}, "
                f"not killed by SIGKILL:\n{self.log_tail()}"
            )
        self.killed_on_purpose = True

    def stop(self) -> None:
        """SIGTERM, then wait for a clean exit; kill and raise if it does not come."""
        if self.killed_on_purpose:
            return
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            code = self.popen.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise BenchmarkError(
                f"worker process {self.pid} ignored SIGTERM for {STOP_TIMEOUT:.0f} s"
            ) from None
        if code != 0:
            raise BenchmarkError(
                f"worker process {self.pid} exited with code {code}:\n{self.log_tail()}"
            )

    def kill(self) -> None:
        """Make sure the process is gone (cleanup after a failure)."""
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()

    def log_tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def start_worker(
    target: Target,
    concurrency: int,
    log_dir: Path,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> WorkerProcess:
    """Start one worker process (``args``: more CLI options, e.g. ``--lease-seconds 1``)."""
    log_path = log_dir / f"worker-{next(_numbers)}.log"
    return WorkerProcess(target.url, concurrency, log_path, env or {}, args)


@asynccontextmanager
async def workers(
    target: Target,
    count: int,
    concurrency: int,
    log_dir: Path,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> AsyncIterator[list[WorkerProcess]]:
    """Start ``count`` worker processes, yield once all are idle, SIGTERM them at exit.

    Processes the caller appends to the yielded list (``start_worker``) are stopped
    (or killed, after a failure) with the others.
    """
    started: list[WorkerProcess] = []
    try:
        for _ in range(count):
            started.append(start_worker(target, concurrency, log_dir, env, args))
        await wait_idle(target, started)
        yield started
    except BaseException:
        for process in started:
            process.kill()
        raise
    for process in started:
        process.stop()


async def wait_idle(target: Target, processes: list[WorkerProcess]) -> None:
    """Return once every process is connected and waiting for work."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        for process in processes:
            process.check_alive()
        serving = [process.serving() for process in processes]
        if all(serving) and await target.workers_idle(
            [worker for each in serving for worker in each or ()]
        ):
            return
        if time.monotonic() > deadline:
            raise BenchmarkError(f"worker processes not idle within {READY_TIMEOUT:.0f} s")
        await asyncio.sleep(0.05)
