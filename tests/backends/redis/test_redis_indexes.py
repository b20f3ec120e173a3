"""After any mix of operations, every Redis index agrees with the runs' statuses, and
every gate with its runs: a queued claimable run is in exactly its (queue, workflow)
pair's ready set, scored by its available_at (less 1e12 for a run to isolate), and each
queue's heads hold exactly the lowest score of each non-empty ready set of the queue. A
queued gated run is in exactly one of its pair's ready set (admitted) or its gate's
waiting set, each gate's count is its admitted runs (queued and ready, or running), and
no gate admits more than its limit. Every run is in exactly the list index of its
(queue, workflow, status), terminal runs (only they) are in the finished set, and a
purge of every terminal run leaves no key or entry naming one."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import cast

from redis.asyncio import Redis
from redis.crc import key_slot

from workpool.backends.base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    CompletionHook,
    Finish,
    Lease,
    NewRun,
    RateLimitSpec,
    Rerun,
    StepKind,
    StepRecord,
    StepStatus,
)
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys, gate_id, pair
from workpool.validation import STRICT_STEP

QUEUES = ("default", "slow:lane")
WORKFLOWS = ("send_email", "send:sms")
NOW = 1_700_000_000.123456
ISOLATED_OFFSET = 3e12
"""A run to isolate is scored ``rank - ISOLATED_OFFSET`` (lua/library/ready.lua)."""
GATED_QUEUES = ("gated", "gated:two")
GATES = (
    # (workflow, concurrency key, limit): names with ':' must not merge gates.
    ("send:sms", None, 1),
    ("send:sms", "a:b", 2),
    ("send", "sms:a:b", 2),
    ("send", "", 1),
    ("send", None, 1),
)


def a_run(index: int, available_at: float) -> NewRun:
    hook = CompletionHook(
        workflow="notify",
        queue="default",
        context="{}",
        retry=None,
        on_failure_only=False,
        priority=2,
        rank_offset=2 * STRICT_STEP,
    )
    return NewRun(
        id=f"run-{index}-{uuid.uuid4().hex[:6]}",
        workflow=WORKFLOWS[index % 2],
        queue=QUEUES[index % 2],
        input=f'{{"index": {index}}}',
        available_at=available_at,
        hooks=(hook,) if index % 3 == 0 else (),
        idempotency_key=f"key-{index}" if index % 4 == 0 else None,
    )


def prioritized(run: NewRun, index: int) -> NewRun:
    """The run with a priority from -3 to 3 (0 for one in seven), by its index."""
    priority = index % 7 - 3
    return replace(run, priority=priority, rank_offset=priority * STRICT_STEP)


async def mixed_history(backend: RedisBackend) -> set[str]:
    """Enqueue, claim, renew, finish every way, release, cancel, reap, save steps,
    start children, suspend and wake. Returns the ids of runs suspended with a timer."""
    runs = [prioritized(a_run(i, NOW + (60 if i % 5 == 0 else 0)), i) for i in range(40)]
    await backend.enqueue(runs, NOW)
    claimed = (await backend.claim(QUEUES, "worker-a", 12, 30, 2, NOW)).runs
    leases = [run.lease for run in claimed]
    await backend.renew(leases[:4], 30, NOW + 1)
    await backend.cancel(claimed[0].lease.run_id, "stop", NOW + 1)
    statuses = ["succeeded", "failed", "canceled", "retry", "retry"]
    finishes = [
        Finish(lease=lease, status=status, output="1", error='{"type": "E"}', retry_at=NOW + 5)  # type: ignore[arg-type]
        for lease, status in zip(leases[:5], statuses, strict=True)
    ]
    await backend.finish(finishes, NOW + 2)
    await backend.release(leases[5:7], NOW + 2)
    await backend.cancel(runs[1].id, None, NOW + 2)
    await backend.cancel_many(None, WORKFLOWS[1], "sweep", 3, NOW + 2)
    await backend.claim(QUEUES, "worker-b", 3, 10, 2, NOW + 3)
    # Leases of worker-a (left running) and worker-b expire: reaped, some fail.
    await backend.claim(QUEUES, "worker-c", 2, 10, 2, NOW + 100)
    await backend.claim(QUEUES, "worker-c", 0, 10, 2, NOW + 200)
    later = [a_run(i, NOW + 200 + (60 if i % 2 else 0)) for i in range(40, 46)]
    await backend.enqueue(later, NOW + 200)
    last = (await backend.claim(QUEUES, "worker-d", 2, 10, 2, NOW + 200)).runs
    await backend.cancel(last[0].lease.run_id, None, NOW + 200)
    # A worker that holds nothing and serves one workflow takes a reaped run, alone.
    served = [WORKFLOWS[0]]
    alone = await backend.claim(
        QUEUES, "worker-e", 5, 300, 2, NOW + 200, workflows=served, alone=True
    )
    assert [(run.workflow, run.isolated) for run in alone.runs] == [(WORKFLOWS[0], True)]
    timers = await steps_history(backend, NOW + 300)
    timers |= await gates_history(backend, NOW + 400)
    await queues_history(backend, NOW + 2000)
    await rates_history(backend, NOW + 3000)
    await reruns_history(backend, NOW + 4000)
    return timers


def a_step(name: str, now: float, kind: StepKind) -> StepRecord:
    status: StepStatus = "waiting" if kind == "workflow" else "succeeded"
    return StepRecord(name=name, kind=kind, status=status, attempts=1, started_at=now)


async def steps_history(backend: RedisBackend, now: float) -> set[str]:
    """Parents in queue "steps" suspend on a child, a timer or both, or are canceled
    while suspended; one child ends and wakes its parent."""
    parents = [replace(a_run(100 + i, now), queue="steps") for i in range(5)]
    await backend.enqueue(parents, now)
    claimed = (await backend.claim(["steps"], "worker-s", 5, 30, 2, now)).runs
    on_child, on_timer, on_both, emits, canceled = (run.lease for run in claimed)
    children: dict[str, str] = {}
    started: tuple[tuple[Lease, StepKind], ...] = (
        (on_child, "workflow"),
        (on_both, "workflow"),
        (emits, "emit"),
        (canceled, "workflow"),
    )
    for lease, kind in started:
        child = replace(a_run(200 + len(children), now), queue="children")
        saved = await backend.save_step(lease, a_step("start", now, kind), now, child)
        assert saved is not None
        assert saved.child_run_id == child.id
        children[lease.run_id] = child.id
    await backend.save_step(emits, a_step("plain", now, "run"), now)
    suspends = [
        Finish(on_child, "suspend", waiting_on=(children[on_child.run_id],)),
        Finish(on_timer, "suspend", wake_at=now + 600),
        Finish(on_both, "suspend", wake_at=now + 900, waiting_on=(children[on_both.run_id],)),
        Finish(emits, "succeeded", output="1"),
        Finish(canceled, "suspend", waiting_on=(children[canceled.run_id],)),
    ]
    assert await backend.finish(suspends, now) == [True] * 5
    # Every child runs; the child of on_both ends: that parent is queued, its timer
    # dropped. Canceling a suspended parent cancel-requests its running child.
    running = (await backend.claim(["children"], "worker-s", 4, 30, 2, now + 1)).runs
    [ended] = [run for run in running if run.lease.run_id == children[on_both.run_id]]
    assert await backend.finish([Finish(ended.lease, "succeeded", output="2")], now + 2)
    assert await backend.cancel(canceled.run_id, None, now + 2) == "canceled"
    return {on_timer.run_id}


def a_gated_run(index: int, available_at: float) -> NewRun:
    workflow, key, limit = GATES[index % len(GATES)]
    hook = CompletionHook(
        workflow="notify:gated",
        queue=GATED_QUEUES[0],
        context="{}",
        retry=None,
        on_failure_only=False,
        max_concurrency=1,
    )
    return NewRun(
        id=f"gated-{index}-{uuid.uuid4().hex[:6]}",
        workflow=workflow,
        queue=GATED_QUEUES[index % 2],
        input="{}",
        available_at=available_at,
        hooks=(hook,) if index % 4 == 0 else (),
        max_concurrency=limit,
        concurrency_key=key,
    )


async def gates_history(backend: RedisBackend, now: float) -> set[str]:
    """Gated runs (limits 1 and 2, with and without keys) enqueued, admitted, waiting,
    claimed, finished every way, retried now and later, suspended and resumed at once,
    released, canceled (waiting, admitted, running), reaped and promoted; a gated child
    wakes its gated parent, which waits at its full gate. Returns the ids of runs
    suspended with a timer."""
    runs = [a_gated_run(i, now + (60 if i % 6 == 5 else 0)) for i in range(30)]
    await backend.enqueue(runs, now)
    for run in runs:  # the gate ids the scripts build, from (workflow, key)
        stored = await backend._link.call("HGET", backend._keys.run(run.id), "gate")
        assert stored == gate_id(run.workflow, run.concurrency_key)
    # Its gate admitted runs[0], the first of the batch: runs[10] waits.
    assert await backend.cancel(runs[10].id, None, now) == "canceled"
    claimed = (await backend.claim(GATED_QUEUES, "gate-a", 20, 30, 2, now)).runs
    assert len(claimed) == sum(limit for _, _, limit in GATES)
    leases = [run.lease for run in claimed]
    finishes = [
        Finish(leases[0], "succeeded", output="1"),
        Finish(leases[1], "failed", error='{"type": "E"}'),
        Finish(leases[2], "retry", error='{"type": "E"}', retry_at=now + 1),
        Finish(leases[3], "retry", error='{"type": "E"}', retry_at=now + 5),
        Finish(leases[4], "suspend", wake_at=now + 600),
        Finish(leases[5], "suspend", wake_at=now + 1),
    ]
    assert await backend.finish(finishes, now + 1) == [True] * 6
    again = (await backend.claim(GATED_QUEUES, "gate-b", 10, 10, 2, now + 2)).runs
    await backend.release([again[0].lease], now + 2)
    await backend.cancel(again[1].lease.run_id, "stop", now + 2)  # running: requested
    await backend.cancel(runs[7].id, None, now + 3)
    await backend.cancel(runs[12].id, None, now + 3)
    await backend.cancel_many(None, "send", "sweep", 3, now + 3)
    # gate-b's leases expire first: reaped and requeued through their gates, or ended.
    await backend.claim(GATED_QUEUES, "gate-c", 3, 10, 2, now + 100)
    await backend.claim(GATED_QUEUES, "gate-c", 0, 10, 2, now + 200)
    await backend.enqueue([a_gated_run(i, now + 900) for i in range(30, 33)], now + 200)
    last = (await backend.claim(GATED_QUEUES, "gate-d", 3, 300, 2, now + 200)).runs
    back_now = [  # left queued: each goes back through its gate
        Finish(last[0].lease, "retry", error='{"type": "E"}', retry_at=now + 900),
        Finish(last[1].lease, "retry", error='{"type": "E"}', retry_at=now + 200),
        Finish(last[2].lease, "suspend", wake_at=now + 200),
    ]
    assert await backend.finish(back_now, now + 200) == [True] * 3
    waiting = backend._keys.gate_waiting(gate_id(*GATES[0][:2]))
    [oldest] = await backend._link.call("ZRANGE", waiting, 0, 0)
    assert await backend.cancel(oldest, None, now + 200) == "canceled"  # frees nothing
    await gated_parent_and_child(backend, now + 300)
    return {leases[4].run_id}


def gated_one_at_a_time(index: int, available_at: float) -> NewRun:
    return replace(a_gated_run(index, available_at), max_concurrency=1, concurrency_key=None)


async def gated_parent_and_child(backend: RedisBackend, now: float) -> None:
    """Two parents behind one place; the first suspends on a gated child, which wakes
    it when it ends: the parent is queued again but waits, as the second one runs."""
    parents = [
        replace(gated_one_at_a_time(300 + i, now + i * 0.001), workflow="parent", queue="p")
        for i in range(2)
    ]
    await backend.enqueue(parents, now)
    [first] = (await backend.claim(["p"], "gate-p", 2, 30, 2, now)).runs
    child = replace(gated_one_at_a_time(400, now), workflow="child", queue="c")
    saved = await backend.save_step(first.lease, a_step("c", now, "workflow"), now, child)
    assert saved is not None
    suspend = Finish(first.lease, "suspend", waiting_on=(child.id,))
    assert await backend.finish([suspend], now)
    [second] = (await backend.claim(["p"], "gate-p", 2, 30, 2, now + 1)).runs
    assert second.lease.run_id == parents[1].id
    [ran] = (await backend.claim(["c"], "gate-p", 2, 30, 2, now + 1)).runs
    assert await backend.finish([Finish(ran.lease, "succeeded", output="1")], now + 2)
    assert (await backend.claim(["p"], "gate-p", 2, 30, 2, now + 3)).runs == []
    woken = await backend.get_run(first.lease.run_id)
    assert woken is not None
    assert woken.status == "queued"


LIMITED_QUEUES = {"limited": 2, "limited:one": 1}
"""The queues ``queues_history`` gives a max_parallelism, and the limit they end with."""


async def queues_history(backend: RedisBackend, now: float) -> None:
    """Queues with a limit (lowered below their running runs, then raised) and one
    paused: claims stop at the limit, runs leave them every way (finish, retry, suspend,
    release, reap, cancel), and the paused queue is promoted and reaped but starts
    nothing."""
    runs = [
        replace(a_run(500 + i, now + (5 if i % 7 == 6 else 0)), queue=queue)
        for i, queue in enumerate(["limited", "limited:one", "paused"] * 7)
    ]
    await backend.enqueue(runs, now)
    await backend.set_queue("limited", max_parallelism=3)
    await backend.set_queue("limited:one", max_parallelism=1, only_if_new=True)
    queues = ("limited", "limited:one", "paused")
    first = (await backend.claim(queues, "queues-a", 20, 10, 2, now)).runs
    assert [run.queue for run in first] == ["limited"] * 3 + ["limited:one"] + ["paused"] * 6
    await backend.set_queue("paused", paused=True)
    await backend.set_queue("limited", max_parallelism=1)  # below its running runs
    assert (await backend.claim(queues, "queues-b", 20, 10, 2, now + 1)).runs == []
    leaving = [
        Finish(first[0].lease, "succeeded", output="1"),
        Finish(first[1].lease, "retry", error='{"type": "E"}', retry_at=now + 1),
        Finish(first[3].lease, "suspend", wake_at=now + 1),
        Finish(first[4].lease, "failed", error='{"type": "E"}'),
    ]
    assert await backend.finish(leaving, now + 1) == [True] * 4
    await backend.release([first[5].lease], now + 1)
    assert await backend.cancel(first[6].lease.run_id, None, now + 1) == "requested"
    await backend.set_queue("limited", max_parallelism=LIMITED_QUEUES["limited"])
    # queues-a's other leases expire: reaped (first[6] ends canceled); the paused
    # queue's scheduled run is promoted, and it starts nothing.
    later = (await backend.claim(queues, "queues-c", 20, 100, 2, now + 20)).runs
    assert [run.queue for run in later] == ["limited"] * 2 + ["limited:one"]


async def rates_history(backend: RedisBackend, now: float) -> None:
    """Rate-limited runs (two per 10 s; two gated too) in queue "rated": a burst starts,
    the rest are scheduled at their reserved starts; one of those is canceled, one is
    promoted at its start (joining its gate then), one retry reserves a new start."""
    limit = RateLimitSpec("workflow:rated", 2, 10.0)
    runs = [
        replace(a_run(600 + i, now), workflow="rated", queue="rated", rate_limits=(limit,))
        for i in range(5)
    ]
    runs[1] = replace(runs[1], max_concurrency=1)
    runs[2] = replace(runs[2], max_concurrency=1)
    await backend.enqueue(runs, now)  # starts: now, now, now + 5, now + 10, now + 15
    assert await backend.cancel(runs[3].id, None, now) == "canceled"
    [first] = (await backend.claim(["rated"], "rates-a", 1, 30, 2, now)).runs
    assert first.lease.run_id == runs[0].id
    retry = Finish(first.lease, "retry", error='{"type": "E"}', retry_at=now + 1)
    assert await backend.finish([retry], now + 1) == [True]  # reserves now + 20
    # runs[2] is promoted at its start and waits at its gate, behind runs[1].
    promoted = (await backend.claim(["rated"], "rates-a", 5, 30, 2, now + 5)).runs
    assert [run.lease.run_id for run in promoted] == [runs[1].id]


async def reruns_history(backend: RedisBackend, now: float) -> None:
    """Failed and canceled runs re-run: an ungated one, a gated one (it waits at or goes
    through its gate), and a rate limited one (it reserves a start); re-running one
    again finds the first re-run."""
    ended = [
        run
        for status in ("failed", "canceled")
        for run in (await backend.list_runs(status, None, None, 1000, None)).runs
    ]
    chosen = [
        next(run for run in ended if run.queue in QUEUES),
        next(run for run in ended if run.queue in GATED_QUEUES),
        next(run for run in ended if run.workflow == "rated"),
    ]
    for old in chosen:
        new_id = f"rerun-{uuid.uuid4().hex[:6]}"
        assert await backend.rerun(old.id, new_id, now) == Rerun("created", new_id)
        assert await backend.rerun(old.id, "another", now) == Rerun("exists", new_id)
        rerun = await backend.get_run(new_id)
        assert rerun is not None
        assert (rerun.retry_of, rerun.status in ("queued", "scheduled")) == (old.id, True)


async def all_runs(raw: Redis, keys: Keys) -> dict[str, dict[str, str]]:
    """Every run hash, by id (a full scan: test code only)."""
    runs: dict[str, dict[str, str]] = {}
    async for key in raw.scan_iter(match=keys.run("*")):
        if key.endswith((":steps", ":children")):
            continue
        fields = cast(dict[str, str], await raw.hgetall(key))
        runs[fields["id"]] = fields
    return runs


async def members(raw: Redis, key: str) -> set[str]:
    return set(cast(list[str], await raw.zrange(key, 0, -1)))


def queue_index_of(keys: Keys, run_id: str, run: dict[str, str], timers: set[str]) -> str | None:
    """The one queue index a run belongs in, if any. ``timers``: the suspended runs that
    have a timer (the only suspended runs in one). A queued gated run that is not
    admitted belongs in its gate's waiting set, not in its pair's ready set."""
    queue, status = run["queue"], run["status"]
    if status == "queued" and "gate" in run and run.get("admitted") != "1":
        return keys.gate_waiting(run["gate"])
    if status == "queued":
        return keys.ready(queue, run["workflow"])
    if status == "scheduled" or (status == "suspended" and run_id in timers):
        return keys.scheduled(queue)
    if status == "running":
        return keys.leases(queue)
    return None


async def expected_and_actual_indexes(
    raw: Redis, keys: Keys, runs: dict[str, dict[str, str]], timers: set[str]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The members each index should have and has (see ``queue_index_of``; active runs
    without a cancel request are also in their workflow's 'cancelable' set). Every
    ready set that exists is among the expected ones."""
    expected: dict[str, set[str]] = {}
    for queue in {run["queue"] for run in runs.values()}:
        expected[keys.scheduled(queue)] = set()
        expected[keys.leases(queue)] = set()
    for queue, workflow in {(run["queue"], run["workflow"]) for run in runs.values()}:
        expected[keys.ready(queue, workflow)] = set()
    for workflow in {run["workflow"] for run in runs.values()}:
        expected[keys.workflow_cancelable(workflow)] = set()
    for gate in gates_of(runs):
        expected[keys.gate_waiting(gate)] = set()
    for run_id, run in runs.items():
        index = queue_index_of(keys, run_id, run, timers)
        if index is not None:
            expected[index].add(run_id)
        if run["status"] in ACTIVE_STATES and run["cancel_requested"] != "1":
            expected[keys.workflow_cancelable(run["workflow"])].add(run_id)
    ready_keys = {key async for key in raw.scan_iter(match=f"{keys.tag}:ready:*")}
    actual = {key: await members(raw, key) for key in expected.keys() | ready_keys}
    return expected, actual


