"""The Lua scripts: loaded once per backend, called by SHA, one typed wrapper each.

Each operation script is ``lua/<operation>.lua`` after the definitions of
``lua/library/`` it uses (``sources.py``), so each call is one self-contained script.
Times travel as decimal strings (``repr`` of a float) so neither Lua nor Redis rounds
them; the only times the scripts compute (rate limit reservations, run times) are
written with 17 significant digits, which read back as the same float.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from workpool.backends.redis.connection import CommandLink
from workpool.backends.redis.sources import script_source
from workpool.errors import CorruptRecordError

OPERATIONS = (
    "enqueue",
    "enqueue_batch",
    "close_batch",
    "cancel_batch",
    "claim",
    "renew",
    "finish",
    "save_step",
    "take_event",
    "send_event",
    "set_event",
    "get_event",
    "release",
    "cancel",
    "cancel_many",
    "set_queue",
    "sync_registry",
    "restore_registry",
    "acquire_lease",
    "list_runs",
    "get_stats",
    "get_counters",
    "get_gates",
    "purge",
    "rerun",
    "rerun_from_step",
    "act_on_run",
    "act_on_runs",
    "heartbeat",
    "fail_unserved",
    "start_tick",
    "list_skipped_ticks",
    "get_run",
)

REPEATABLE = frozenset(
    (
        "enqueue",  # idempotent by run id: a repeat finds the runs and returns them
        "enqueue_batch",  # the same; a repeat finds its batch holding its runs
        "close_batch",
        "renew",
        "set_event",
        "get_event",
        "get_run",
        "release",
        "set_queue",
        "acquire_lease",
        "list_runs",
        "get_stats",
        "get_counters",
        "get_gates",
        "heartbeat",
        "restore_registry",  # HSETNX: a repeat finds the records stored
        "list_skipped_ticks",
    )
)
"""The operations whose second run has the effect and the reply of the first: sent
again if the connection is lost before their reply (``CommandLink.call``). The others
would report something else the second time (a claim takes other runs, a finish or a
cancel finds its work done...), so their callers are told
that the outcome is unknown instead."""

CORRUPT = "CORRUPT "
"""How a script's error reply starts when the run it was asked about has a corrupt
record (lua/library/corrupt.lua); the rest is CorruptRecordError's message."""

ClaimedRow = list[Any]
"""[run id, token, attempt, workflow, queue, input, retry | None, created_at, available_at,
has_steps (1 | 0), claims, isolated (1 | 0), timeout | None, elapsed, batch id | None]"""


class Script:
    """One operation script, called by SHA and loaded again if the server lost it."""

    def __init__(self, link: CommandLink, tag: str, operation: str) -> None:
        self._link = link
        self._tag = tag
        self.source = script_source(operation)
        self.sha = hashlib.sha1(self.source.encode("utf-8")).hexdigest()
        self._repeatable = operation in REPEATABLE
        self._what = f"{operation}.lua"

    async def load(self) -> None:
        """Register the script on the server."""
        await self._link.call("SCRIPT", "LOAD", self.source, repeatable=True)

    async def __call__(self, args: Sequence[str | int]) -> Any:
        call = ("EVALSHA", self.sha, 1, self._tag, *args)
        try:
            try:
                return await self._link.call(*call, repeatable=self._repeatable, what=self._what)
            except NoScriptError:  # flushed or restarted server: load, then call again
                await self.load()
                return await self._link.call(*call, repeatable=self._repeatable, what=self._what)
        except ResponseError as error:
            message = str(error)
            if message.startswith(CORRUPT):  # a run whose record is corrupt (checks.lua)
                raise CorruptRecordError(message.removeprefix(CORRUPT)) from None
            raise


