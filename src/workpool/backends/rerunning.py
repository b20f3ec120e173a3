"""What the SQL backends share of ``rerun_from_step`` (``contract/control.py``): which
runs it accepts, the note it stores, and the ids of the hook runs of a run's endings."""

from __future__ import annotations

import json
from typing import Any

from workpool.backends.base import RerunFromStep

RERUNNABLE = ("needs_attention", "failed", "canceled")
"""The statuses ``rerun_from_step`` accepts; the terminal ones restart the attempts."""


def refusal(row: Any) -> RerunFromStep | None:
    """Why the run of ``row`` (status, parent_run_id, batch_id, retried_as) may not be
    rerun from a step, or None if it may."""
    status = str(row["status"])
    if status == "succeeded":
        return "succeeded"
    if status not in RERUNNABLE:
        return "not_stopped"
    if status != "needs_attention" and (
        row["parent_run_id"] is not None
        or row["batch_id"] is not None
        or row["retried_as"] is not None
    ):
        return "linked"
    return None


def rerun_note(prior: str | None, step: str, reason: str, now: float) -> str:
    """The ``rerun_from`` JSON to store, its ``count`` one more than ``prior``'s."""
    count = 0 if prior is None else int(json.loads(prior).get("count", 0))
    return json.dumps({"step": step, "reason": reason, "at": now, "count": count + 1})


def hook_run_id(run_id: str, index: int, rerun_from: str | None) -> str:
    """The id of hook ``index``'s run for this ending of the run: ``<run>-<index>``, and
    ``<run>-<index>-<count>`` once the run was rerun from a step ``count`` times."""
    if rerun_from is None:
        return f"{run_id}-{index}"
    return f"{run_id}-{index}-{int(json.loads(rerun_from).get('count', 0))}"
