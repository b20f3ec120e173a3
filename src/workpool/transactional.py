"""``connection=``: the caller's connection, whose open transaction an enqueue joins.

``join`` turns what the caller passed into the PostgreSQL backend's
``JoinedTransaction`` over the psycopg 3 connection underneath: a psycopg
``Connection`` or ``AsyncConnection``; a SQLAlchemy ``Session``, ``AsyncSession``,
``Connection`` or ``AsyncConnection`` of the ``postgresql+psycopg`` dialect; Django's
``connection`` (the psycopg 3 engine) inside ``transaction.atomic()``. SQLAlchemy and
Django stay optional: an object is checked against their classes only if the
application imported them already (it did, if it holds one of their objects).

A synchronous connection goes with the ``*_sync`` methods, which run the operation
without an event loop (``workpool.sync.drive``); an async one with the async methods.
The other pairings are refused: a blocking connection would freeze the event loop,
and an async one cannot run without it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from workpool.errors import ConfigurationError
from workpool.sync import in_event_loop

if TYPE_CHECKING:
    from workpool.backends.postgres.joined import JoinedTransaction, Statements

ACCEPTED = (
    "a psycopg 3 Connection or AsyncConnection, a SQLAlchemy Session, AsyncSession, "
    "Connection or AsyncConnection (postgresql+psycopg), or Django's "
    "django.db.connection inside transaction.atomic() (psycopg 3)"
)


async def join(url: str, connection: object) -> JoinedTransaction:
    """The pool's operations inside ``connection``'s open transaction. ConfigurationError
    if the pool is not on PostgreSQL or there is no transaction to join; TypeError for
    an object of another kind, or of the wrong kind for the call (see the module)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("postgresql", "postgres"):
        store = "SQLite" if scheme == "sqlite" else "Redis"
        raise ConfigurationError(
            f"connection= joins your PostgreSQL transaction, but this pool stores runs in "
            f"{store}: leave out connection= (the run is stored on its own, at once), or "
            "give the pool the postgresql:// URL of your application's database"
        )
    from workpool.backends.postgres.joined import (
        AsyncStatements,
        JoinedTransaction,
        SyncStatements,
        check_open_transaction,
    )
    from workpool.backends.postgres.url import parse_postgres_url

    raw = await _psycopg_connection(connection)
    statements: Statements
    statements = AsyncStatements(raw) if _is_async(raw) else SyncStatements(raw)
    check_open_transaction(raw)
    target = parse_postgres_url(url)
    _check_database(raw, target.conninfo)
    return JoinedTransaction(target, statements)


def _is_async(raw: Any) -> bool:
    import psycopg

    return isinstance(raw, psycopg.AsyncConnection)


def _check_pairing(is_async: bool, connection: object) -> None:
    """TypeError for an async connection without an event loop, or a sync one in it
    (checked before anything is done with it)."""
    kind = type(connection).__name__
    if is_async and not in_event_loop():
        raise TypeError(
            f"connection= is asynchronous ({kind}), and a *_sync method runs without an "
            "event loop: await the async method instead (`await wf.run(..., connection=...)`)"
        )
    if not is_async and in_event_loop():
        raise TypeError(
            f"connection= is synchronous ({kind}): in async code it would block the event "
            "loop; pass an async connection (psycopg AsyncConnection, SQLAlchemy "
            "AsyncSession), or call the *_sync method from synchronous code"
        )


async def _psycopg_connection(connection: object) -> Any:
    """The psycopg 3 connection under ``connection`` (see ``ACCEPTED``)."""
    if "psycopg" in sys.modules:
        import psycopg

        if isinstance(connection, psycopg.Connection | psycopg.AsyncConnection):
            _check_pairing(_is_async(connection), connection)
            return connection
    if "sqlalchemy" in sys.modules:
        found = await _sqlalchemy_connection(connection)
        if found is not None:
            return found
    if "django.db" in sys.modules and hasattr(connection, "in_atomic_block"):
        _check_pairing(False, connection)
        return _django_connection(connection)
    if type(connection).__module__.split(".")[0] == "psycopg2":
        raise TypeError(
            f"connection= is a psycopg2 connection, which workpool cannot join: {ACCEPTED}"
        )
    raise TypeError(f"connection= must be {ACCEPTED}; got {type(connection).__name__}")


async def _sqlalchemy_connection(connection: object) -> Any:
    """The psycopg connection of a SQLAlchemy session or connection (its transaction
    begun, as the next statement would begin it); None for another object."""
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    if isinstance(connection, Session | Connection):
        _check_pairing(False, connection)
    if isinstance(connection, Session):
        connection = connection.connection()
    if isinstance(connection, Connection):
        _check_dialect(connection.dialect)
        if not connection.in_transaction():
            connection.begin()
        return connection.connection.driver_connection
    if "sqlalchemy.ext.asyncio" not in sys.modules:
        return None
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    if isinstance(connection, AsyncSession | AsyncConnection):
        _check_pairing(True, connection)
    if isinstance(connection, AsyncSession):
        connection = await connection.connection()
    if isinstance(connection, AsyncConnection):
        _check_dialect(connection.dialect)
        if not connection.in_transaction():
            await connection.begin()
        return (await connection.get_raw_connection()).driver_connection
    return None


def _check_dialect(dialect: Any) -> None:
    if (dialect.name, dialect.driver) != ("postgresql", "psycopg"):
        raise ConfigurationError(
            f"connection= is a SQLAlchemy connection of the {dialect.name}+{dialect.driver} "
            "dialect: workpool joins transactions of postgresql+psycopg (psycopg 3) only; "
            "create the engine with a postgresql+psycopg:// URL"
        )


def _django_connection(connection: Any) -> Any:
    """The psycopg connection of Django's connection, inside ``transaction.atomic()``."""
    if connection.vendor != "postgresql":
        raise ConfigurationError(
            f"connection= is Django's {connection.vendor} connection: workpool joins "
            "PostgreSQL transactions only"
        )
    if not connection.in_atomic_block:
        raise ConfigurationError(
            "connection= is Django's connection outside transaction.atomic(), in autocommit "
            "mode, so there is no transaction to join: call it inside `with "
            "transaction.atomic():`, or leave out connection= to store the run on its own"
        )
    raw = connection.connection
    if type(raw).__module__.split(".")[0] != "psycopg":
        raise TypeError(
            f"connection= is Django's connection over {type(raw).__module__}: workpool joins "
            "psycopg 3 connections only (pip install 'psycopg[binary]'; Django prefers it "
            "to psycopg2 when both are installed)"
        )
    return raw


def _check_database(raw: Any, conninfo: str) -> None:
    """ConfigurationError if the pool's URL names another database than the connection's
    (a check without a round trip; ``JoinedTransaction`` also finds the schema there)."""
    from psycopg.conninfo import conninfo_to_dict

    wanted = conninfo_to_dict(conninfo).get("dbname")
    if wanted is not None and wanted != raw.info.dbname:
        raise ConfigurationError(
            f"connection= is on database {raw.info.dbname!r}, but the pool's URL names "
            f"{wanted!r}: runs must be stored in the database of the transaction they join; "
            "give the pool a URL of that database (a schema of its own: ?schema=), or leave "
            "out connection="
        )
