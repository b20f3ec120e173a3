"""Batches: a batch (``NewBatch``) groups runs for one callback. Its record counts the
runs stored in it (``total``) and those that ended, by outcome. Every terminal
transition of a run with a ``batch_id`` (finish, cancel, ``cancel_many``,
``cancel_batch``, reaping, ``fail_unserved``, ``release``, a parent's cancel...) counts
its outcome in the same atomic operation (and keeps a failed run's id while the batch
holds fewer than ``MAX_FAILED_IDS``), then, if the batch is closed and none of its runs
is left unfinished, completes it in that operation: ``completed_at = now`` and its
callback enqueued, once. A completed batch never changes again; a run re-run
(``rerun``) is not in the batch of the run it copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from workpool.backends.contract.runs import CompletionHook

MAX_FAILED_IDS = 1000
"""The most failed run ids a batch keeps for its callback (the first to fail)."""


@dataclass(frozen=True, slots=True)
class NewBatch:
    """A batch to create with the runs of one ``enqueue`` (see "Batches" above).

    Its id must not contain ``:``. When its last run ends with the batch closed, the
    backend enqueues, in that same atomic operation, the run ``<batch id>-complete`` of
    ``callback`` (if any; ``on_failure_only`` is ignored) with ``available_at = now``
    and this JSON input (keys in this order)::

        {"batch_id": <id>, "context": <callback.context JSON>, "total": <runs>,
         "succeeded": <n>, "failed": <n>, "canceled": <n>,
         "failed_run_ids": [<the first MAX_FAILED_IDS runs to end failed, in that order>]}
    """

    id: str
    callback: CompletionHook | None = None
    open: bool = False
    """Open: runs may be added (``enqueue`` with their ``batch_id``) until it is closed
    (``close_batch``), and it cannot complete before."""


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """A batch as stored: its counts of runs by outcome so far."""

    id: str
    created_at: float
    total: int
    """Runs stored in it (a run an idempotency key found elsewhere is not)."""
    succeeded: int
    failed: int
    canceled: int
    open: bool
    completed_at: float | None = None
    """When it completed: closed with every run ended (its callback enqueued then)."""
    callback_run_id: str | None = None
    """The callback's run, once enqueued."""


class Batches(Protocol):
    """Reading, closing and canceling batches (``enqueue`` creates and fills them)."""

    async def get_batch(self, batch_id: str) -> BatchRecord | None:
        """Read one batch, or None if there is none (never made, or purged)."""
        ...

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """Close a batch in ONE operation (no more runs may be added) and complete it at
        once if none of its runs is unfinished; return it as now stored (None: no such
        batch). Closing a closed batch changes nothing."""
        ...

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        """Cancel up to ``limit`` unfinished runs of a batch in ONE operation, smallest
        id first, each as ``cancel`` does (running ones not already cancel-requested
        get a request); return how many were canceled or cancel-requested (the count may
        include children canceled along with them), or None if there is no such batch.
        Callers repeat until it returns 0."""
        ...
