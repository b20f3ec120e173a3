"""The process supervisor of ``workpool worker --processes N``, and a child's link to it.

The supervisor runs no worker itself. It starts N worker processes, each a fresh
``python -m workpool worker`` with the command's options (never a fork of a process
that has threads or an event loop), starts again one that dies, and on SIGTERM or
SIGINT forwards the signal once to each: they drain as a single worker does. Each
child is in a process group of its own, so a terminal's Ctrl-C reaches the supervisor
alone, which forwards it; a second SIGTERM or SIGINT kills the children at once.

Exit statuses of a child, and what the supervisor does after each:
- ``EXIT_RECYCLE`` (75): recycled (``Worker.request_recycle``, ``--max-runs-per-process``):
  started again at once;
- ``EXIT_UNLOADABLE`` (78): its pool could not be loaded (MODULE:POOL cannot be
  imported, or names no pool): every process would fail alike, so the supervisor
  stops the others at once and exits 2, as the single-process command does;
- anything else, or a signal: started again after a backoff (1 s, doubling to 30 s;
  back to 1 s once a process lived 30 s). A process that dies before its worker
  serves (an import error, an unreachable backend, a port in use), five times in a
  row for one slot, makes the supervisor stop the others and exit with that status
  (1 if it was a signal).
While stopping, nothing is started again.

Two pipes join the supervisor and its children (``--supervisor-pipes LIFELINE,READY``,
a hidden option the supervisor adds; ``SupervisorLink`` is the child's side):
- the lifeline: only the supervisor holds its write end, so a child reads end of file
  the moment the supervisor is gone, even after a SIGKILL, and stops gracefully;
- ready: a child writes its pid there once its worker serves, which tells a process
  that cannot start from one that died while working (a run that kills its worker
  must not count as a broken deploy).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

logger = logging.getLogger("workpool.supervisor")

EXIT_RECYCLE = 75
"""Exit status of a worker process that was recycled: its supervisor starts a new one
at once. 75 is EX_TEMPFAIL of sysexits.h ("try again"), which process managers also
restart (systemd's ``Restart=on-failure``)."""

EXIT_UNLOADABLE = 78
"""Exit status of a supervised worker process whose pool could not be loaded (its
error is on its stderr); 78 is EX_CONFIG of sysexits.h."""
EXIT_USAGE = 2
"""The supervisor's exit status then: the command line's error, as click's."""

SUPERVISOR_OPTION = "--supervisor-pipes"
"""The hidden ``workpool worker`` option that makes a process a supervised child."""

STOPPED_BY_SIGNAL = {-signal.SIGTERM, -signal.SIGINT}
"""A child killed by the forwarded signal before it could handle it held no run."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """When the supervisor starts a process again, and when it gives up."""

    first_delay: float = 1.0
    """Seconds before a dead process is started again the first time."""
    longest_delay: float = 30.0
    """The delay doubles with each death in a row, up to this."""
    settled_after: float = 30.0
    """A process that lived this long resets its slot's delay to ``first_delay``."""
    give_up_after: int = 5
    """Deaths before serving, in a row in one slot, that stop the supervisor."""
    kill_after_grace: float = 10.0
    """While stopping, seconds past the shutdown grace after which a child is killed."""

    def delay(self, deaths: int) -> float:
        """Seconds to wait before starting a process after ``deaths`` deaths in a row."""
        return float(min(self.longest_delay, self.first_delay * 2 ** max(0, deaths - 1)))


def describe_exit(code: int) -> str:
    """``exited with status 2`` or ``was killed by SIGKILL``."""
    if code >= 0:
        return f"exited with status {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


@dataclass
class _Slot:
    """One of the N places a worker process runs in, and its history."""

    index: int
    process: asyncio.subprocess.Process | None = None
    pid: int = 0
    started_at: float = 0.0
    ready: bool = False
    deaths: int = 0
    """Deaths in a row since a process of this slot settled (sets the delay)."""
    unready_deaths: int = 0
    """Deaths before serving in a row (``give_up_after`` stops the supervisor)."""


class Supervisor:
    """Keeps ``processes`` worker processes running until SIGTERM or SIGINT.

    ``command(index)`` is the command line of the process of slot ``index`` (1 to N),
    without the supervisor's hidden option. ``shutdown_grace`` is the children's, in
    seconds: a child still running that long (plus ``kill_after_grace``) after the
    stop signal is killed.
    """

    def __init__(
        self,
        command: Callable[[int], Sequence[str]],
        processes: int,
        *,
        shutdown_grace: float,
        policy: RestartPolicy | None = None,
    ) -> None:
        self._command = command
        self._slots = [_Slot(index) for index in range(1, processes + 1)]
        self._shutdown_grace = shutdown_grace
        self.policy = policy or RestartPolicy()
        self._stopping = asyncio.Event()
        self._signal = signal.SIGTERM
        self._by_pid: dict[int, _Slot] = {}
        self._ready_buffer = b""
        self._ready_read = -1
        self._pipes = (-1, -1)
        self._kill_timer: asyncio.TimerHandle | None = None
        self._status = 0
        """The supervisor's exit status: a child's, if it gave up; 1 if a child
        stopped badly; else 0."""

    async def run(self) -> int:
        """Run the processes until stopped; return the supervisor's exit status."""
        loop = asyncio.get_running_loop()
        lifeline_read, lifeline_write = os.pipe()
        self._ready_read, ready_write = os.pipe()
        os.set_blocking(self._ready_read, False)
        self._pipes = (lifeline_read, ready_write)
        loop.add_reader(self._ready_read, self._read_ready)
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._signalled, signum)
        logger.info("supervisor %d starts %d worker processes", os.getpid(), len(self._slots))
        try:
            async with asyncio.TaskGroup() as tasks:
                for slot in self._slots:
                    tasks.create_task(self._keep_running(slot), name=f"process {slot.index}")
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
            loop.remove_reader(self._ready_read)
            if self._kill_timer is not None:
                self._kill_timer.cancel()
            for fd in (lifeline_read, lifeline_write, self._ready_read, ready_write):
                os.close(fd)
        logger.info("supervisor %d stopped", os.getpid())
        return self._status

    async def _keep_running(self, slot: _Slot) -> None:
        while not self._stopping.is_set():
            code = await self._run_child(slot)
            delay = self._after_exit(slot, code)
            if delay is None:
                return
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)

    async def _run_child(self, slot: _Slot) -> int:
        """Start the slot's process and wait for it to exit; its exit status."""
        pipes = ",".join(map(str, self._pipes))
        process = await asyncio.create_subprocess_exec(
            *self._command(slot.index),
            SUPERVISOR_OPTION,
            pipes,
            stdin=subprocess.DEVNULL,
            pass_fds=self._pipes,
            process_group=0,
        )
        slot.process, slot.pid = process, process.pid
        slot.started_at, slot.ready = time.monotonic(), False
        self._by_pid[process.pid] = slot
        logger.info("process %d started (pid %d)", slot.index, process.pid)
        if self._stopping.is_set():  # the stop came while it was being started
            signal_child(process, self._signal)
        code = await process.wait()
        self._read_ready()  # what it wrote before it exited
        del self._by_pid[process.pid]
        slot.process = None
        return code

    def _after_exit(self, slot: _Slot, code: int) -> float | None:
        """Log a child's exit; the seconds before it is started again, or None: not."""
        lived = time.monotonic() - slot.started_at
        name = f"process {slot.index} (pid {slot.pid})"
        if code == EXIT_UNLOADABLE and not slot.ready:
            self._cannot_load(name)
            return None
        if self._stopping.is_set():
            clean = code in (0, EXIT_RECYCLE) or code in STOPPED_BY_SIGNAL
            if not clean and self._status == 0:
                self._status = 1
            if clean:
                logger.info("%s stopped", name)
            else:
                logger.warning("%s %s while stopping", name, describe_exit(code))
            return None
        if code == EXIT_RECYCLE:
            logger.info("%s was recycled after %.1f s; starting a new one", name, lived)
            slot.deaths = 0
            return 0.0
        if not slot.ready:
            slot.unready_deaths += 1
            if slot.unready_deaths >= self.policy.give_up_after:
                self._give_up(slot, code)
                return None
        slot.deaths = 1 if lived >= self.policy.settled_after else slot.deaths + 1
        delay = self.policy.delay(slot.deaths)
        when = "before it started" if not slot.ready else f"after {lived:.1f} s"
        logger.warning(
            "%s %s %s; starting it again in %.0f s", name, describe_exit(code), when, delay
        )
        return delay

    def _cannot_load(self, name: str) -> None:
        """A process could not load its pool: the others cannot either; stop now."""
        if self._status == EXIT_USAGE:  # one said so already
            logger.info("%s could not load its pool either", name)
            return
        logger.error(
            "%s could not load its pool (its error is above); every process would fail "
            "alike, so the supervisor stops",
            name,
        )
        self._status = EXIT_USAGE
        if not self._stopping.is_set():
            self._stop(signal.SIGTERM)

    def _give_up(self, slot: _Slot, code: int) -> None:
        logger.error(
            "process %d (pid %d) %s before it started, %d times in a row; stopping the "
            "others (its error is above)",
            slot.index,
            slot.pid,
            describe_exit(code),
            slot.unready_deaths,
        )
        self._status = code if code > 0 else 1
        self._stop(signal.SIGTERM)

    def _read_ready(self) -> None:
        """Mark the slots whose process wrote its pid in the ready pipe."""
        with contextlib.suppress(BlockingIOError):
            self._ready_buffer += os.read(self._ready_read, 4096)
        *lines, self._ready_buffer = self._ready_buffer.split(b"\n")
        for line in lines:
            slot = self._by_pid.get(int(line))
            if slot is not None:
                slot.ready, slot.unready_deaths = True, 0
                logger.debug("process %d serves", slot.index)

    def _signalled(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self._stopping.is_set():
            live = self._live()
            logger.warning(
                "%s again: killing the worker processes still running (%d) now; the runs "
                "they held are taken again once their leases expire",
                name,
                len(live),
            )
            for process in live:
                signal_child(process, signal.SIGKILL)
            self._status = 1
            return
        logger.info(
            "%s: stopping %d worker processes (each lets its runs finish within %.0f s)",
            name,
            len(self._live()),
            self._shutdown_grace,
        )
        self._stop(signum)

    def _stop(self, signum: int) -> None:
        """Stop starting processes; forward ``signum`` to the running ones."""
        self._stopping.set()
        self._signal = signal.Signals(signum)
        for process in self._live():
            signal_child(process, signum)
        deadline = self._shutdown_grace + self.policy.kill_after_grace
        self._kill_timer = asyncio.get_running_loop().call_later(deadline, self._kill_stragglers)

    def _kill_stragglers(self) -> None:
        for slot in self._slots:
            if slot.process is not None and slot.process.returncode is None:
                logger.error(
                    "process %d (pid %d) did not stop within its shutdown grace; killing it",
                    slot.index,
                    slot.process.pid,
                )
                signal_child(slot.process, signal.SIGKILL)
                self._status = self._status or 1

    def _live(self) -> list[asyncio.subprocess.Process]:
        return [
            slot.process
            for slot in self._slots
            if slot.process is not None and slot.process.returncode is None
        ]


def signal_child(process: asyncio.subprocess.Process, signum: int) -> None:
    """Send ``signum`` to a child process unless its exit was seen already.

    With ``os.kill``, not ``process.send_signal``: before Python 3.13 that polls the
    child first (``Popen.poll``), which can reap a child that is exiting before asyncio's
    child watcher does, and the watcher then reports status 255 for it (CPython
    gh-87744). Between the watcher's reap and the loop learning of it the pid is free
    again; asyncio's own fix leaves that instant open too (gh-127049).
    """
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signum)


