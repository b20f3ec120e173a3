"""A Redis that is there but cannot take writes (a replica, a full memory under
noeviction) is an outage to callers (BackendUnavailableError: retry later), not a
refused operation: the worker then retries its writes instead of failing runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
import redis
from tests.redis_server import RedisServer, free_port

from workpool.backends.base import NewRun
from workpool.backends.redis.backend import RedisBackend
from workpool.errors import BackendUnavailableError

NOW = 1_000.0


@pytest.fixture
def server() -> Iterator[list[RedisServer]]:
    started: list[RedisServer] = []
    yield started
    for each in started:
        each.stop()


def start(started: list[RedisServer], arguments: Sequence[str]) -> RedisServer:
    each = RedisServer(arguments=arguments)
    started.append(each)
    return each.start()


def a_run(run_id: str) -> NewRun:
    return NewRun(id=run_id, workflow="w", queue="q", input="{}", available_at=NOW)


async def test_a_read_only_replica_is_an_outage(server: list[RedisServer]) -> None:
    replica = start(server, ["--replicaof", "127.0.0.1", str(free_port())])
    backend = await RedisBackend.open(replica.url)
    try:
        with pytest.raises(BackendUnavailableError, match="read only replica"):
            await backend.enqueue([a_run("r1")], NOW)
    finally:
        await backend.close()


async def test_a_full_redis_under_noeviction_is_an_outage(server: list[RedisServer]) -> None:
    full = start(server, ["--maxmemory-policy", "noeviction"])
    backend = await RedisBackend.open(full.url)
    client = redis.Redis.from_url(full.url)
    try:
        client.set("ballast", b"x" * 4_000_000)
        client.config_set("maxmemory", "2mb")  # now over it: every write is refused
        with pytest.raises(BackendUnavailableError, match="memory"):
            await backend.enqueue([a_run("r1")], NOW)
    finally:
        client.close()
        await backend.close()
