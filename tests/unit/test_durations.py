"""Every duration parameter is typed, and taken, as a timedelta or a number of seconds."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from workpool import RetryPolicy, RunHandle, Workpool
from workpool.engine.steps import Steps

TYPED_DURATIONS: list[tuple[Callable[..., Any], str]] = [
    (Steps.run, "timeout"),
    (Steps.run_workflow, "timeout"),
    (Steps.emit_workflow, "run_after"),
    (Steps.sleep, "duration"),
    (RunHandle.result, "timeout"),
    (RunHandle.result_sync, "timeout"),
]


@pytest.mark.parametrize(
    ("function", "parameter"),
    TYPED_DURATIONS,
    ids=[f"{function.__qualname__}-{parameter}" for function, parameter in TYPED_DURATIONS],
)
def test_the_signature_accepts_a_timedelta_and_seconds(
    function: Callable[..., Any], parameter: str
) -> None:
    """What mypy --strict users see: passing a timedelta must type-check."""
    annotation = typing.get_type_hints(function)[parameter]
    accepted = (
        set(typing.get_args(annotation)) if isinstance(annotation, types.UnionType) else set()
    )
    assert {timedelta, float} <= accepted, f"{function.__qualname__}({parameter}: {annotation})"


def test_the_pool_options_take_seconds(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/w.db", retention=3600, fail_unserved_after=60)
    assert pool.retention == timedelta(hours=1)


def test_the_worker_options_take_seconds(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/w.db", app="tests")
    worker = pool.worker(lease=20, renew_every=2, shutdown_grace=5, housekeeping_every=60)
    assert worker.options.lease.total_seconds() == 20


def test_the_retry_backoff_takes_seconds() -> None:
    assert RetryPolicy(initial_backoff=0.25).initial_backoff == timedelta(milliseconds=250)


async def test_the_stats_window_takes_seconds(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/w.db")
    try:
        assert (await pool.stats(300)).window == timedelta(minutes=5)
    finally:
        await pool.aclose()
        pool.close()
