"""Corrupting a stored run for real, as an OOM-refused script, a manual HSET or a raw
UPDATE would: one field (or the whole record) written behind workpool's back."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from psycopg import sql
from redis.asyncio import Redis

from workpool.backends import sqlite_path
from workpool.backends.postgres.url import parse_postgres_url
from workpool.backends.redis.keys import Keys

DELETED = None
"""The field is removed (Redis HDEL; SQL NULL, which the schema may refuse)."""
MISSING_RECORD = "the record is gone"
"""Pseudo-field: the run's hash is deleted, its index entries left (Redis only)."""
WRONG_TYPE = "the key is not a hash"
"""Pseudo-field: the run's key holds a string (Redis only)."""


async def corrupt(url: str, run_id: str, field: str, value: str | None) -> None:
    """Write ``value`` into ``field`` of the stored run (None: delete or NULL it)."""
    if url.startswith("sqlite"):
        _corrupt_row(url, run_id, field, value)
        return
    if url.startswith("postgres"):
        await _corrupt_postgres_row(url, run_id, field, value)
        return
    key = Keys("workpool").run(run_id)
    client = Redis.from_url(url, decode_responses=True)
    try:
        if field in (MISSING_RECORD, WRONG_TYPE):
            await client.delete(key)
            if field == WRONG_TYPE:
                await client.set(key, "not a hash")
        elif value is DELETED:
            assert await client.hdel(key, field) == 1, f"{field} was not stored"
        else:
            await client.hset(key, field, value)
    finally:
        await client.aclose()


def _corrupt_row(url: str, run_id: str, field: str, value: str | None) -> None:
    if field in (MISSING_RECORD, WRONG_TYPE):
        pytest.skip("a SQLite row cannot lose its columns or change its type")
    connection = sqlite3.connect(sqlite_path(url))
    try:
        with connection:
            connection.execute(f"UPDATE runs SET {field} = ? WHERE id = ?", (value, run_id))
    except sqlite3.IntegrityError as refused:
        pytest.skip(f"the SQLite schema refuses it: {refused}")
    finally:
        connection.close()


async def _corrupt_postgres_row(url: str, run_id: str, field: str, value: str | None) -> None:
    """PostgreSQL's typed columns refuse most corruptions (text in a number, NULL in a NOT
    NULL column, an unknown status): those cases are skipped with the server's reason. It
    stores some all the same, such as NaN or 1e300 in a time."""
    if field in (MISSING_RECORD, WRONG_TYPE):
        pytest.skip("a PostgreSQL row cannot lose its columns or change its type")
    target = parse_postgres_url(url)
    update = sql.SQL("UPDATE {} SET {} = %s WHERE id = %s").format(
        sql.Identifier(target.schema, "runs"), sql.Identifier(field)
    )
    try:
        async with await psycopg.AsyncConnection.connect(target.conninfo) as connection:
            cursor = await connection.execute(update, (value, run_id))
            assert cursor.rowcount == 1, f"run {run_id} is not stored"
    except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as refused:
        pytest.skip(f"the PostgreSQL schema refuses it: {str(refused).splitlines()[0]}")
