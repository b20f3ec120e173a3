"""Redis-specific behaviour: connecting, round trips, exact values, index progress."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, cast

import pytest
from redis.asyncio import Redis
from tests.polling import wait_until

from workpool.backends.base import CompletionHook, Finish, NewRun, StepRecord
from workpool.backends.redis import codec, connection
from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys
from workpool.errors import BackendUnavailableError, ConfigurationError, CorruptRecordError

NOW = 1_700_000_000.123456


def a_run(run_id: str, available_at: float = NOW, **fields: Any) -> NewRun:
    return NewRun(
        id=run_id, workflow="wf", queue="q", input="{}", available_at=available_at, **fields
    )


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:not-a-port/0",
        "redis://localhost/zero",
        "redis://[::1",
        "redis://localhost?db=x",
        "redis://:s3cret@localhost:6379/first",
    ],
)
async def test_malformed_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError, match="malformed Redis URL") as raised:
        await RedisBackend.open(url)
    assert "s3cret" not in str(raised.value)


async def test_bad_prefix_is_a_configuration_error(redis_server_url: str) -> None:
    with pytest.raises(ConfigurationError, match="prefix"):
        await RedisBackend.open(redis_server_url, prefix="a{b}")


async def test_unreachable_server_names_the_url_without_its_password() -> None:
    url = "redis://user:s3cret@127.0.0.1:1/2"
    with pytest.raises(BackendUnavailableError) as raised:
        await RedisBackend.open(url)
    message = str(raised.value)
    assert "redis://127.0.0.1:1/2" in message
    assert "s3cret" not in message
    assert "\n" not in message


class CommandCounter:
    """Counts the commands a backend's client sends (each one is a round trip)."""

    def __init__(self, backend: RedisBackend, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        link = backend._link  # every command but the blocking wait goes through it
        send = cast(Callable[..., Awaitable[Any]], link.call)

        async def counting(*args: Any, **options: Any) -> Any:
            self.names.append(str(args[0]).upper())
            return await send(*args, **options)

        monkeypatch.setattr(link, "call", counting)

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


async def test_hot_path_operations_are_one_script_call_each(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await redis_backend.enqueue([a_run("warm")], NOW)  # loads the scripts if needed
    counter = CommandCounter(redis_backend, monkeypatch)
    await redis_backend.enqueue([a_run(f"r{i}") for i in range(20)], NOW)
    assert counter.take() == ["EVALSHA"]
    claimed = await redis_backend.claim(["q"], "w", 10, 30, 3, NOW)
    assert counter.take() == ["EVALSHA"]
    await redis_backend.renew([run.lease for run in claimed.runs], 30, NOW)
    assert counter.take() == ["EVALSHA"]
    leases = [run.lease for run in claimed.runs]
    step = StepRecord(name="s", kind="run", status="succeeded", attempts=1, started_at=NOW)
    assert await redis_backend.save_step(leases[0], step, NOW) == step
    assert counter.take() == ["EVALSHA"]
    waiting = StepRecord(name="w", kind="workflow", status="waiting", attempts=1, started_at=NOW)
    assert await redis_backend.save_step(leases[1], waiting, NOW, a_run("child"))
    assert counter.take() == ["EVALSHA"]
    suspend = Finish(lease=leases[1], status="suspend", wake_at=NOW + 9, waiting_on=("child",))
    finishes = [Finish(lease=lease, status="succeeded", output="1") for lease in leases[2:]]
    assert await redis_backend.finish([suspend, *finishes], NOW) == [True] * 9
    assert counter.take() == ["EVALSHA"]
    assert len(await redis_backend.get_steps(leases[0].run_id)) == 1
    assert counter.take() == ["HGETALL"]
    assert await redis_backend.get_children(leases[1].run_id) == ["child"]
    assert counter.take() == ["LRANGE"]


async def test_times_and_json_texts_come_back_exactly(redis_backend: RedisBackend) -> None:
    context = '{"z": 1, "a": 123456789012345678901234567890, "f": 0.1000000000000000055511}'
    hook = CompletionHook(
        workflow="h", queue="q", context=context, retry=None, on_failure_only=False
    )
    await redis_backend.enqueue([a_run("exact", NOW + 0.000001, hooks=(hook,))], NOW)
    [claimed] = (await redis_backend.claim(["q"], "w", 1, 30.5, 3, NOW + 0.000001)).runs
    assert claimed.available_at == NOW + 0.000001
    output = '{"big": 98765432109876543210, "order": [3, 2, 1]}'
    await redis_backend.finish(
        [Finish(lease=claimed.lease, status="succeeded", output=output)], NOW + 7
    )
    record = await redis_backend.get_run("exact")
    assert record is not None
    assert (record.created_at, record.finished_at, record.output) == (NOW, NOW + 7, output)
    hook_run = await redis_backend.get_run("exact-0")
    assert hook_run is not None
    assert hook_run.input == (
        '{"run_id":"exact","workflow":"wf","context":'
        + context
        + ',"result":{"status":"succeeded","output":'
        + output
        + "}}"
    )
    assert json.loads(hook_run.input)["context"]["a"] == 123456789012345678901234567890


async def test_idempotency_keys_expire_on_the_callers_clock(redis_backend: RedisBackend) -> None:
    first = await redis_backend.enqueue(
        [a_run("one", idempotency_key="k", idempotency_ttl=10.0)], NOW
    )
    again = await redis_backend.enqueue([a_run("two", idempotency_key="k")], NOW + 9.9)
    later = await redis_backend.enqueue([a_run("three", idempotency_key="k")], NOW + 10.1)
    assert [first[0].created, again[0].run_id, later[0].created] == [True, "one", True]


async def test_cancel_many_progresses_past_cancel_requested_runs(
    redis_backend: RedisBackend,
) -> None:
    await redis_backend.enqueue([a_run(f"busy{i:03}") for i in range(300)], NOW)
    claimed = (await redis_backend.claim(["q"], "w", 300, 30, 3, NOW)).runs
    assert await redis_backend.cancel_many(None, "wf", None, 1000, NOW) == 300
    await redis_backend.enqueue([a_run(f"idle{i}") for i in range(3)], NOW + 1)
    assert await redis_backend.cancel_many(None, "wf", None, 2, NOW + 1) == 2
    assert await redis_backend.cancel_many(None, None, None, 2, NOW + 1) == 1
    assert await redis_backend.cancel_many(None, None, None, 2, NOW + 1) == 0
    assert len(claimed) == 300


async def test_a_cancelled_wait_leaves_the_backend_usable(redis_backend: RedisBackend) -> None:
    waiting = asyncio.create_task(redis_backend.wait_for_work(["q"], 30, workflows=["wf"]))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    woken = asyncio.create_task(redis_backend.wait_for_work(["q"], 30, workflows=["wf"]))
    await asyncio.sleep(0.05)
    await redis_backend.enqueue([a_run("wake")], NOW)
    await asyncio.wait_for(woken, timeout=5)


async def test_waits_reuse_their_connection_and_a_timed_out_wait_drops_its_own(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    async def client_ids() -> set[str]:
        return {client["id"] for client in await raw.client_list()}

    async def new_waiting_clients() -> set[str]:
        """The clients made since ``earlier`` whose last command was a blocking wait:
        this backend's (other tests' connections, closing, may come and go)."""
        listed = await raw.client_list()
        return {c["id"] for c in listed if c["cmd"] == "blpop" and c["id"] not in earlier}

    earlier = await client_ids()
    await redis_backend.enqueue([a_run("first")], NOW)
    await redis_backend.wait_for_work(["q"], 5, workflows=["wf"])  # takes the token
    waiting = await new_waiting_clients()
    assert len(waiting) == 1
    for index in range(5):
        await redis_backend.enqueue([a_run(f"again{index}")], NOW)
        await asyncio.wait_for(redis_backend.wait_for_work(["q"], 5, workflows=["wf"]), 5)
    assert await new_waiting_clients() == waiting  # one connection served every wait
    await redis_backend.wait_for_work(["q"], 0.05, workflows=["wf"])  # nothing comes

    async def dropped() -> bool:
        return not waiting & await client_ids()

    await wait_until(dropped)  # the server sees it go (when is up to the machine's load)
    await redis_backend.enqueue([a_run("last")], NOW)
    await asyncio.wait_for(redis_backend.wait_for_work(["q"], 5, workflows=["wf"]), 5)


async def test_a_wait_is_woken_by_runs_of_its_workflows_only(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    waiting = asyncio.create_task(redis_backend.wait_for_work(["q"], 30, workflows=["a"]))
    await asyncio.sleep(0.05)  # blocked on its pairs' signal lists
    await redis_backend.enqueue([replace(a_run("of-b"), workflow="b")], NOW)
    done, _ = await asyncio.wait({waiting}, timeout=1)
    assert not done
    assert await raw.llen(keys.signal("q", "b")) == 1  # b's token waits for b's workers
    await redis_backend.enqueue([replace(a_run("of-a"), workflow="a")], NOW)
    await asyncio.wait_for(waiting, timeout=5)
    assert await raw.llen(keys.signal("q", "a")) == 0  # the wait took a's token


async def test_unreadable_record_names_run_and_field(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.enqueue([a_run("bad")], NOW)
    await raw.hset(keys.run("bad"), "attempts", "many")
    with pytest.raises(CorruptRecordError, match=r"bad.*attempts"):
        await redis_backend.get_run("bad")
    await raw.hset(keys.run("bad"), "attempts", "0")
    await raw.hdel(keys.run("bad"), "input")
    with pytest.raises(CorruptRecordError, match=r"bad.*input"):
        await redis_backend.get_run("bad")


async def test_close_ends_a_pending_wait_quietly(backend_url: str) -> None:
    backend = await RedisBackend.open(backend_url, prefix="closing")
    waiting = asyncio.create_task(backend.wait_for_work(["q"], 30, workflows=["wf"]))
    await asyncio.sleep(0.05)
    await backend.close()
    await asyncio.wait_for(waiting, timeout=5)


async def test_claim_returns_more_runs_than_a_lua_unpack_could(
    redis_backend: RedisBackend,
) -> None:
    count = 9000
    await redis_backend.enqueue([a_run(f"many{i}") for i in range(count)], NOW)
    claimed = await redis_backend.claim(["q"], "w", count, 30, 3, NOW)
    assert len(claimed.runs) == count
    assert claimed.next_wake_at == NOW + 30


async def test_claim_takes_more_runs_of_one_workflow_than_a_lua_unpack_could_before_another(
    redis_backend: RedisBackend,
) -> None:
    """With two workflows' runs claimable, a claim ranges over one up to the other's
    head and removes what it took in bounded commands."""
    count = 9000
    await redis_backend.enqueue([a_run(f"early{i}") for i in range(count)], NOW)
    await redis_backend.enqueue([replace(a_run("late", NOW + 1), workflow="other")], NOW + 1)
    claimed = await redis_backend.claim(["q"], "w", count + 1, 30, 3, NOW + 1)
    assert len(claimed.runs) == count + 1
    assert claimed.runs[-1].lease.run_id == "late"


async def test_one_call_counts_more_pairs_than_a_lua_unpack_could(
    redis_backend: RedisBackend,
) -> None:
    count = 8200  # runs of one workflow in as many queues: a counter field each
    await redis_backend.enqueue([replace(a_run(f"r{i}"), queue=f"q{i}") for i in range(count)], NOW)
    assert await redis_backend.cancel_many(None, "wf", None, count, NOW) == count
    counters = (await redis_backend.get_stats(NOW, NOW)).counters
    assert (len(counters), sum(pair.canceled for pair in counters)) == (count, count)


async def test_a_command_over_its_time_limit_says_so_and_the_link_recovers(
    redis_backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "COMMAND_TIMEOUT", 0.2)
    with pytest.raises(BackendUnavailableError, match="did not answer BLPOP within"):
        await redis_backend._link.call("BLPOP", "nothing-arrives-here", "2")
    assert await redis_backend.get_run("missing") is None


async def test_steps_come_back_exactly_after_a_child_outcome_rewrites_them(
    redis_backend: RedisBackend,
) -> None:
    await redis_backend.enqueue([a_run("parent")], NOW)
    [parent] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    step = StepRecord(
        name="charge/é",
        kind="workflow",
        status="waiting",
        attempts=3,
        started_at=NOW + 0.000001,
        wake_at=NOW + 86_400.000001,
    )
    saved = await redis_backend.save_step(parent.lease, step, NOW, a_run("child", NOW))
    assert saved is not None
    assert saved.child_run_id == "child"
    suspend = Finish(lease=parent.lease, status="suspend", waiting_on=("child",))
    assert await redis_backend.finish([suspend], NOW)
    [child] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    output = '{"big": 98765432109876543210, "path": "a/b", "text": "é\\n\\"q\\""}'
    done = Finish(lease=child.lease, status="succeeded", output=output)
    assert await redis_backend.finish([done], NOW + 0.000002)
    [stored] = await redis_backend.get_steps("parent")
    assert stored == StepRecord(
        name="charge/é",
        kind="workflow",
        status="succeeded",
        attempts=3,
        started_at=NOW + 0.000001,
        output=output,
        child_run_id="child",
        wake_at=NOW + 86_400.000001,
        finished_at=NOW + 0.000002,
    )


async def test_a_step_without_a_child_is_stored_as_sent(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    await redis_backend.enqueue([a_run("plain")], NOW)
    [claimed] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    step = StepRecord(
        name="a", kind="run", status="succeeded", attempts=1, started_at=NOW, output="1.50"
    )
    await redis_backend.save_step(claimed.lease, step, NOW)
    assert await raw.hget(keys.steps("plain"), "a") == codec.encode_step(step)
    assert await raw.hget(keys.run("plain"), "has_steps") == "1"


async def test_unreadable_step_names_run_and_step(
    redis_backend: RedisBackend, raw: Redis, keys: Keys
) -> None:
    for text, problem in [
        ("{not json", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"kind": "run", "status": "succeeded", "attempts": 1}', "missing started_at"),
        ('{"kind": "nap", "status": "waiting", "attempts": 1, "started_at": "1"}', "kind"),
        ('{"kind": "run", "status": "waiting", "attempts": "1", "started_at": "1"}', "attempts"),
        ('{"kind": "run", "status": "waiting", "attempts": 1, "started_at": "x"}', "started_at"),
        (
            '{"kind": "run", "status": "waiting", "attempts": 1, "started_at": "1", "output": 2}',
            "output",
        ),
    ]:
        await raw.hset(keys.steps("broken"), "step-1", text)
        with pytest.raises(CorruptRecordError, match=rf"broken.*step-1.*{problem}"):
            await redis_backend.get_steps("broken")


async def test_a_resumed_run_claimed_again_by_the_same_worker_gets_a_new_token(
    redis_backend: RedisBackend,
) -> None:
    await redis_backend.enqueue([a_run("sleeper")], NOW)
    [first] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    assert await redis_backend.finish(
        [Finish(lease=first.lease, status="suspend", wake_at=NOW)], NOW
    )
    [second] = (await redis_backend.claim(["q"], "w", 1, 30, 3, NOW)).runs
    assert (second.attempt, second.lease.run_id) == (first.attempt, "sleeper")
    assert second.lease.token != first.lease.token
    stale = Finish(lease=first.lease, status="succeeded", output="1")
    assert await redis_backend.finish([stale], NOW) == [False]


async def link_client_id(backend: RedisBackend) -> int:
    """The server's id of the connection the backend's commands go over."""
    return cast(int, await backend._link.call("CLIENT", "ID"))


async def test_concurrent_commands_are_all_sent_before_the_first_reply(
    redis_backend: RedisBackend, backend_url: str
) -> None:
    link_id = await link_client_id(redis_backend)
    admin = Redis.from_url(backend_url)
    calls: list[asyncio.Future[Any]] = []
    try:
        await admin.client_pause(3000, all=False)  # writes only: CLIENT LIST still answers
        calls = [asyncio.ensure_future(redis_backend._link.call("INCR", "n")) for _ in range(50)]
        # Writes paused, the server holds what the link sent unread: all 50 commands.
        deadline = asyncio.get_running_loop().time() + 2
        while await unread_bytes(admin, link_id) < 49 * len(INCR):
            assert asyncio.get_running_loop().time() < deadline, "commands waited for replies"
            await asyncio.sleep(0.01)
    finally:
        await admin.client_unpause()
        await admin.aclose()
    assert sorted(await asyncio.gather(*calls)) == list(range(1, 51))


INCR = b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
"""One of the test's commands as the link sends it."""


async def unread_bytes(admin: Redis, client_id: int) -> int:
    """The bytes a client sent that the server has not processed yet."""
    [listed] = await admin.client_list(client_id=[client_id])
    return int(listed["qbuf"])


async def test_a_caller_that_gives_up_leaves_the_link_and_the_next_reply_in_place(
    redis_backend: RedisBackend,
) -> None:
    link_id = await link_client_id(redis_backend)
    slow = asyncio.ensure_future(redis_backend._link.call("BLPOP", "nothing-comes", "0.2"))
    after = asyncio.ensure_future(redis_backend._link.call("ECHO", "mine"))
    await asyncio.sleep(0.05)
    slow.cancel()
    assert await after == "mine"  # the cancelled call's reply went to nobody
    assert await link_client_id(redis_backend) == link_id  # the same connection
