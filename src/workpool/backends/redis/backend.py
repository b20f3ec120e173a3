"""RedisBackend: the Backend protocol over Redis, each operation one Lua script call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import EllipsisType
from typing import cast, get_args

from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

from workpool.backends.base import (
    SKIPPED_TICKS_KEPT,
    BatchRecord,
    CancelResult,
    ClaimResult,
    Enqueued,
    EventSent,
    Finish,
    Lease,
    NewBatch,
    NewRun,
    NewTick,
    QueueSettings,
    RenewResult,
    Rerun,
    RerunFromStep,
    RerunStatus,
    RunAction,
    StepRecord,
    TickStarted,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.checks import (
    check_batch,
    check_finishes,
    check_new_runs,
    check_now,
    check_step,
    check_tick,
)
from workpool.backends.durability import DurabilityReport
from workpool.backends.redis import codec, durability
from workpool.backends.redis.blocking import WaitLink
from workpool.backends.redis.connection import CommandLink
from workpool.backends.redis.credentials import refuse_unneeded_password
from workpool.backends.redis.keys import Keys, check_prefix, split_pair
from workpool.backends.redis.reads import RedisReads, as_dict
from workpool.backends.redis.recovery import RedisRecovery
from workpool.backends.redis.scripts import Scripts
from workpool.backends.redis.url import URL_FORMAT, check_url, describe_url
from workpool.errors import (
    BackendUnavailableError,
    BatchClosedError,
    BatchNotFoundError,
    ConfigurationError,
)

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a TCP (and TLS) connection before giving up."""

LONGEST_WAIT = 24 * 3600.0
"""Seconds: longer waits are cut to this (callers may be woken early anyway)."""

NO_SIGNAL_PAUSE = 0.5
"""Seconds a wait with no signal list to block on (no pair has had a run) lasts."""