class Scripts:
    """The scripts of one backend, bound to its key prefix tag."""

    def __init__(self, link: CommandLink, tag: str) -> None:
        self._enqueue = Script(link, tag, "enqueue")
        self._enqueue_batch = Script(link, tag, "enqueue_batch")
        self._close_batch = Script(link, tag, "close_batch")
        self._cancel_batch = Script(link, tag, "cancel_batch")
        self._claim = Script(link, tag, "claim")
        self._renew = Script(link, tag, "renew")
        self._finish = Script(link, tag, "finish")
        self._save_step = Script(link, tag, "save_step")
        self._take_event = Script(link, tag, "take_event")
        self._send_event = Script(link, tag, "send_event")
        self._set_event = Script(link, tag, "set_event")
        self._get_event = Script(link, tag, "get_event")
        self._release = Script(link, tag, "release")
        self._cancel = Script(link, tag, "cancel")
        self._cancel_many = Script(link, tag, "cancel_many")
        self._set_queue = Script(link, tag, "set_queue")
        self._sync_registry = Script(link, tag, "sync_registry")
        self._restore_registry = Script(link, tag, "restore_registry")
        self._acquire_lease = Script(link, tag, "acquire_lease")
        self._list_runs = Script(link, tag, "list_runs")
        self._get_stats = Script(link, tag, "get_stats")
        self._get_counters = Script(link, tag, "get_counters")
        self._get_gates = Script(link, tag, "get_gates")
        self._purge = Script(link, tag, "purge")
        self._rerun = Script(link, tag, "rerun")
        self._rerun_from_step = Script(link, tag, "rerun_from_step")
        self._act_on_run = Script(link, tag, "act_on_run")
        self._act_on_runs = Script(link, tag, "act_on_runs")
        self._heartbeat = Script(link, tag, "heartbeat")
        self._fail_unserved = Script(link, tag, "fail_unserved")
        self._start_tick = Script(link, tag, "start_tick")
        self._list_skipped_ticks = Script(link, tag, "list_skipped_ticks")
        self._get_run = Script(link, tag, "get_run")

    async def load(self) -> None:
        """Load every script now, so the first call of each is a plain EVALSHA. A later
        SCRIPT FLUSH or restart is survived anyway: a call that meets NOSCRIPT loads
        its script and retries."""
        for operation in OPERATIONS:
            await getattr(self, f"_{operation}").load()

    async def enqueue(self, now: str, runs: Sequence[str]) -> dict[int, str]:
        """The runs not created: their position in the batch (from 0) -> the stored run
        id."""
        return _not_created(await self._enqueue([now, *runs]))

    async def enqueue_batch(
        self, now: str, batch_id: str, mode: str, detail: str, runs: Sequence[str]
    ) -> str | dict[int, str]:
        """The runs not created, as ``enqueue`` returns them; or, when nothing was
        written, why: 'not_found', 'closed' or 'exists'. ``mode``: 'add', 'open' or
        'closed'; ``detail``: adding, the id of the run of the batch that adds, or '';
        creating, the new batch's hook JSON text, or ''."""
        reply = await self._enqueue_batch([now, batch_id, mode, detail, *runs])
        if reply[0] != "stored":
            return str(reply[0])
        return _not_created(reply[1:])

    async def close_batch(self, now: str, batch_id: str) -> Any:
        """The batch's hash as now stored (an HGETALL reply), or None."""
        return await self._close_batch([now, batch_id])

    async def cancel_batch(
        self, now: str, batch_id: str, limit: int, reason: str | None
    ) -> int | None:
        """How many runs were canceled or cancel-requested; None: no such batch."""
        args: list[str | int] = [now, batch_id, limit]
        if reason is not None:
            args.append(reason)
        changed = int(await self._cancel_batch(args))
        return None if changed < 0 else changed

    async def claim(
        self,
        now: str,
        lease_expires_at: str,
        worker_id: str,
        limit: int,
        max_lease_losses: int,
        queues: Sequence[str],
        workflows: Sequence[str] | None,
        alone: bool,
    ) -> tuple[str | None, str | None, list[str], list[ClaimedRow]]:
        """(next wake time or None, earliest run to isolate left or None, runs set aside
        as flat (run id, problem) pairs, claimed rows); ``workflows`` None: every
        workflow is served."""
        args: list[str | int] = [now, lease_expires_at, worker_id, limit, max_lease_losses]
        args.append("1" if alone else "0")
        if workflows is None:
            args.append(-1)
        else:
            args.append(len(workflows))
            args.extend(workflows)
        args.extend(queues)
        reply = await self._claim(args)
        return reply[0], reply[1], list(reply[2]), list(reply[3:])

    async def renew(
        self, lease_expires_at: str, leases: Sequence[tuple[str, str, str]]
    ) -> tuple[list[str], list[str], dict[str, str]]:
        """(lost run ids, cancel-requested run ids, run id -> its canceller's trace
        context); each lease is (run id, token, progress JSON text or '')."""
        args = [lease_expires_at, *(part for lease in leases for part in lease)]
        lost, cancel_requested, *canceled_by = await self._renew(args)
        pairs = canceled_by[0] if canceled_by else []
        return list(lost), list(cancel_requested), dict(zip(pairs[::2], pairs[1::2], strict=True))

    async def finish(self, now: str, finishes_json: str) -> list[bool]:
        """Whether each finish was applied."""
        applied = await self._finish([now, finishes_json])
        return [bool(flag) for flag in applied]

    async def save_step(
        self,
        now: str,
        lease: tuple[str, str],
        name: str,
        step_json: str,
        child: tuple[str, Sequence[str]] | None,
    ) -> str | None:
        """The step JSON text as stored, or None if the lease is not held. ``child``:
        (step kind, the child's enqueue fields)."""
        args = [now, *lease, name, step_json]
        if child is not None:
            args += [child[0], *child[1]]
        stored = await self._save_step(args)
        return None if stored is None else str(stored)

    async def take_event(
        self, now: str, lease: tuple[str, str], name: str, step_json: str, key: str
    ) -> str | None:
        """The step JSON text as stored, or None if the lease is not held."""
        stored = await self._take_event([now, *lease, name, step_json, key])
        return None if stored is None else str(stored)

    async def send_event(
        self,
        now: str,
        run_id: str,
        key: str,
        payload: str,
        event_id: str | None,
        trace_context: str | None,
    ) -> str:
        """'sent', 'duplicate', 'not_found' or 'finished'."""
        arguments = [now, run_id, key, payload, event_id or "", trace_context or ""]
        return str(await self._send_event(arguments))

    async def set_event(self, lease: tuple[str, str], key: str, value: str) -> bool:
        """Whether the lease was held and the value stored."""
        return bool(await self._set_event([*lease, key, value]))

    async def get_event(self, run_id: str, key: str) -> tuple[str, str | None] | None:
        """(the run's status, the value or None), or None for an unknown run."""
        reply = await self._get_event([run_id, key])
        if reply is None:
            return None
        return str(reply[0]), None if reply[1] is None else str(reply[1])

    async def release(self, now: str, attempt_used: bool, leases: Sequence[tuple[str, str]]) -> int:
        """How many leases were held and released."""
        args = [now, "1" if attempt_used else "0", *(part for lease in leases for part in lease)]
        return int(await self._release(args))

    async def cancel(
        self, now: str, run_id: str, reason: str | None, trace_context: str | None
    ) -> str:
        """The CancelResult string."""
        args = [now, run_id, trace_context or ""]
        return str(await self._cancel(args if reason is None else [*args, reason]))

    async def cancel_many(self, now: str, options_json: str) -> int:
        """How many runs were canceled or cancel-requested."""
        return int(await self._cancel_many([now, options_json]))

    async def set_queue(
        self, queue: str, max_parallelism: str, paused: str, only_if_new: bool
    ) -> tuple[str | None, str]:
        """(max_parallelism or None, paused '1' | '0') as now stored. ``max_parallelism``:
        'keep', 'none' or a whole number; ``paused``: 'keep', '1' or '0'."""
        limit, stored_paused = await self._set_queue(
            [queue, max_parallelism, paused, "1" if only_if_new else "0"]
        )
        return limit, str(stored_paused)

    async def sync_registry(self, app: str, cutoff: str, records: Sequence[str]) -> list[str]:
        """The removed workflow names, sorted."""
        return [str(name) for name in await self._sync_registry([app, cutoff, *records])]

    async def restore_registry(self, records: Sequence[str]) -> list[str]:
        """The workflow names stored (they had no record), sorted."""
        return [str(name) for name in await self._restore_registry(records)]

    async def acquire_lease(
        self, name: str, holder: str, now: str, expires_at: str, ttl_ms: str
    ) -> bool:
        """Whether ``holder`` now holds the named lease (until ``expires_at``)."""
        return bool(await self._acquire_lease([name, holder, now, expires_at, ttl_ms]))

    async def list_runs(
        self, limit: int, cursor: str, status: str, workflow: str, queue: str
    ) -> list[Any]:
        """The page's run hashes (HGETALL replies), by id descending. ``limit`` must be at
        least 1; an empty ``cursor``, ``status``, ``workflow`` or ``queue`` means none."""
        return list(await self._list_runs([limit, cursor, status, workflow, queue]))

    async def get_stats(self, first_minute: int, last_minute: int) -> tuple[Any, Any, Any, Any]:
        """(activity, counters, oldest, worker records) as flat lists; see get_stats.lua."""
        activity, counters, oldest, workers = await self._get_stats([first_minute, last_minute])
        return activity, counters, oldest, workers

    async def get_gates(self, prefix: str) -> list[Any]:
        """Flat (gate, admitted, waiting) triples of the gates whose id starts with
        ``prefix``; see get_gates.lua."""
        return list(await self._get_gates([prefix]))

    async def get_counters(self, first: int, last: int, period: int, hourly: bool) -> list[Any]:
        """Per period, its start then its counters' summed fields and values (a flat
        list); see get_counters.lua."""
        source = "hour" if hourly else "minute"
        return list(await self._get_counters([first, last, period, source]))

    async def purge(
        self, finished_before: str, limit: int, counters_before: str, hours_before: str
    ) -> int:
        """How many runs were deleted."""
        return int(await self._purge([finished_before, limit, counters_before, hours_before]))

    async def rerun(self, now: str, run_id: str, new_id: str) -> tuple[str, str | None]:
        """(status, run id or None); status 'taken' when ``new_id`` names a run already."""
        reply = await self._rerun([now, run_id, new_id])
        return str(reply[0]), None if len(reply) < 2 else str(reply[1])

    async def rerun_from_step(self, now: str, run_id: str, step: str, note: str) -> str:
        """'queued', 'not_found', 'not_stopped' or 'no_step'; see rerun_from_step.lua."""
        return str(await self._rerun_from_step([now, run_id, step, note]))

    async def act_on_run(self, now: str, run_id: str, action: str) -> str:
        """The run's status before ('' for no run); see act_on_run.lua."""
        return str(await self._act_on_run([now, run_id, action]))

    async def act_on_runs(self, now: str, options_json: str) -> tuple[int, str | None]:
        """(runs changed, cursor or None)."""
        changed, cursor = await self._act_on_runs([now, options_json])
        return int(changed), str(cursor) if cursor else None

    async def heartbeat(
        self, now: str, worker_id: str, expires_at: str, record: str, workflows: Sequence[str]
    ) -> list[str]:
        """Store a worker's record (``record`` ''; remove it) and drop expired ones;
        the names among ``workflows`` that have no registry record, sorted."""
        return [
            str(name)
            for name in await self._heartbeat([now, worker_id, expires_at, record, *workflows])
        ]

    async def fail_unserved(
        self, now: str, queue: str, workflow: str, before: str, limit: int, error: str
    ) -> int:
        """How many runs were failed."""
        return int(await self._fail_unserved([now, queue, workflow, before, limit, error]))

    async def start_tick(
        self, now: str, trigger: str, scheduled_at: str, overlap: str, kept: int, run: Sequence[str]
    ) -> list[str]:
        """['created', run id], ['found', run id] or ['skipped', reason, active run id]."""
        reply = await self._start_tick([now, trigger, scheduled_at, overlap, kept, *run])
        return [str(part) for part in reply]

    async def list_skipped_ticks(self, workflow: str, limit: int) -> list[str]:
        """JSON texts of skipped ticks, the newest ``limit`` of each trigger (of
        ``workflow``; '' every workflow)."""
        return [str(record) for record in await self._list_skipped_ticks([workflow, limit])]

    async def get_run(self, run_id: str) -> tuple[str | None, list[str]]:
        """(what is wrong with the run if it was set aside, else None; its hash as a
        flat HGETALL reply, empty if it has none)."""
        problem, fields = await self._get_run([run_id])
        return problem, list(fields)


def _not_created(flat: Sequence[Any]) -> dict[int, str]:
    """enqueue.lua's reply: position (from 0) -> the stored run id."""
    return {int(flat[i]) - 1: str(flat[i + 1]) for i in range(0, len(flat), 2)}
