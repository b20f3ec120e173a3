"""Workers: the workflows they define (the registry), their heartbeats, and named leases
(one cron leader among them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A worker as it announces itself with ``heartbeat``: what it serves, until when."""

    id: str
    app: str
    queues: tuple[str, ...]
    workflows: tuple[str, ...]
    """The workflows it defines: it claims runs of these only."""
    started_at: float
    seen_at: float
    """Its last heartbeat."""
    expires_at: float
    """It counts as gone from then on, unless a heartbeat extends it."""

    def serves(self, queue: str, workflow: str) -> bool:
        """Whether this worker takes runs of ``workflow`` from ``queue``."""
        return queue in self.queues and workflow in self.workflows


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """A workflow definition as a worker registered it (``sync_registry``)."""

    name: str
    app: str
    """The application whose workers define it; only they may remove it."""
    queue: str
    max_concurrency: int | None
    retry: str | None
    """JSON text of the workflow's retry policy, or None (the pool's default applies)."""
    cron: str
    """JSON text of the workflow's cron triggers (a list)."""
    updated_at: float
    rate_limits: str | None = None
    """JSON text of the rate limits the worker's code sets on its runs (a list of
    {"scope": "workflow" or "queue", "count", "per" (seconds), "keyed"}); None when a
    version that did not record them registered it."""
    limits: str | None = None
    """JSON text of the shared limits its runs count against (a list of {"name",
    "max_concurrency", "rate": {"count", "per"} or null, "keyed"}); None when a version
    that did not record them registered it."""


class Workers(Protocol):
    """The registry, worker records and named leases."""

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """Record the workflows a worker of ``app`` defines, in ONE operation.

        First remove every record of ``app`` whose name is not among ``workflows`` and
        whose ``updated_at`` is older than ``now - grace`` (records of other apps, and
        runs, are never touched); then store each given record with ``updated_at =
        now``, replacing any record of that name. Returns the removed names, sorted.
        """
        ...

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """Store each given record of ``app`` whose name has no record, with
        ``updated_at = now``, in ONE operation; a record present (whoever wrote it) is
        left as it is. Returns the restored names, sorted. A live worker calls it when
        its heartbeat finds its records missing (the store lost them)."""
        ...

    async def list_workflows(self) -> list[WorkflowInfo]:
        """Every registered workflow, by name."""
        ...

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """Store ``worker``'s record (replacing its last one) and delete the records
        expired at ``now``, in ONE operation; return the names among
        ``worker.workflows`` that have no registry record, sorted (none: an empty
        list), so the worker can restore them (``restore_registry``)."""
        ...

    async def remove_worker(self, worker_id: str) -> None:
        """Delete a worker's record (it stopped); unknown ids change nothing."""
        ...

    async def list_workers(self, now: float) -> list[WorkerRecord]:
        """The workers whose record has not expired at ``now``, by id."""
        ...

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """Take or extend the named lease (e.g. ``"cron"``: one leader among workers).

        In ONE operation: if nobody holds ``name``, its holder's lease expired
        (``expires_at <= now``) or ``holder`` holds it, make ``holder`` hold it until
        ``now + seconds`` and return True; else change nothing and return False.
        """
        ...
