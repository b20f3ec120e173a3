"""Why a pending run has not started: the one text that ``Workpool.waiting_reason``,
``RunHandle.result``'s timeout, ``workpool runs show`` and the dashboard's run page give."""

from __future__ import annotations

from workpool.backends.base import Backend
from workpool.decoding import utc_text
from workpool.models import Run

PENDING = ("queued", "scheduled")


async def waiting_reason(backend: Backend, run: Run, now: float) -> str | None:
    """Every reason that holds ``run`` back, joined: ``"waiting: <reason>; <reason>"``.

    The reasons: no live worker defines its workflow on its queue; its workflow is at
    its ``max_concurrency``; a rate limit reserved it a later start; it is scheduled
    for later; its queue is paused; its queue is at its ``max_parallelism``. None for a
    run that is not pending, or that only waits for a free worker slot. A few reads
    (workers, the queue's settings, and the queue's running count when it is limited):
    for people, not for hot paths.
    """
    if run.status not in PENDING:
        return None
    reasons: list[str] = []
    workers = await backend.list_workers(now)
    if not any(worker.serves(run.queue, run.workflow) for worker in workers):
        reasons.append(
            f"no worker defines workflow {run.workflow!r} on queue {run.queue!r} "
            f"({len(workers)} live workers)"
        )
    start = run.available_at.timestamp()
    if run.waiting is not None:
        reasons.append(run.waiting.removeprefix("waiting: ") + _later(start, now))
    elif run.status == "scheduled" and start > now:
        reasons.append(f"scheduled to start at {utc_text(start)}{_later(start, now)}")
    reasons += await _queue_reasons(backend, run.queue, now)
    return "waiting: " + "; ".join(reasons) if reasons else None


async def _queue_reasons(backend: Backend, queue: str, now: float) -> list[str]:
    settings = await backend.get_queue(queue)
    if settings.paused:
        return [f"queue {queue!r} is paused"]
    limit = settings.max_parallelism
    if limit is None:
        return []
    snapshot = await backend.get_stats(now, now)
    running = sum(pair.running for pair in snapshot.activity if pair.queue == queue)
    if running < limit:
        return []
    return [f"queue {queue!r} is at its max_parallelism {limit} ({running} of its runs running)"]


def _later(start: float, now: float) -> str:
    """`` (in 4 min 10 s)`` for a start still to come, else nothing."""
    left = round(start - now)
    if left <= 0:
        return ""
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{seconds} s" if seconds or not (hours or minutes) else "")
    return f" (in {' '.join(part for part in parts if part)})"
