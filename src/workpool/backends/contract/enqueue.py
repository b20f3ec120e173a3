"""Storing runs (``enqueue``), and what decides when a stored run may start.

Claim order: a run's rank is ``available_at - rank_offset`` (``NewRun``), kept as its
``available_at`` changes (retries, promotions, requeues, wake-ups). Within a queue,
claims take claimable runs smallest rank first, ties in run id order (best effort across
workflows); gates admit their waiting runs the same way. The backend knows nothing of
priorities: the client turns a priority into an offset (strict, or with a queue's aging).

Concurrency gates: a run with ``max_concurrency`` belongs to the gate of its
(workflow, concurrency_key). A gate admits at most ``max_concurrency`` runs at once,
across every worker: only admitted runs are claimable, and a run stays admitted while
it is ``queued`` (claimable) or ``running``. A run that becomes ``queued`` (enqueue,
promotion, wake-up, requeue) joins its gate's waiting runs (still ``queued``, not
claimable); a run that stops being admitted (it ends, is retried, suspends, or is
requeued) frees its place. After either, in the same operation, the gate admits its
waiting runs smallest rank first (see "Claim order") while it has fewer admitted runs than the
``max_concurrency`` of the run that joined or left (so a changed limit applies from
the next change at that gate). Admitted runs go to their queue like ungated ones and
wake its workers. Claims never look at waiting runs: a full gate costs nothing while
it stays full.

Rate limits: a run with ``rate_limits`` starts no faster than each of them allows,
across every worker. Each limiter (an id shared by the runs it limits) allows ``count``
starts per ``per`` seconds, at most ``count`` at once (GCRA: starts are spaced
``per / count`` apart, with a burst of ``count``). A run reserves its start time when
it becomes ``queued`` without a reservation (enqueue, promotion of a scheduled run,
retry, requeue): the earliest time every one of its limiters allows, each limiter
recording the reservation. If that time is later than now, the run becomes
``scheduled`` at that time instead, keeping the reservation (no attempt is used), and
becomes ``queued`` when due without reserving again. So runs over a limit wait on
timers, each for its own start time, and nothing re-reads them meanwhile. Reservations
go in the order runs become queued: a rank does not reorder them.

Debounce: a run with a ``debounce_key`` collapses with the run last enqueued with that
(workflow, key) while that one is still waiting out its window: ``scheduled`` for its
first attempt (no rate reservation) with ``available_at > now``. Then the enqueue stores
no run: it replaces that run's input with its own and moves its ``available_at`` to
``min(the new run's available_at, that run's debounce_until)``, and returns
``Enqueued(that run's id, created=False)``. Otherwise the new run is stored (scheduled
at its ``available_at``) and becomes the run of (workflow, key). A run whose window has
ended (due, queued, started, ended) is never changed by a debounced enqueue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from workpool.backends.contract.batches import NewBatch
from workpool.backends.contract.runs import Enqueued, NewRun


class Enqueuing(Protocol):
    """Storing new runs."""

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        *,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """Store runs, all in ONE atomic operation; results in input order.

        Each run is stored ``queued`` if ``available_at <= now`` else ``scheduled``,
        with ``attempts = 0``, ``created_at = now`` and every index updated. A run with
        an idempotency key whose (workflow, key) maps to a run id remembered less than
        its TTL ago returns ``Enqueued(that id, created=False)`` and stores nothing,
        even if that run has since finished. Expired keys are replaced. Within one
        batch, a repeated (workflow, key) resolves to the first run of the batch.
        Enqueueing an id that already exists returns ``created=False`` and changes
        nothing, before any debounce key is looked at: so enqueue is idempotent
        by run id, and a client may send a call again when its reply was lost (the
        repeat is not collapsed). A run with a
        ``debounce_key`` may collapse into an earlier one (see "Debounce"). Wakes any
        worker blocked in ``wait_for_work`` on that queue.

        Batches (see "Batches" in ``batches.py``): either no run has a ``batch_id``, or
        all have the same one (else ValueError). With ``batch``, it is created with the runs (their
        ``batch_id`` must be its id; ValueError if a batch of that id exists, unless it
        holds one of these runs: then the call is a repeat of the one that created it,
        and adds what is not stored yet); closed and without runs stored, it completes
        at once. Without ``batch``, the runs are added
        to their batch, which must exist (else ``BatchNotFoundError``) and be open, or
        closed but ``added_by`` a run of it that has not ended (which keeps it from
        completing: a run adding to its own batch), else ``BatchClosedError``; nothing is
        written when either is raised. ``total`` grows by the runs stored (not those an
        idempotency key or existing id found).
        """
        ...
