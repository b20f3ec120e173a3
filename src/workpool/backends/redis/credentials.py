"""Refusing a password that protects nothing.

redis-py authenticates with ``HELLO 3 AUTH default <password>``, which a server whose
default user has no password accepts whatever the password: a URL with a password for
such a server opened silently, and whoever wrote it believed the server protected.
``AUTH <password>`` (the one-argument form) tells: such a server refuses it with "called
without any password configured", as redis-py reports for RESP2 connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis.exceptions import RedisError

from workpool.backends.redis.connection import CommandLink
from workpool.errors import ConfigurationError

NO_PASSWORD_REPLIES = ("called without any password configured", "no password is set")
"""How Redis (6 and later; then earlier versions) refuses AUTH when it has no password."""


async def refuse_unneeded_password(
    link: CommandLink, options: Mapping[str, Any], where: str
) -> None:
    """Raise ConfigurationError if the connection ``options`` give the default user a
    password and the server at ``where`` has none configured."""
    password = options.get("password")
    if not password or options.get("username") not in (None, "", "default"):
        return
    try:
        await link.call("AUTH", password, repeatable=True)
    except RedisError as error:  # an AuthenticationError reply, made from the message
        if not any(reply in str(error) for reply in NO_PASSWORD_REPLIES):
            raise
        raise ConfigurationError(
            f"the Redis server at {where} has no password configured, yet the URL gives "
            "one: its default user accepts any password, so anyone who can reach the "
            "server can use it. Set a password on the server (requirepass, or an ACL "
            "user) or remove the password from the URL"
        ) from None
