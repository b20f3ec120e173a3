"""``workpool runs rerun ID --from-step NAME``, and how ``runs show`` shows a run that
needs attention."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import workpool
from tests.conformance.helpers import claim_one, enqueue_new, error_json
from workpool import Workpool
from workpool.backends.base import Finish, StepRecord

WHY = "step 'charge' is now called with other arguments"


async def stopped_run(url: str) -> str:
    """A run with steps reserve and charge, stopped in needs_attention."""
    pool = Workpool(url)
    try:
        backend = await pool.backend()
        now = pool.settings.clock.now()
        run_id = await enqueue_new(backend, now)
        claimed = await claim_one(backend, now)
        for position, name in enumerate(("reserve", "charge")):
            step = StepRecord(name, "run", "succeeded", 1, now + position, "1", position=position)
            await backend.save_step(claimed.lease, step, now)
        error = error_json("StepMismatchError", WHY)
        await backend.finish([Finish(claimed.lease, "attention", error=error)], now)
    finally:
        await pool.aclose()
    return run_id


async def test_rerun_from_a_step(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    run_id = await stopped_run(url)

    shown = workpool(url, "runs", "show", run_id).stdout
    assert "needs_attention" in shown
    assert f"\nneeds attention\n  StepMismatchError: {WHY}\n" in shown

    missing = workpool(url, "runs", "rerun", run_id, "--from-step", "ship")
    assert missing.returncode == 1
    assert "has no saved step 'ship'; its saved steps are: 'reserve', 'charge'" in missing.stderr

    done = workpool(url, "runs", "rerun", run_id, "--from-step", "charge", "--reason", "fixed")
    assert (done.returncode, done.stdout) == (0, f"run {run_id} queued again from step 'charge'\n")
    shown = workpool(url, "runs", "show", run_id).stdout
    assert "queued" in shown
    assert "from step 'charge': fixed" in shown
    assert [line.split()[0] for line in workpool(url, "steps", run_id).stdout.splitlines()[2:]] == [
        "reserve"
    ]

    again = workpool(url, "runs", "rerun", run_id, "--from-step", "charge")
    assert again.returncode == 1
    assert "is still active" in again.stderr
