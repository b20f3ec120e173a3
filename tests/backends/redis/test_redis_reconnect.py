"""Connections Redis closed: by its idle ``timeout``, a restart, a kill, or a path that
lost a reply. A call that meets a connection closed while it was idle opens a new one
and succeeds (sync and async); a lost reply is sent again only for a command whose
repeat changes nothing (enqueue is idempotent by run id), else the call says so."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from tests.backends.redis.dropping_proxy import DroppingProxy
from tests.polling import wait_until
from tests.redis_server import RedisServer

from workpool import RunContext, Workflow, Workpool
from workpool.backends.base import NewRun
from workpool.backends.redis.backend import RedisBackend
from workpool.errors import BackendUnavailableError

LIMIT = 20.0
"""Seconds a condition gets (it only bounds a failure)."""


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, which it may reconfigure or restart."""
    with RedisServer() as own:
        yield own


@pytest.fixture
def admin(server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def pool(server: RedisServer) -> Iterator[Workpool]:
    instance = Workpool(server.url, app="tests")
    yield instance
    instance.close()


@pytest.fixture
def proxy(server: RedisServer) -> Iterator[DroppingProxy]:
    with DroppingProxy(server.port) as each:
        yield each


@pytest.fixture
def proxied(proxy: DroppingProxy) -> Iterator[Workpool]:
    """A pool that reaches the server through ``proxy``."""
    instance = Workpool(proxy.url, app="tests")
    yield instance
    instance.close()


def add_one_on(pool: Workpool) -> Workflow[Any, Any]:
    @pool.workflow()
    async def add_one(ctx: RunContext, value: int) -> int:
        return value + 1

    return add_one


def only_admin_connected(admin: redis.Redis) -> bool:
    """The server holds no connection but the admin client's own."""
    return len(admin.client_list()) == 1


def wait_until_sync(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIMIT
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def closed_while_idle(admin: redis.Redis) -> None:
    """Let the server's ``timeout`` (1 s) close every idle connection of the pool."""
    wait_until_sync(lambda: only_admin_connected(admin))


def test_sync_calls_succeed_after_the_server_closed_their_idle_connection(
    admin: redis.Redis, pool: Workpool
) -> None:
    admin.config_set("timeout", 1)
    add_one = add_one_on(pool)
    first = add_one.run_sync(1)
    closed_while_idle(admin)
    assert pool.get_run_sync(first.id).status == "queued"
    closed_while_idle(admin)
    second = add_one.run_sync(2)
    closed_while_idle(admin)
    assert pool.cancel_sync(second.id) == "canceled"
    assert [run.id for run in pool.list_runs_sync().runs] == [second.id, first.id]


async def test_async_calls_succeed_after_the_server_closed_their_idle_connection(
    admin: redis.Redis, pool: Workpool
) -> None:
    admin.config_set("timeout", 1)
    add_one = add_one_on(pool)
    first = await add_one.run(1)
    await wait_until(lambda: only_admin_connected(admin), LIMIT)
    assert (await pool.get_run(first.id)).status == "queued"
    await wait_until(lambda: only_admin_connected(admin), LIMIT)
    second = await add_one.run(2)
    await wait_until(lambda: only_admin_connected(admin), LIMIT)
    assert await pool.cancel(second.id) == "canceled"
    await pool.aclose()


def test_every_sync_method_succeeds_on_a_connection_the_server_closed(
    admin: redis.Redis, pool: Workpool
) -> None:
    add_one = add_one_on(pool)
    run_id = add_one.run_sync(1).id
    batch = pool.batch_sync([add_one.prepare(5)], open=True)
    calls: list[Callable[[], object]] = [
        lambda: add_one.run_sync(2),
        lambda: pool.enqueue_many_sync([add_one.prepare(3)]),
        lambda: pool.add_to_batch_sync(batch.id, [add_one.prepare(6)]),
        lambda: pool.get_batch_sync(batch.id),
        lambda: pool.get_run_sync(run_id),
        lambda: pool.get_steps_sync(run_id),
        lambda: pool.list_runs_sync(),
        lambda: pool.stats_sync(),
        lambda: pool.list_workflows_sync(),
        lambda: pool.send_event_sync(run_id, "ping", {"n": 1}),
        lambda: pool.get_event_sync(run_id, "progress", timeout=0),
        lambda: pool.get_queue_sync("default"),
        lambda: pool.set_max_parallelism_sync("default", 3),
        lambda: pool.pause_sync("default"),
        lambda: pool.resume_sync("default"),
        lambda: pool.cancel_sync(run_id),
        lambda: pool.cancel_all_sync(),
    ]
    for call in calls:
        admin.client_kill_filter(_type="normal", skipme=True)
        call()


def test_a_restart_between_two_sync_calls_is_not_seen_by_the_second(
    server: RedisServer, pool: Workpool
) -> None:
    add_one = add_one_on(pool)
    add_one.run_sync(1)
    server.stop()
    server.start()
    second = add_one.run_sync(2)
    assert pool.get_run_sync(second.id).status == "queued"


def test_a_sync_enqueue_whose_reply_was_lost_is_sent_again_and_stored_once(
    proxy: DroppingProxy, proxied: Workpool
) -> None:
    add_one = add_one_on(proxied)
    assert proxied.list_runs_sync().runs == []  # connected
    proxy.drop_next_reply()
    handle = add_one.run_sync(1)
    assert proxy.dropped == 1
    assert [run.id for run in proxied.list_runs_sync().runs] == [handle.id]


async def test_an_async_enqueue_whose_reply_was_lost_is_sent_again_and_stored_once(
    proxy: DroppingProxy, proxied: Workpool
) -> None:
    add_one = add_one_on(proxied)
    assert (await proxied.list_runs()).runs == []
    proxy.drop_next_reply()
    handle = await add_one.run(1)
    assert proxy.dropped == 1
    assert [run.id for run in (await proxied.list_runs()).runs] == [handle.id]
    await proxied.aclose()


async def test_a_new_batch_whose_reply_was_lost_is_sent_again_and_stored_once(
    proxy: DroppingProxy, proxied: Workpool
) -> None:
    add_one = add_one_on(proxied)
    assert (await proxied.list_runs()).runs == []
    proxy.drop_next_reply()
    batch = await proxied.batch([add_one.prepare(1), add_one.prepare(2)])
    assert proxy.dropped == 1
    assert (await batch.status()).total == 2
    listed = sorted(run.id for run in (await proxied.list_runs()).runs)
    assert listed == sorted(handle.id for handle in batch.runs)
    await proxied.aclose()


async def test_a_lost_reply_of_a_call_a_repeat_would_change_is_not_sent_again(
    proxy: DroppingProxy, proxied: Workpool
) -> None:
    run_id = (await add_one_on(proxied).run(1)).id
    proxy.drop_next_reply()
    with pytest.raises(BackendUnavailableError, match="may have been applied"):
        await proxied.cancel(run_id)
    assert proxy.dropped == 1
    assert (await proxied.get_run(run_id)).status == "canceled"
    await proxied.aclose()


async def test_a_blocking_wait_on_a_connection_the_server_closed_waits(
    server: RedisServer, admin: redis.Redis
) -> None:
    backend = await RedisBackend.open(server.url)
    try:
        run = NewRun(id="r1", workflow="w", queue="q", input="{}", available_at=1.0)
        await backend.enqueue([run], 1.0)
        await backend.wait_for_work(["q"], 0.05)  # takes the wake-up signal, keeps the link
        admin.client_kill_filter(_type="normal", skipme=True)
        await wait_until(lambda: only_admin_connected(admin), LIMIT)
        await backend.wait_for_work(["q"], 0.05)
    finally:
        await backend.close()
