"""Versioned migrations of a pool's schema, applied on first use or by ``workpool migrate``.

The migrations are ``migrations/NNNN_name.sql``; the schema's ``schema_version`` table
records the last one applied. One transaction applies every pending migration under a
transaction-level advisory lock keyed by the schema's name, so processes that open a new
schema at once queue behind the first, which creates it; the others then find it done.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import AsyncConnection, sql

from workpool.backends.postgres.sql import Migration, load_migrations
from workpool.backends.postgres.url import parse_postgres_url, unavailable
from workpool.errors import BackendUnavailableError

LOCK_NAMESPACE = "workpool migrate "
"""Prefix of the text hashed into the advisory lock's key (with the schema's name)."""


async def migrate(
    connection: AsyncConnection[Any],
    schema: str,
    migrations: tuple[Migration, ...] | None = None,
) -> int:
    """Bring ``schema`` to the latest version (creating it if missing); return it.

    Raises BackendUnavailableError if the schema is newer than this workpool knows."""
    known = load_migrations() if migrations is None else migrations
    latest = known[-1].version if known else 0
    if await _current_version(connection, schema) == latest:
        return latest  # the common case: no lock taken
    async with connection.transaction():
        await connection.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))", (LOCK_NAMESPACE + schema,)
        )
        await connection.execute(
            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
        )
        await connection.execute(
            sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema))
        )
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)"
        )
        cursor = await connection.execute("SELECT max(version) FROM schema_version")
        row = await cursor.fetchone()
        current = _first(row)
        if current > latest:
            raise BackendUnavailableError(
                f"PostgreSQL schema {schema!r} has version {current}, newer than the {latest} "
                "this workpool knows: upgrade workpool"
            )
        for migration in known:
            if migration.version > current:
                await connection.execute(migration.script.encode())
                await connection.execute(
                    "INSERT INTO schema_version (version) VALUES (%s)", (migration.version,)
                )
    return latest


async def _current_version(connection: AsyncConnection[Any], schema: str) -> int | None:
    """The schema's version, read without a lock (None: it has no version table yet)."""
    async with connection.transaction():
        table = sql.Identifier(schema, "schema_version")
        cursor = await connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (table.as_string(connection),)
        )
        if not _first(await cursor.fetchone()):
            return None
        cursor = await connection.execute(sql.SQL("SELECT max(version) FROM {}").format(table))
        return _first(await cursor.fetchone())


def _first(row: Any) -> int:
    """The version in a ``max(version)`` row (a tuple or a dict row); 0 when none."""
    value = next(iter(row.values())) if isinstance(row, dict) else row[0]
    return 0 if value is None else int(value)


async def migrate_url(url: str) -> int:
    """Migrate the schema a ``postgresql://`` URL names (for ``workpool migrate``); return
    its version. ConfigurationError for a bad URL, BackendUnavailableError otherwise."""
    target = parse_postgres_url(url)
    try:
        async with await AsyncConnection.connect(target.conninfo) as connection:
            return await migrate(connection, target.schema)
    except psycopg.Error as error:
        raise unavailable(target, error) from error