class RedisBackend(RedisReads, RedisRecovery):
    """Runs in hashes, queues in sorted sets; see ``keys.py`` for the key layout."""

    def __init__(self, link: CommandLink, waits: WaitLink, prefix: str, location: str = "") -> None:
        """Use ``open``; this takes already-configured connections (``location``: the
        server's URL without its password, for ``repr``)."""
        self._location = location
        self._prefix = prefix
        self._link = link
        self._waits = waits
        self._keys = Keys(prefix)
        self._scripts = Scripts(link, self._keys.tag)

    def __repr__(self) -> str:
        return f"<RedisBackend {self._location} (prefix {self._prefix})>"

    @classmethod
    async def open(cls, url: str, *, prefix: str = "workpool") -> RedisBackend:
        """Connect, check the server answers, and register the scripts."""
        check_prefix(prefix)
        check_url(url)
        try:
            # Only a factory of configured connections (URL options, AUTH, SELECT, TLS):
            # commands go one at a time over one connection, and blocking pops get
            # connections of their own; each link bounds its commands with its own
            # timeout (cheaper than the socket timeout of redis-py).
            connections = ConnectionPool.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=None,
                socket_keepalive=True,
            )
            link, waits = CommandLink(connections), WaitLink(connections)
        except ValueError as error:
            raise ConfigurationError(
                f"malformed Redis URL {describe_url(url)!r}: {error}; {URL_FORMAT}"
            ) from None
        backend = cls(link, waits, prefix, describe_url(url))
        try:
            await link.call("PING", repeatable=True)
            await refuse_unneeded_password(link, connections.connection_kwargs, describe_url(url))
            await backend._scripts.load()
        except ConfigurationError:
            await backend.close()
            raise
        except (RedisError, OSError, BackendUnavailableError) as error:
            await backend.close()
            raise BackendUnavailableError(
                f"cannot reach Redis at {describe_url(url)} ({error}): check that the "
                "server is running and the host, port, password and TLS scheme are right"
            ) from None
        return backend

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        *,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        check_new_runs(runs, now)
        batch_id = check_batch(runs, batch)
        if batch_id is not None:
            found = await self._enqueue_batch(batch_id, batch, added_by, runs, now)
        elif runs:
            found = await self._scripts.enqueue(codec.seconds(now), codec.encode_runs(runs, now))
        else:
            return []
        return [self._enqueued(run, position, found) for position, run in enumerate(runs)]

    async def _enqueue_batch(
        self,
        batch_id: str,
        batch: NewBatch | None,
        added_by: str | None,
        runs: Sequence[NewRun],
        now: float,
    ) -> dict[int, str]:
        """enqueue_batch.lua's runs not created; the refusals it reports raised."""
        mode, detail = "add", added_by or ""
        if batch is not None:
            mode = "open" if batch.open else "closed"
            detail = "" if batch.callback is None else codec.encode_hook(batch.callback)
        found = await self._scripts.enqueue_batch(
            codec.seconds(now), batch_id, mode, detail, codec.encode_runs(runs, now)
        )
        if found == "not_found":
            raise BatchNotFoundError(f"no batch with id {batch_id!r} exists; nothing was stored")
        if found == "closed":
            raise BatchClosedError(
                f"batch {batch_id} is closed: only its own runs may add to it, while they "
                "run; nothing was stored"
            )
        if isinstance(found, str):
            raise ValueError(f"batch {batch_id} exists already; nothing was written")
        return found

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        stored = await self._scripts.close_batch(codec.seconds(now), batch_id)
        return None if stored is None else codec.decode_batch(batch_id, as_dict(stored))

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        return await self._scripts.cancel_batch(codec.seconds(now), batch_id, limit, reason)

    @staticmethod
    def _enqueued(run: NewRun, position: int, found: dict[int, str]) -> Enqueued:
        """The outcome of the run at ``position`` from enqueue.lua's reply."""
        if position not in found:
            return Enqueued(run_id=run.id, created=True)
        return Enqueued(run_id=found[position], created=False)

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        check_tick(tick, now)
        reply = await self._scripts.start_tick(
            codec.seconds(now),
            tick.trigger,
            codec.seconds(tick.scheduled_at),
            tick.overlap,
            SKIPPED_TICKS_KEPT,
            codec.encode_runs([tick.run], now),
        )
        return codec.decode_tick_started(tick, now, reply)

    async def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        *,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        next_wake_at, isolated_since, set_aside, rows = await self._scripts.claim(
            codec.seconds(now),
            codec.seconds(now + lease_seconds),
            worker_id,
            max(0, limit),
            max_lease_losses,
            queues,
            None if workflows is None else list(dict.fromkeys(workflows)),
            alone,
        )
        return ClaimResult(
            runs=[codec.decode_claimed(row) for row in rows],
            next_wake_at=None if next_wake_at is None else float(next_wake_at),
            isolated_since=None if isolated_since is None else float(isolated_since),
            set_aside=codec.decode_set_aside(set_aside),
        )

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        *,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        if not leases:
            return RenewResult(lost=frozenset(), cancel_requested=frozenset())
        lost, cancel_requested, canceled_by = await self._scripts.renew(
            codec.seconds(now + lease_seconds), codec.renewals(leases, progress or {})
        )
        return RenewResult(frozenset(lost), frozenset(cancel_requested), canceled_by)

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        check_finishes(finishes, now)
        if not finishes:
            return []
        return await self._scripts.finish(codec.seconds(now), codec.encode_finishes(finishes))

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None = None
    ) -> StepRecord | None:
        check_step(lease.run_id, step, now, child)
        stored = await self._scripts.save_step(
            codec.seconds(now),
            (lease.run_id, lease.token),
            step.name,
            codec.encode_step(step),
            None if child is None else (step.kind, codec.encode_runs([child], now)),
        )
        return None if stored is None else codec.decode_step(lease.run_id, step.name, stored)

    async def take_event(
        self, lease: Lease, step: StepRecord, key: str, now: float
    ) -> StepRecord | None:
        check_step(lease.run_id, step, now, None)
        stored = await self._scripts.take_event(
            codec.seconds(now), (lease.run_id, lease.token), step.name, codec.encode_step(step), key
        )
        return None if stored is None else codec.decode_step(lease.run_id, step.name, stored)

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None = None,
        trace_context: str | None = None,
    ) -> EventSent:
        check_now(now)
        result = await self._scripts.send_event(
            codec.seconds(now), run_id, key, payload, event_id, trace_context
        )
        if result not in get_args(EventSent):
            raise RuntimeError(f"send_event.lua returned an unknown result {result!r}")
        return cast(EventSent, result)

    async def set_event(self, lease: Lease, key: str, value: str) -> bool:
        return await self._scripts.set_event((lease.run_id, lease.token), key, value)

    async def set_queue(
        self,
        queue: str,
        *,
        max_parallelism: int | EllipsisType | None = ...,
        paused: bool | None = None,
        only_if_new: bool = False,
    ) -> QueueSettings:
        limit, paused_flag = codec.encode_queue_change(max_parallelism, paused)
        stored = await self._scripts.set_queue(queue, limit, paused_flag, only_if_new)
        return codec.decode_settings(queue, *stored)

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        records = codec.encode_registry(app, workflows, now)
        return await self._scripts.sync_registry(app, codec.seconds(now - grace), records)

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        return await self._scripts.restore_registry(codec.encode_registry(app, workflows, now))

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        return await self._scripts.heartbeat(
            codec.seconds(now),
            worker.id,
            codec.seconds(worker.expires_at),
            codec.encode_worker(replace(worker, seen_at=now)),
            worker.workflows,
        )

    async def remove_worker(self, worker_id: str) -> None:
        await self._scripts.heartbeat(codec.seconds(0.0), worker_id, "0", "", ())

    async def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        return await self._scripts.fail_unserved(
            codec.seconds(now), queue, workflow, codec.seconds(available_before), limit, error
        )

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        return await self._scripts.acquire_lease(
            name,
            holder,
            codec.seconds(now),
            codec.seconds(now + seconds),
            codec.milliseconds(seconds),
        )

    async def release(
        self, leases: Sequence[Lease], now: float, *, attempt_used: bool = False
    ) -> None:
        if leases:
            pairs = codec.lease_pairs(leases)
            await self._scripts.release(codec.seconds(now), attempt_used, pairs)

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        result = await self._scripts.cancel(codec.seconds(now), run_id, reason, trace_context)
        if result not in get_args(CancelResult):
            raise RuntimeError(f"cancel.lua returned an unknown result {result!r}")
        return cast(CancelResult, result)

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        options: dict[str, object] = {"limit": limit}
        if before is not None:
            options["before"] = codec.seconds(before)
        if workflow is not None:
            options["workflow"] = workflow
        if reason is not None:
            options["reason"] = reason
        return await self._scripts.cancel_many(codec.seconds(now), json.dumps(options))

    async def purge(
        self,
        finished_before: float,
        limit: int,
        counters_before: float,
        hours_before: float = 0.0,
    ) -> int:
        return await self._scripts.purge(
            codec.seconds(finished_before),
            max(0, limit),
            codec.seconds(counters_before),
            codec.seconds(hours_before),
        )

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        status, found = await self._scripts.rerun(codec.seconds(now), run_id, new_id)
        if status == "taken":
            raise ValueError(f"cannot rerun {run_id} as {new_id}: a run with that id exists")
        if status not in get_args(RerunStatus):
            raise RuntimeError(f"rerun.lua returned an unknown result {status!r}")
        return Rerun(status=cast(RerunStatus, status), run_id=found)

    async def rerun_from_step(
        self, run_id: str, step: str, reason: str, now: float
    ) -> RerunFromStep:
        check_now(now)
        note = json.dumps({"step": step, "reason": reason, "at": now})
        status = await self._scripts.rerun_from_step(codec.seconds(now), run_id, step, note)
        if status not in get_args(RerunFromStep):
            raise RuntimeError(f"rerun_from_step.lua returned an unknown result {status!r}")
        return cast(RerunFromStep, status)

    async def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        check_now(now)
        return await self._scripts.act_on_run(codec.seconds(now), run_id, action) or None

    async def wait_for_work(
        self, queues: Sequence[str], timeout: float, *, workflows: Sequence[str] | None = None
    ) -> None:
        # BLPOP takes its timeout in seconds with millisecond resolution; 0 means forever.
        if not queues or timeout < 0.001:
            return
        signals = await self._signals(queues, workflows)
        if not signals:  # no pair to watch yet: look again soon (an early return is allowed)
            await asyncio.sleep(min(timeout, NO_SIGNAL_PAUSE))
            return
        await self._waits.pop(signals, min(timeout, LONGEST_WAIT))

    async def _signals(self, queues: Sequence[str], workflows: Sequence[str] | None) -> list[str]:
        """The signal lists of the (queue, workflow) pairs a waiter serves; without
        ``workflows``, of every pair of these queues that has had a run."""
        if workflows is None:
            wanted = set(queues)
            names = await self._read("SMEMBERS", self._keys.pairs())
            pairs = [split_pair(str(name)) for name in names]
            return sorted(self._keys.signal(*pair) for pair in pairs if pair[0] in wanted)
        return [self._keys.signal(queue, workflow) for queue in queues for workflow in workflows]

    async def check_durability(self) -> DurabilityReport:
        """Whether the server may evict keys or keeps nothing on disk (``durability``)."""
        return await durability.check(self._link)

    async def close(self) -> None:
        await self._link.close()
        await self._waits.close()