@dataclass(frozen=True, slots=True)
class SupervisorLink:
    """A supervised worker process's end of the two pipes (see the module docstring)."""

    lifeline: int
    ready: int

    @classmethod
    def parse(cls, value: str) -> SupervisorLink:
        """The link from the value of ``--supervisor-pipes`` (``LIFELINE,READY``)."""
        lifeline, ready = (int(part) for part in value.split(","))
        for fd in (lifeline, ready):
            os.set_inheritable(fd, False)  # not to this process's own children
        return cls(lifeline, ready)

    def watch(self, on_gone: Callable[[], None]) -> None:
        """Call ``on_gone`` (on the running loop) once the supervisor is gone."""
        loop = asyncio.get_running_loop()

        def readable() -> None:
            loop.remove_reader(self.lifeline)
            logger.warning("the supervisor is gone (pid %d): stopping", os.getppid())
            on_gone()

        loop.add_reader(self.lifeline, readable)

    def unwatch(self) -> None:
        """Stop watching (before the loop closes)."""
        asyncio.get_running_loop().remove_reader(self.lifeline)

    def report_ready(self) -> None:
        """Tell the supervisor this process serves now."""
        with contextlib.suppress(OSError):  # the supervisor is gone: the lifeline says so
            os.write(self.ready, f"{os.getpid()}\n".encode())
