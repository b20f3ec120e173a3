"""A password in the URL of a server that has none is refused: whoever wrote it believes
the server is protected, and it is not (Redis's default user without a password accepts
any password in ``HELLO 3 AUTH default <password>``, which redis-py sends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from tests.redis_server import RedisServer

from workpool import Workpool
from workpool.backends.redis.backend import RedisBackend
from workpool.errors import ConfigurationError


def with_credentials(url: str, credentials: str) -> str:
    return url.replace("redis://", f"redis://{credentials}@", 1)


@pytest.fixture
def protected() -> Iterator[RedisServer]:
    """A server of its own whose default user has the password 's3cret'."""
    with RedisServer() as server:
        admin = redis.Redis.from_url(server.url)
        admin.config_set("requirepass", "s3cret")
        admin.close()
        yield server


@pytest.mark.parametrize("credentials", [":s3cret", "default:s3cret"])
async def test_a_password_for_a_server_without_one_is_refused(
    redis_server_url: str, credentials: str
) -> None:
    url = with_credentials(redis_server_url, credentials)
    with pytest.raises(ConfigurationError, match="has no password configured") as raised:
        await RedisBackend.open(url)
    assert "s3cret" not in str(raised.value)


async def test_the_client_says_so_at_its_first_call(redis_server_url: str) -> None:
    pool = Workpool(with_credentials(redis_server_url, ":s3cret"))
    with pytest.raises(ConfigurationError, match="has no password configured"):
        await pool.list_runs()
    await pool.aclose()


@pytest.mark.parametrize("credentials", [":s3cret", "default:s3cret"])
async def test_the_right_password_for_a_protected_server_is_accepted(
    protected: RedisServer, credentials: str
) -> None:
    backend = await RedisBackend.open(with_credentials(protected.url, credentials))
    assert await backend.get_run("none") is None
    await backend.close()
