"""``connection=``: runs, events and cancels written in the caller's own PostgreSQL
transaction, on each kind of connection an application holds (README "Enqueue in your
transaction"): visible to workers only once the caller commits, gone without a trace
(idempotency key and wake-up included) when it rolls back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from tests.django_database import use_test_database
from tests.integration.conftest import fast_worker
from tests.postgres_server import DATABASE, PostgresServer
from workpool import RunContext, Workpool
from workpool.errors import BatchNotFoundError, ConfigurationError, RunNotFoundError


@pytest.fixture
def backend_name() -> str:
    """Every pool of this module is on PostgreSQL (the refusals make their own)."""
    return "postgres"


T = TypeVar("T")

SYNC_KINDS = ["psycopg", "sqlalchemy-session", "sqlalchemy-connection", "django"]
ASYNC_KINDS = ["psycopg-async", "sqlalchemy-async-session", "sqlalchemy-async-connection"]


def sqlalchemy_url(server: PostgresServer, driver: str = "psycopg") -> str:
    return (
        f"postgresql+{driver}://{DATABASE}@/{DATABASE}?host={server.directory}&port={server.port}"
    )


@contextlib.contextmanager
def sync_transaction(kind: str, server: PostgresServer, commit: bool) -> Iterator[Any]:
    """A transaction open on a synchronous connection of ``kind``: yields what to pass as
    ``connection=``; commits (or rolls back) when the block ends."""
    if kind == "psycopg":
        with psycopg.connect(server.conninfo()) as connection:
            yield connection
            connection.commit() if commit else connection.rollback()
    elif kind.startswith("sqlalchemy"):
        engine = create_engine(sqlalchemy_url(server), poolclass=NullPool)
        try:
            if kind == "sqlalchemy-session":
                with Session(engine) as session:
                    yield session
                    session.commit() if commit else session.rollback()
            else:
                with engine.connect() as sa_connection:
                    yield sa_connection
                    sa_connection.commit() if commit else sa_connection.rollback()
        finally:
            engine.dispose()
    else:
        use_test_database(server)
        from django.db import connection as django_connection
        from django.db import transaction

        try:
            with transaction.atomic():
                yield django_connection
                transaction.set_rollback(not commit)
        finally:
            django_connection.close()


@contextlib.asynccontextmanager
async def async_transaction(kind: str, server: PostgresServer, commit: bool) -> AsyncIterator[Any]:
    """``sync_transaction`` for an async connection of ``kind``."""
    if kind == "psycopg-async":
        async with await psycopg.AsyncConnection.connect(server.conninfo()) as connection:
            yield connection
            await (connection.commit() if commit else connection.rollback())
        return
    engine = create_async_engine(sqlalchemy_url(server), poolclass=NullPool)
    try:
        if kind == "sqlalchemy-async-session":
            async with AsyncSession(engine) as session:
                yield session
                await (session.commit() if commit else session.rollback())
        else:
            async with engine.connect() as sa_connection:
                yield sa_connection
                await (sa_connection.commit() if commit else sa_connection.rollback())
    finally:
        await engine.dispose()


async def in_transaction(
    kind: str,
    server: PostgresServer,
    commit: bool,
    sync_work: Callable[[Any], T],
    async_work: Callable[[Any], Any],
) -> T:
    """Do ``sync_work`` (in a thread, for a sync ``kind``) or ``async_work`` with a
    connection of ``kind`` in an open transaction, then commit or roll back."""
    if kind in SYNC_KINDS:

        def work() -> T:
            with sync_transaction(kind, server, commit) as connection:
                return sync_work(connection)

        return await asyncio.to_thread(work)
    async with async_transaction(kind, server, commit) as connection:
        result: T = await async_work(connection)
        return result


@pytest.mark.parametrize("kind", SYNC_KINDS + ASYNC_KINDS)
async def test_a_committed_enqueue_is_run_by_a_worker_once_committed(
    pool: Workpool, postgres_server: PostgresServer, kind: str
) -> None:
    @pool.workflow()
    def double(ctx: RunContext, x: int) -> int:
        return 2 * x

    def sync_work(connection: Any) -> str:
        handle = double.run_sync(21, connection=connection, idempotency_key="order-1")
        with pytest.raises(RunNotFoundError):  # not visible before the commit
            pool.get_run_sync(handle.id)
        return handle.id

    async def async_work(connection: Any) -> str:
        handle = await double.run(21, connection=connection, idempotency_key="order-1")
        with pytest.raises(RunNotFoundError):
            await pool.get_run(handle.id)
        return handle.id

    run_id = await in_transaction(kind, postgres_server, True, sync_work, async_work)

    async with fast_worker(pool):
        assert await pool.handle(run_id).result(timeout=30) == 42
    again = await double.run(5, idempotency_key="order-1")
    assert again.id == run_id  # the key was stored with the run


@pytest.mark.parametrize("kind", SYNC_KINDS + ASYNC_KINDS)
async def test_a_rolled_back_enqueue_leaves_nothing_not_even_its_key(
    pool: Workpool, postgres_server: PostgresServer, kind: str
) -> None:
    @pool.workflow()
    def double(ctx: RunContext, x: int) -> int:
        return 2 * x

    def sync_work(connection: Any) -> str:
        return double.run_sync(1, connection=connection, idempotency_key="order-1").id

    async def async_work(connection: Any) -> str:
        return (await double.run(1, connection=connection, idempotency_key="order-1")).id

    run_id = await in_transaction(kind, postgres_server, False, sync_work, async_work)

    with pytest.raises(RunNotFoundError):
        await pool.get_run(run_id)
    assert (await pool.list_runs()).runs == []
    again = await double.run(2, idempotency_key="order-1")
    assert again.id != run_id
    async with fast_worker(pool):
        assert await again.result(timeout=30) == 4


async def test_a_rollback_wakes_no_worker_and_a_commit_does(
    pool: Workpool, postgres_server: PostgresServer, backend_url: str
) -> None:
    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    schema = backend_url.rsplit("schema=", 1)[1]
    conninfo = postgres_server.conninfo()
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as listener:
        await listener.execute(f"LISTEN workpool_{schema}")
        for queue, commit in (("rolled-back", False), ("committed", True)):
            async with async_transaction("psycopg-async", postgres_server, commit) as connection:
                await noop.run(1, connection=connection, queue=queue)
        woken = [note.payload async for note in listener.notifies(timeout=20, stop_after=1)]
    # Notifications arrive in commit order: one of the rollback would have come first.
    assert woken == ["committed"]


@pytest.mark.parametrize("kind", ["psycopg", "psycopg-async", "django"])
async def test_the_callers_search_path_is_left_as_it_was(
    pool: Workpool, postgres_server: PostgresServer, kind: str
) -> None:
    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    def search_path(connection: Any) -> str:
        raw = connection.connection if kind == "django" else connection
        return str(raw.execute("SHOW search_path").fetchone()[0])

    def sync_work(connection: Any) -> list[str]:
        seen = [search_path(connection)]
        noop.run_sync(1, connection=connection)
        seen.append(search_path(connection))
        with pytest.raises(RunNotFoundError):  # an error raised between the statements
            pool.send_event_sync("no-such-run", "key", 1, connection=connection)
        return [*seen, search_path(connection)]

    async def async_work(connection: Any) -> list[str]:
        async def now() -> str:
            cursor = await connection.execute("SHOW search_path")
            return str((await cursor.fetchone())[0])

        seen = [await now()]
        await noop.run(1, connection=connection)
        seen.append(await now())
        with pytest.raises(RunNotFoundError):
            await pool.send_event("no-such-run", "key", 1, connection=connection)
        return [*seen, await now()]

    seen = await in_transaction(kind, postgres_server, True, sync_work, async_work)

    assert seen == ['"$user", public'] * 3


@pytest.mark.parametrize("kind", ["psycopg", "sqlalchemy-async-session"])
async def test_events_and_cancels_are_written_in_the_transaction(
    pool: Workpool, postgres_server: PostgresServer, kind: str
) -> None:
    @pool.workflow()
    async def waiter(ctx: RunContext, x: int) -> Any:
        return await ctx.step.wait_for_event("go", "go")

    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    waiting = await waiter.run(0)
    canceled = await noop.run(0)
    for payload, commit in (("rolled back", False), ("committed", True)):

        def sync_work(connection: Any) -> None:
            waiting.send_event_sync("go", payload, connection=connection)  # noqa: B023
            pool.cancel_sync(canceled.id, "by the app", connection=connection)

        async def async_work(connection: Any) -> None:
            await pool.send_event(waiting.id, "go", payload, connection=connection)  # noqa: B023
            await canceled.cancel("by the app", connection=connection)

        await in_transaction(kind, postgres_server, commit, sync_work, async_work)
        if not commit:
            assert (await pool.get_run(canceled.id)).status == "queued"

    assert (await pool.get_run(canceled.id)).cancel_reason == "by the app"
    async with fast_worker(pool):
        assert await waiting.result(timeout=30) == "committed"


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_sqlite_and_redis_pools_refuse_a_connection(
    postgres_server: PostgresServer,
    store: str,
    tmp_path: Any,
    request: pytest.FixtureRequest,
) -> None:
    url = (
        f"sqlite:///{tmp_path}/w.db"
        if store == "sqlite"
        else request.getfixturevalue("redis_server_url")
    )
    other = Workpool(url, app="tests")

    @other.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    try:
        async with async_transaction("psycopg-async", postgres_server, False) as connection:
            with pytest.raises(ConfigurationError) as refused:
                await noop.run(1, connection=connection)
    finally:
        await other.aclose()
        other.close()
    name = "SQLite" if store == "sqlite" else "Redis"
    assert str(refused.value) == (
        f"connection= joins your PostgreSQL transaction, but this pool stores runs in {name}: "
        "leave out connection= (the run is stored on its own, at once), or give the pool the "
        "postgresql:// URL of your application's database"
    )


async def test_what_cannot_be_joined_is_refused_with_what_to_do(
    pool: Workpool, postgres_server: PostgresServer
) -> None:
    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    conninfo = postgres_server.conninfo()
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as connection:
        with pytest.raises(ConfigurationError, match="autocommit mode, outside any transaction"):
            await noop.run(1, connection=connection)
        async with connection.transaction():  # an explicit transaction is joined
            await noop.run(1, connection=connection)
        with pytest.raises(TypeError, match="await the async method instead"):
            await asyncio.to_thread(noop.run_sync, 1, connection=connection)
    with pytest.raises(TypeError, match="must be a psycopg 3 Connection or AsyncConnection"):
        await noop.run(1, connection=object())

    def outside_atomic() -> None:
        use_test_database(postgres_server)
        from django.db import connection as django_connection

        try:
            noop.run_sync(1, connection=django_connection)
        finally:
            django_connection.close()

    with pytest.raises(ConfigurationError, match=r"outside transaction\.atomic\(\)"):
        await asyncio.to_thread(outside_atomic)
    blocking = pytest.raises(TypeError, match="in async code it would block the event loop")
    with psycopg.connect(conninfo) as sync_connection, blocking:
        await noop.run(1, connection=sync_connection)
    assert len((await pool.list_runs()).runs) == 1


async def test_a_connection_to_another_database_is_refused(
    pool: Workpool, postgres_server: PostgresServer
) -> None:
    @pool.workflow()
    def noop(ctx: RunContext, x: int) -> int:
        return x

    conninfo = postgres_server.conninfo()
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as admin:
        with contextlib.suppress(psycopg.errors.DuplicateDatabase):
            await admin.execute("CREATE DATABASE elsewhere")
    other = conninfo.replace(f"dbname={DATABASE}", "dbname=elsewhere")
    async with await psycopg.AsyncConnection.connect(other) as connection:
        with pytest.raises(ConfigurationError) as refused:
            await noop.run(1, connection=connection)
    assert str(refused.value).startswith(
        "connection= is on database 'elsewhere', but the pool's URL names 'workpool'"
    )


async def test_batches_many_runs_and_runs_by_name_join_the_transaction_too(
    pool: Workpool, postgres_server: PostgresServer
) -> None:
    @pool.workflow()
    def double(ctx: RunContext, x: int) -> int:
        return 2 * x

    def sync_work(connection: Any) -> list[str]:
        batch = pool.batch_sync([double.prepare(1), double.prepare(2)], connection=connection)
        many = pool.enqueue_many_sync([double.prepare(3)], connection=connection)
        by_name = pool.run_by_name_sync("double", 4, connection=connection)
        return [batch.id, *[handle.id for handle in (*batch.runs, *many, by_name)]]

    for commit in (False, True):
        batch_id, *run_ids = await in_transaction(
            "psycopg", postgres_server, commit, sync_work, sync_work
        )
        if not commit:
            with pytest.raises(BatchNotFoundError):
                await pool.get_batch(batch_id)
            assert (await pool.list_runs()).runs == []

    async with fast_worker(pool):
        outputs = [await pool.handle(run_id).result(timeout=30) for run_id in run_ids]
        assert outputs == [2, 4, 6, 8]
        assert (await (await pool.get_batch(batch_id)).wait(timeout=30)).succeeded == 2
