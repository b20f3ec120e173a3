"""The operations of RedisBackend that only read: one command, or one read-only script,
each (a command is sent again if its reply is lost)."""

from __future__ import annotations

import math
from typing import Any

from workpool.backends.base import (
    BatchRecord,
    EventValue,
    GateUsage,
    PeriodCounters,
    QueueSettings,
    RunPage,
    RunRecord,
    SkippedTickRecord,
    StatsSnapshot,
    StepRecord,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.reading import counter_rows, readable
from workpool.backends.redis import codec
from workpool.backends.redis.connection import CommandLink
from workpool.backends.redis.keys import Keys
from workpool.backends.redis.scripts import Scripts


def as_dict(reply: Any) -> dict[str, str]:
    """An HGETALL reply as a dict (RESP2 replies come as a flat list)."""
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[::2], reply[1::2], strict=True))


class RedisReads:
    """Reads of runs, steps, events, batches, queues, the registry and stats; the base of
    ``RedisBackend``, which sets the connection, keys and scripts they use."""

    _link: CommandLink
    _keys: Keys
    _scripts: Scripts

    async def _read(self, *args: str | int) -> Any:
        """One command that only reads (sent again if its reply is lost)."""
        return await self._link.call(*args, repeatable=True)

    async def get_batch(self, batch_id: str) -> BatchRecord | None:
        fields = as_dict(await self._read("HGETALL", self._keys.batch(batch_id)))
        return codec.decode_batch(batch_id, fields) if fields else None

    async def get_event(self, run_id: str, key: str) -> EventValue | None:
        found = await self._scripts.get_event(run_id, key)
        return None if found is None else EventValue(*found)

    async def list_published(self, run_id: str) -> dict[str, str]:
        stored = as_dict(await self._link.call("HGETALL", self._keys.published(run_id)))
        return {key: stored[key] for key in sorted(stored)}

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        return codec.decode_steps(
            run_id, as_dict(await self._read("HGETALL", self._keys.steps(run_id)))
        )

    async def get_children(self, run_id: str) -> list[str]:
        return list(await self._read("LRANGE", self._keys.children(run_id), 0, -1))

    async def get_queue(self, queue: str) -> QueueSettings:
        stored = await self._read("HMGET", self._keys.settings(queue), "max_parallelism", "paused")
        return codec.decode_settings(queue, *stored)

    async def list_workflows(self) -> list[WorkflowInfo]:
        stored = as_dict(await self._read("HGETALL", self._keys.registry()))
        return [codec.decode_workflow(name, stored[name]) for name in sorted(stored)]

    async def list_workers(self, now: float) -> list[WorkerRecord]:
        return codec.live_workers(await self._read("HVALS", self._keys.workers()), now)

    async def get_run(self, run_id: str) -> RunRecord | None:
        problem, flat = await self._scripts.get_run(run_id)
        if problem is not None:
            raise codec.set_aside_error(run_id, problem)
        fields = as_dict(flat)
        return codec.decode_run(run_id, fields) if fields else None

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        if limit <= 0:
            return RunPage(runs=[], cursor=None)
        hashes = await self._scripts.list_runs(
            limit,
            codec.optional_argument(cursor),
            codec.optional_argument(status),
            codec.optional_argument(workflow),
            codec.optional_argument(queue),
        )
        pages = [as_dict(reply) for reply in hashes]
        runs = readable(lambda fields: codec.decode_run(fields.get("id", "?"), fields), pages)
        return RunPage(runs=runs, cursor=pages[-1].get("id") if len(pages) == limit else None)

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        first, last = (math.floor(moment / 60) * 60 for moment in (since, now))
        return codec.decode_stats(*await self._scripts.get_stats(first, last), now)

    async def get_gates(self, prefix: str) -> list[GateUsage]:
        flat = await self._scripts.get_gates(prefix)
        found = [
            GateUsage(str(flat[i]), int(flat[i + 1]), int(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]
        return sorted(found, key=lambda usage: usage.gate)

    async def get_counters(self, since: float, now: float, period: int) -> list[PeriodCounters]:
        rows = counter_rows(since, now, period)
        reply = await self._scripts.get_counters(rows.first, rows.last, rows.period, rows.hourly)
        return codec.decode_period_counters(reply)

    async def list_skipped_ticks(self, workflow: str | None, limit: int) -> list[SkippedTickRecord]:
        limit = max(1, limit)
        texts = await self._scripts.list_skipped_ticks(workflow or "", limit)
        return codec.decode_skipped_ticks(texts, limit)
