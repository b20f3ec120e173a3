"""``workpool runs pause|resume|run-now RUN_ID``: what each prints, and refusals."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import workpool
from tests.conformance.helpers import enqueue_new
from workpool import Workpool


async def scheduled_run(url: str) -> str:
    """A run scheduled an hour from now."""
    pool = Workpool(url)
    try:
        now = pool.settings.clock.now()
        return await enqueue_new(await pool.backend(), now, available_at=now + 3600)
    finally:
        await pool.aclose()


async def test_pause_resume_and_run_now(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    run_id = await scheduled_run(url)

    paused = workpool(url, "runs", "pause", run_id)
    assert (paused.returncode, paused.stdout) == (0, f"run {run_id}: paused\n")
    assert "paused" in workpool(url, "runs", "show", run_id).stdout
    again = workpool(url, "runs", "pause", run_id)
    assert again.returncode == 1
    assert f"run {run_id} is paused: only a queued or scheduled run can be paused" in again.stderr
    refused = workpool(url, "runs", "run-now", run_id)
    assert refused.returncode == 1
    assert "is paused: only a scheduled run" in refused.stderr

    resumed = workpool(url, "runs", "resume", run_id)
    assert (resumed.returncode, resumed.stdout) == (0, f"run {run_id}: resumed, scheduled\n")
    now = workpool(url, "runs", "run-now", run_id)
    assert (now.returncode, now.stdout) == (0, f"run {run_id}: queued, available now\n")

    missing = workpool(url, "runs", "resume", "no-such-run")
    assert missing.returncode == 1
    assert "no run with id 'no-such-run'" in missing.stderr


def test_the_runs_group_lists_them(tmp_path: Path) -> None:
    listed = workpool(f"sqlite:///{tmp_path / 'pool.db'}", "runs", "--help").stdout
    for name in ("pause", "resume", "run-now"):
        assert f"  {name} " in listed
