"""Statistics and workers: ``get_stats.lua``'s reply and the workers hash's records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from workpool.backends.base import (
    PairActivity,
    PairCounters,
    PeriodCounters,
    StatsSnapshot,
    WorkerRecord,
)
from workpool.backends.redis.codec.times import seconds
from workpool.backends.redis.keys import split_pair
from workpool.errors import CorruptRecordError

COUNTER_NAMES = ("timed", "reaped", "run_time", "succeeded", "failed", "canceled", "retried")
"""The counters a minute's or an hour's stats hash holds per pair (see lua/library/counters.lua)."""


def decode_stats(
    activity: Sequence[Any],
    counters: Sequence[Any],
    oldest: Sequence[Any],
    workers: Sequence[Any],
    now: float,
) -> StatsSnapshot:
    """A StatsSnapshot from get_stats.lua's reply (four lists; the workers live at
    ``now``), or CorruptRecordError for a pair or counter it cannot read."""
    active = [
        PairActivity(*_split(activity[i]), *(int(n) for n in activity[i + 1 : i + 7]))
        for i in range(0, len(activity), 7)
    ]
    return StatsSnapshot(
        activity=sorted(active, key=lambda pair: (pair.queue, pair.workflow)),
        counters=pair_counters(counters),
        oldest_claimable={str(oldest[i]): float(oldest[i + 1]) for i in range(0, len(oldest), 2)},
        workers=live_workers(workers, now),
    )


def decode_period_counters(reply: Sequence[Any]) -> list[PeriodCounters]:
    """The periods of get_counters.lua's reply that hold a count, or
    CorruptRecordError for a pair or counter it cannot read."""
    periods = [
        PeriodCounters(float(reply[i]), pair_counters(reply[i + 1]))
        for i in range(0, len(reply), 2)
    ]
    return [period for period in periods if period.counters]


def pair_counters(fields: Sequence[Any]) -> list[PairCounters]:
    """The counters of each pair from flat ``"<counter>:<pair>"`` fields and values
    (a field may come more than once: its values add up), sorted by (queue, workflow);
    pairs whose counters are all zero are left out."""
    sums: dict[tuple[str, str], dict[str, float]] = {}
    for i in range(0, len(fields), 2):
        counter, _, name = str(fields[i]).partition(":")
        if counter not in COUNTER_NAMES:
            raise CorruptRecordError(f"counters: unknown field {fields[i]!r}")
        values = sums.setdefault(_split(name), {})
        values[counter] = values.get(counter, 0.0) + float(fields[i + 1])
    totals = []
    for (queue, workflow), values in sums.items():
        whole = {name: int(values.get(name, 0)) for name in COUNTER_NAMES if name != "run_time"}
        if not any(whole.values()) and not values.get("run_time"):
            continue
        totals.append(
            PairCounters(
                queue,
                workflow,
                executions=whole["timed"] + whole["reaped"],
                timed=whole["timed"],
                run_time=values.get("run_time", 0.0),
                succeeded=whole["succeeded"],
                failed=whole["failed"],
                canceled=whole["canceled"],
                retried=whole["retried"],
            )
        )
    return sorted(totals, key=lambda pair: (pair.queue, pair.workflow))


def encode_worker(worker: WorkerRecord) -> str:
    """A worker record as stored in the workers hash."""
    return json.dumps(
        {
            "id": worker.id,
            "app": worker.app,
            "queues": list(worker.queues),
            "workflows": list(worker.workflows),
            "started_at": seconds(worker.started_at),
            "seen_at": seconds(worker.seen_at),
            "expires_at": seconds(worker.expires_at),
        }
    )


def live_workers(texts: Sequence[Any], now: float) -> list[WorkerRecord]:
    """The records (JSON texts) not expired at ``now``, by id; unreadable ones skipped
    (a worker record is advisory: it only says what is served)."""
    workers = []
    for text in texts:
        try:
            data = json.loads(text)
            worker = WorkerRecord(
                id=str(data["id"]),
                app=str(data["app"]),
                queues=tuple(str(queue) for queue in data["queues"]),
                workflows=tuple(str(name) for name in data["workflows"]),
                started_at=float(data["started_at"]),
                seen_at=float(data["seen_at"]),
                expires_at=float(data["expires_at"]),
            )
        except (ValueError, KeyError, TypeError):
            continue
        if worker.expires_at > now:
            workers.append(worker)
    return sorted(workers, key=lambda worker: worker.id)


def _split(name: Any) -> tuple[str, str]:
    """(queue, workflow) of a pair's name, or CorruptRecordError."""
    try:
        return split_pair(str(name))
    except ValueError as error:
        raise CorruptRecordError(f"stats: {error}") from None
