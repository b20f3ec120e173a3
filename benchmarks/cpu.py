"""CPU accounting: how much of the machine the suite used, and how much others did.

On a small shared machine a figure can suffer from work that is not the suite's. Each
repetition records the CPU seconds the whole machine spent busy, minus the suite's
own (this process, its finished children, and the live redis-server), and the steal
time of a virtual machine, so a disturbed repetition shows in the JSON.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True, slots=True)
class CpuSample:
    """Cumulative CPU seconds at one moment."""

    machine_busy: float
    steal: float
    suite: float

    def __sub__(self, earlier: CpuSample) -> CpuSample:
        return CpuSample(
            self.machine_busy - earlier.machine_busy,
            self.steal - earlier.steal,
            self.suite - earlier.suite,
        )

    @property
    def others(self) -> float:
        """CPU seconds used by processes that are not the suite's."""
        return max(0.0, self.machine_busy - self.suite)


def sample(redis_pid: int | None) -> CpuSample:
    """Now: machine busy time, steal, and the suite's CPU time (children once waited)."""
    times = psutil.cpu_times()
    busy = sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))
    own = os.times()
    suite = own.user + own.system + own.children_user + own.children_system
    if redis_pid is not None:
        try:
            server = psutil.Process(redis_pid).cpu_times()
            suite += server.user + server.system
        except psutil.NoSuchProcess:
            pass
    return CpuSample(float(busy), float(getattr(times, "steal", 0.0)), float(suite))