def rank(run: dict[str, str]) -> float:
    """A run's rank: its available_at less its rank offset (none: 0)."""
    return float(run["available_at"]) - float(run.get("rank_offset", "0"))


def ready_score(run: dict[str, str]) -> float:
    """A claimable run's score in its ready set: its rank; runs to isolate come first."""
    return rank(run) - ISOLATED_OFFSET if run.get("isolate") == "1" else rank(run)


async def expected_and_actual_heads(
    raw: Redis, keys: Keys, runs: dict[str, dict[str, str]]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Each queue's heads as they should be (workflow -> the lowest score of its pair's
    ready set, for each non-empty one) and as stored, for every queue with runs and
    every heads key that exists."""
    expected: dict[str, dict[str, float]] = {
        keys.heads(queue): {} for queue in {run["queue"] for run in runs.values()}
    }
    async for key in raw.scan_iter(match=f"{keys.tag}:ready:*"):
        ready = await scored(raw, key)
        if ready:
            some_run = runs[ready[0][0]]
            heads = expected[keys.heads(some_run["queue"])]
            heads[some_run["workflow"]] = min(score for _, score in ready)
    stored = {key async for key in raw.scan_iter(match=f"{keys.tag}:queue:*:heads")}
    actual = {key: dict(await scored(raw, key)) for key in expected.keys() | stored}
    return expected, actual


async def test_every_index_agrees_with_run_statuses(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    timers = await mixed_history(redis_backend)
    runs = await all_runs(raw, keys)
    statuses = {run["status"] for run in runs.values()}
    assert statuses == {
        "queued",
        "scheduled",
        "running",
        "suspended",
        "succeeded",
        "failed",
        "canceled",
    }
    suspended = {run_id for run_id, run in runs.items() if run["status"] == "suspended"}
    assert timers < suspended  # some with a timer, some without
    expected, actual = await expected_and_actual_indexes(raw, keys, runs, timers)
    assert actual == expected
    expected_heads, actual_heads = await expected_and_actual_heads(raw, keys, runs)
    assert actual_heads == expected_heads
    assert any(len(heads) > 1 for heads in actual_heads.values())  # several pairs a queue
    to_isolate = {run_id for run_id, run in runs.items() if run.get("isolate") == "1"}
    assert {runs[run_id]["status"] for run_id in to_isolate} == {"queued", "running"}
    run_pairs = {pair(run["queue"], run["workflow"]) for run in runs.values()}
    assert await raw.smembers(keys.pairs()) == run_pairs
    assert not await raw.exists(keys.legacy_workflows())  # no longer written
    for run_id, run in runs.items():
        # A spent token is overwritten with '' in the HSET that ends the lease.
        assert bool(run.get("lease_token")) == (run["status"] == "running"), run_id
        assert ("finished_at" in run) == (run["status"] in ("succeeded", "failed", "canceled"))
    stray = {key async for key in raw.scan_iter(match=f"{keys.tag}:gate:*")} - set(expected)
    assert not stray
    reserved = {run_id for run_id, run in runs.items() if run.get("rate_reserved") == "1"}
    assert reserved  # some scheduled at a reserved start, one canceled while it was
    for run_id in reserved:
        assert "rate" in runs[run_id], run_id
        assert runs[run_id]["status"] in ("scheduled", "canceled"), run_id
    limiters = [key async for key in raw.scan_iter(match=f"{keys.tag}:limiter:*")]
    assert limiters == [keys.limiter("workflow:rated")]
    assert await raw.pttl(limiters[0]) > 0  # an idle limiter vanishes
    assert any(expected[keys.gate_waiting(gate)] for gate in gates_of(runs))  # some wait


async def test_limited_queues_run_within_their_limit_and_paused_ones_start_nothing(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    runs = await all_runs(raw, keys)
    for queue, limit in LIMITED_QUEUES.items():
        running = {run_id for run_id, run in runs.items() if run["queue"] == queue}
        running = {run_id for run_id in running if runs[run_id]["status"] == "running"}
        assert len(running) == limit, queue
        assert await raw.hgetall(keys.settings(queue)) == {
            "max_parallelism": str(limit),
            "paused": "0",
        }
    paused = {run["status"] for run in runs.values() if run["queue"] == "paused"}
    assert paused == {"queued", "failed", "canceled"}
    assert await raw.hgetall(keys.settings("paused")) == {"paused": "1"}
    for queue in {run["queue"] for run in runs.values()} - {*LIMITED_QUEUES, "paused"}:
        assert await raw.exists(keys.settings(queue)) == 0, queue


def gates_of(runs: dict[str, dict[str, str]]) -> set[str]:
    return {run["gate"] for run in runs.values() if "gate" in run}


async def test_every_gate_counts_its_admitted_runs_within_its_limit(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    runs = await all_runs(raw, keys)
    admitted = dict.fromkeys(gates_of(runs), 0)
    for run_id, run in runs.items():
        holds = run.get("admitted") == "1"
        if "gate" not in run:
            assert "admitted" not in run, run_id
            continue
        if run["status"] == "running":
            assert holds, run_id
        if run["status"] not in ("queued", "running"):
            assert "admitted" not in run, run_id
        admitted[run["gate"]] += holds
    assert sum(admitted.values()) > 0
    assert any(count == 0 for count in admitted.values())  # idle gates: no field left
    assert await raw.hgetall(keys.gates()) == {
        gate: str(count) for gate, count in admitted.items() if count
    }
    for gate, count in admitted.items():
        limits = {int(run["gate_limit"]) for run in runs.values() if run.get("gate") == gate}
        assert count <= min(limits), gate


async def test_scores_are_available_at_and_created_at(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    isolated = 0
    for run_id, run in (await all_runs(raw, keys)).items():
        if run["status"] == "queued" and "gate" in run and run.get("admitted") != "1":
            score = await raw.zscore(keys.gate_waiting(run["gate"]), run_id)
            assert score == rank(run)
        elif run["status"] == "queued":
            score = await raw.zscore(keys.ready(run["queue"], run["workflow"]), run_id)
            assert score == ready_score(run), run_id
            isolated += run.get("isolate") == "1"
        if run["status"] in ("scheduled", "suspended"):  # a suspended timer: its wake_at
            score = await raw.zscore(keys.scheduled(run["queue"]), run_id)
            assert score in (None, float(run["available_at"]))
        if run["status"] in ("queued", "scheduled") or run["cancel_requested"] == "0":
            score = await raw.zscore(keys.workflow_cancelable(run["workflow"]), run_id)
            assert score in (None, float(run["created_at"]))
    assert isolated  # some reaped runs wait to run alone


async def test_every_key_shares_one_hash_tag(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    stored = [key async for key in raw.scan_iter()]
    assert any(key.endswith(":steps") for key in stored)
    assert any(key.endswith(":children") for key in stored)
    assert all(key.startswith(keys.tag + ":") for key in stored)
    assert len({key_slot(key.encode()) for key in stored}) == 1


async def test_signal_lists_hold_at_most_one_token(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    runs = [a_run(i, NOW) for i in range(10)]
    await redis_backend.enqueue(runs, NOW)
    await redis_backend.enqueue([a_run(i, NOW) for i in range(10, 20)], NOW)
    signals = {key async for key in raw.scan_iter(match=f"{keys.tag}:signal:*")}
    assert signals == {keys.signal(run.queue, run.workflow) for run in runs}
    for signal in signals:
        assert await raw.llen(signal) == 1


async def scored(raw: Redis, key: str) -> list[tuple[str, float]]:
    """A sorted set's (member, score) pairs."""
    return cast(list[tuple[str, float]], await raw.zrange(key, 0, -1, withscores=True))


