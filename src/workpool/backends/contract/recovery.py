"""Recovery: acting on many runs by filter, a page at a time, and the failures grouped by
workflow and error type.

Bulk actions (``act_on_runs``): the caller walks the runs a ``RunFilter`` selects in
pages. Each page is ONE atomic operation over at most ``limit`` candidate runs, so a
million matching runs never hold one transaction or block the backend for long, and
workers go on claiming and finishing between pages. A page reads its candidates from the
listing indexes (see ``reads.py``: every run is indexed by (queue, workflow, status) in
id order), newest first below the cursor, exactly as ``list_runs`` would page them, then
checks the rest of the filter and the action's precondition on each, as stored at that
moment: a run that changed state since an earlier page is judged by its state now.

Failure groups: every operation that ends a run ``failed`` adds it to the group of its
(workflow, error type) in the same atomic operation, and every operation that deletes a
failed run (``purge``, the ``delete`` action) takes it out, so reading the groups costs
O(groups), whatever the number of runs stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

BulkAction = Literal["count_retry", "count_cancel", "count_delete", "retry", "cancel", "delete"]
"""What ``act_on_runs`` does to each selected run; ``count_*`` change nothing and count
the runs the action would change."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a bulk action selects: those matching every field given."""

    statuses: tuple[str, ...]
    """The states to select from (at least one)."""
    workflow: str | None = None
    queue: str | None = None
    error_type: str | None = None
    """Only runs whose stored error's ``type`` is this (so only runs that failed, or
    were retried after a failure, have one)."""
    created_from: float | None = None
    """Only runs created at or after this time (seconds since the epoch)."""
    created_before: float | None = None
    """Only runs created strictly before this time."""


@dataclass(frozen=True, slots=True)
class BulkPage:
    """What one page of ``act_on_runs`` did."""

    changed: int
    """The selected runs the action changed (or, for ``count_*``, would change)."""
    cursor: str | None
    """Where the next page starts; None: no candidates are left."""


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """The failed runs stored of one workflow with one error type."""

    workflow: str
    error_type: str
    """The ``type`` of the runs' stored error ('' if it had none)."""
    count: int
    first_seen: float
    """The ``finished_at`` of the group's earliest failure counted since it last had
    none (deleting that run does not move it)."""
    last_seen: float
    """The ``finished_at`` of its latest failure."""
    example_run_id: str | None
    """Its latest failed run, or None if that run has been deleted since."""


class Recovery(Protocol):
    """Bulk actions by filter, and the failures view."""

    async def act_on_runs(
        self,
        action: BulkAction,
        run_filter: RunFilter,
        cursor: str | None,
        limit: int,
        now: float,
        *,
        reason: str | None = None,
        new_ids: Sequence[str] = (),
    ) -> BulkPage:
        """Apply ``action`` to one page of the runs ``run_filter`` selects, in ONE
        atomic operation.

        The page's candidates are the first ``limit`` ids below ``cursor`` (all ids if
        None), largest first, of the runs in the filter's statuses and (queue,
        workflow) pairs. Each candidate that matches the rest of the filter (error
        type, creation time) and the action's precondition is changed as:

        - ``retry``: a ``failed`` or ``canceled`` run not re-run yet is re-run as
          ``rerun`` does, as the next unused id of ``new_ids`` (the caller passes
          ``limit`` fresh ids).
        - ``cancel``: an active run not yet cancel-requested is canceled as ``cancel``
          does, with ``reason`` (a running one is cancel-requested). Children canceled
          with it are not counted.
        - ``delete``: a terminal run is deleted as ``purge`` deletes a run.

        ``cursor`` of the result: the last candidate read when ``limit`` were read,
        else None. Runs that join the filter's indexes above the cursor after the walk
        started (new runs, runs that changed state) are not reached by that walk.
        """
        ...

    async def failure_groups(self) -> list[FailureGroup]:
        """Every failure group with at least one failed run, by workflow then error
        type; one read of O(groups)."""
        ...
