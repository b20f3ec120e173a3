"""Fixtures for the Redis-only tests: the backend class itself and a raw client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from workpool.backends.redis.backend import RedisBackend
from workpool.backends.redis.keys import Keys

PREFIX = "workpool-test"


@pytest.fixture
def backend_name() -> str:
    """These tests run on Redis only (overrides the shared parametrized fixture)."""
    return "redis"


@pytest.fixture
def keys() -> Keys:
    """The key names of ``redis_backend``."""
    return Keys(PREFIX)


@pytest.fixture
async def redis_backend(backend_url: str) -> AsyncIterator[RedisBackend]:
    """A RedisBackend on an empty database, with a known prefix."""
    backend = await RedisBackend.open(backend_url, prefix=PREFIX)
    yield backend
    await backend.close()


@pytest.fixture
async def raw(backend_url: str) -> AsyncIterator[Redis]:
    """A plain client on the same database, for looking at keys directly."""
    client = Redis.from_url(backend_url, decode_responses=True)
    yield client
    await client.aclose()
