"""What the SQL backends share of the recovery operations (``contract/recovery.py``): a
stored error's type, and whether a bulk action changes a candidate run."""

from __future__ import annotations

import json
from typing import Any

from workpool.backends.base import ACTIVE_STATES, TERMINAL_STATES, BulkAction, RunFilter


def error_type(error: str | None) -> str:
    """The ``type`` of a stored error's JSON text; '' if it has none (or is not JSON)."""
    try:
        decoded: Any = json.loads(error) if error is not None else None
    except ValueError:
        return ""
    found = decoded.get("type") if isinstance(decoded, dict) else None
    return found if isinstance(found, str) else ""


def acts_on(action: BulkAction, run_filter: RunFilter, row: Any) -> bool:
    """Whether ``action`` changes the run of ``row`` (its status, error, created_at,
    retried_as and cancel_requested, as stored now), a candidate of ``run_filter``."""
    status = str(row["status"])
    created_at = float(row["created_at"])
    if status not in run_filter.statuses:
        return False
    if run_filter.error_type is not None and error_type(row["error"]) != run_filter.error_type:
        return False
    if run_filter.created_from is not None and created_at < run_filter.created_from:
        return False
    if run_filter.created_before is not None and created_at >= run_filter.created_before:
        return False
    kind = action.removeprefix("count_")
    if kind == "retry":
        return status in ("failed", "canceled") and row["retried_as"] is None
    if kind == "cancel":
        return status in ACTIVE_STATES and not row["cancel_requested"]
    return status in TERMINAL_STATES