async def listed_runs(raw: Redis, keys: Keys) -> dict[str, list[tuple[str, float]]]:
    """Every run id in a list index: the (index, score) entries naming it."""
    entries: dict[str, list[tuple[str, float]]] = {}
    async for key in raw.scan_iter(match=f"{keys.tag}:list:*"):
        for run_id, score in await scored(raw, key):
            entries.setdefault(run_id, []).append((key, score))
    return entries


async def test_every_run_is_listed_once_by_its_pair_and_status(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    runs = await all_runs(raw, keys)
    assert any(run.get("retry_of") for run in runs.values())  # re-runs are in the mix
    assert await listed_runs(raw, keys) == {
        run_id: [(keys.listing(run["status"], run["queue"], run["workflow"]), 0.0)]
        for run_id, run in runs.items()
    }
    run_pairs = {pair(run["queue"], run["workflow"]) for run in runs.values()}
    assert await raw.smembers(keys.pairs()) == run_pairs
    finished = dict(await scored(raw, keys.finished()))
    assert finished == {
        run_id: float(run["finished_at"])
        for run_id, run in runs.items()
        if run["status"] in TERMINAL_STATES
    }


async def idempotency_keys(raw: Redis, keys: Keys) -> dict[str, str]:
    """Every idempotency key, and the id of the run it names."""
    named = {}
    async for key in raw.scan_iter(match=f"{keys.tag}:idempotency:*"):
        named[key] = str(await raw.get(key)).split(" ", 1)[1]
    return named


async def test_a_purge_of_every_terminal_run_leaves_nothing_naming_one(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await mixed_history(redis_backend)
    before = await all_runs(raw, keys)
    ended = {run_id for run_id, run in before.items() if run["status"] in TERMINAL_STATES}
    active = {run_id: run for run_id, run in before.items() if run_id not in ended}
    named_before = await idempotency_keys(raw, keys)
    assert set(named_before.values()) & ended  # some purged runs held a key
    assert set(named_before.values()) - ended  # and some others
    assert await raw.exists(*(keys.steps(run_id) for run_id in ended))  # some had steps
    kept = [keys.steps(run_id) for run_id in active] + [keys.children(run_id) for run_id in active]
    dumps = {key: await raw.dump(key) for key in kept}
    assert any(dumps.values())  # some active runs have steps or children
    pairs_before = await raw.smembers(keys.pairs())

    purged = 0
    while deleted := await redis_backend.purge(NOW + 10**6, 7, 0.0):
        purged += deleted
    assert purged == len(ended)

    assert await all_runs(raw, keys) == active  # the other runs are untouched
    assert {key: await raw.dump(key) for key in kept} == dumps
    for run_id in ended:
        for key in (keys.run(run_id), keys.steps(run_id), keys.children(run_id)):
            assert await raw.exists(key) == 0, key
    assert set(await listed_runs(raw, keys)) == set(active)
    assert await raw.zcard(keys.finished()) == 0
    assert await idempotency_keys(raw, keys) == {
        key: run_id for key, run_id in named_before.items() if run_id not in ended
    }
    assert await raw.smembers(keys.pairs()) == pairs_before  # pairs are remembered
