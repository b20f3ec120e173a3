"""Repetitions of a workload: failures recorded, disturbed repetitions run again.

The suite shares a small virtual machine. A repetition during which other processes,
or the hypervisor (steal time: the host running other machines), took more than 15 %
of a core on average is discarded and run again, up to ``retries`` times; the
discarded one stays in the JSON details (``kept: false``) with its values.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from typing import Any

from benchmarks import cpu
from benchmarks.harness import Env, Workload
from benchmarks.report import Report
from benchmarks.report_format import number
from benchmarks.stats import Figure
from benchmarks.workers import BenchmarkError

DISTURBED_SHARE = 0.15
"""Other processes' CPU time plus steal time, as a share of the repetition's duration,
that discards it."""


async def run_workload(
    workload: Workload, env: Env, repeat: int, retries: int, report: Report
) -> list[Figure]:
    """``repeat`` kept repetitions of one workload on one backend, as figures."""
    figures = [
        Figure(workload.id, workload.title, env.backend, spec)
        for spec in workload.metrics
        if spec.only in (None, env.backend)
    ]
    for repetition in range(1, repeat + 1):
        label = f"{workload.id} {workload.title} [{env.backend}] {repetition}/{repeat}"
        for attempt in range(retries + 1):
            outcome = await _attempt(workload, env, label, repetition, report)
            if outcome is None:
                for figure in figures:
                    figure.failed = True
                break
            values, details = outcome
            if details["disturbed"] and attempt < retries:
                details["kept"] = False
                print(f"{label}: disturbed, discarded; running it again")
                continue
            details["kept"] = True
            if details["disturbed"]:
                report.warnings.append(f"{label} kept although disturbed ({retries} retries)")
            for figure in figures:
                if figure.spec.name in values:
                    figure.values.append(values[figure.spec.name])
            break
    return figures


async def _attempt(
    workload: Workload, env: Env, label: str, repetition: int, report: Report
) -> tuple[Mapping[str, float], dict[str, Any]] | None:
    """Run once; print and record the outcome (values, JSON details). None if it failed."""
    started, before = time.monotonic(), cpu.sample(env.redis_pid)
    try:
        measured = await workload.run(env)
    except Exception as error:
        message = str(error) if isinstance(error, BenchmarkError) else traceback.format_exc()
        print(f"!!! {label} FAILED: {message}", flush=True)
        report.errors.append(
            {
                "workload": workload.id,
                "backend": env.backend,
                "repetition": str(repetition),
                "error": message,
            }
        )
        return None
    elapsed, used = time.monotonic() - started, cpu.sample(env.redis_pid) - before
    disturbed = used.others + used.steal > DISTURBED_SHARE * elapsed
    note = (
        f"; DISTURBED: other processes used {used.others:.1f} CPU s, "
        f"the hypervisor stole {used.steal:.1f} CPU s"
        if disturbed
        else ""
    )
    shown = "; ".join(f"{name} {number(value)}" for name, value in measured.values.items())
    print(f"{label} ({elapsed:.1f} s{note}): {shown}", flush=True)
    details = {
        "workload": workload.id,
        "backend": env.backend,
        "repetition": repetition,
        "seconds": round(elapsed, 2),
        "suite_cpu_seconds": round(used.suite, 2),
        "other_processes_cpu_seconds": round(used.others, 2),
        "steal_cpu_seconds": round(used.steal, 2),
        "disturbed": disturbed,
        "values": dict(measured.values),
        **measured.details,
    }
    report.details.append(details)
    return measured.values, details
