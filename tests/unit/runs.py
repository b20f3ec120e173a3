"""Values of runs for unit tests of the worker's bookkeeping."""

from __future__ import annotations

from workpool.backends.base import ClaimedRun, Lease


def claimed_run(run_id: str) -> ClaimedRun:
    """A claimed first attempt of a run of workflow ``wf`` on the default queue."""
    return ClaimedRun(
        lease=Lease(run_id, "token"),
        workflow="wf",
        queue="default",
        input="null",
        attempt=1,
        retry=None,
        created_at=0.0,
        available_at=0.0,
    )
