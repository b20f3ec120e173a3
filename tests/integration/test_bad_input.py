"""Bad input gets a clear error, and nothing stored is lost or corrupted."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
import redis

from tests.integration.conftest import fast_worker
from workpool import (
    BackendUnavailableError,
    ConfigurationError,
    CorruptRecordError,
    PayloadError,
    RunContext,
    RunFailedError,
    UnknownWorkflowError,
    Workpool,
)
from workpool.backends import sqlite_path
from workpool.backends.postgres.url import parse_postgres_url
from workpool.backends.redis.keys import Keys


@pytest.mark.parametrize(
    "url",
    ["mysql://localhost/db", "sqlite:/relative.db", "sqlite:///", "http://x", "nonsense"],
)
def test_malformed_urls_are_refused_with_the_accepted_forms(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"sqlite:///"):
        Workpool(url)


async def test_unreachable_redis_says_so() -> None:
    pool = Workpool("redis://127.0.0.1:1/0")
    with pytest.raises(BackendUnavailableError, match=r"127\.0\.0\.1:1"):
        await pool.get_run("x")


async def test_unopenable_sqlite_file_says_so(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/missing-dir/sub/workpool.db")
    with pytest.raises(BackendUnavailableError, match="missing-dir"):
        await pool.get_run("x")


async def test_non_json_and_oversized_inputs_are_refused(backend_url: str) -> None:
    pool = Workpool(backend_url, max_payload_bytes=1000)

    @pool.workflow()
    async def take(ctx: RunContext, value: object) -> None:
        return None

    with pytest.raises(PayloadError, match="of type lock cannot be stored as JSON"):
        await take.run(threading.Lock())
    with pytest.raises(PayloadError, match="over the limit of 1000 bytes"):
        await take.run("x" * 2000)
    with pytest.raises(PayloadError, match="context"):
        await take.run(1, on_complete="take", context=object())
    with pytest.raises(PayloadError):
        await pool.run_by_name("elsewhere", float("nan"))
    await pool.aclose()


async def test_bad_names_and_options_are_refused(pool: Workpool) -> None:
    @pool.workflow()
    async def take(ctx: RunContext, value: int) -> None:
        return None

    with pytest.raises(ConfigurationError, match="queue name"):
        await take.run(1, queue="")
    with pytest.raises(ConfigurationError, match="run_at or run_after"):
        await take.run(1, run_at=datetime.now(UTC), run_after=1)
    with pytest.raises(ConfigurationError, match="idempotency_ttl"):
        await take.run(1, idempotency_key="k", idempotency_ttl=timedelta(0))
    with pytest.raises(UnknownWorkflowError, match="nope"):
        pool.get_workflow("nope")
    with pytest.raises(ConfigurationError, match="two arguments"):
        pool.workflow()(lambda ctx: None)  # type: ignore[arg-type, misc]
    with pytest.raises(ConfigurationError, match="already defined"):
        pool.workflow(name="take")(take.handler)


def corrupt_stored_field(url: str, run_id: str, field: str) -> None:
    """Overwrite one stored field of a run with text that is not JSON, behind workpool's back."""
    if url.startswith("sqlite"):
        assert field in ("input", "retry")  # column names cannot be bound as parameters
        with sqlite3.connect(sqlite_path(url)) as connection:
            connection.execute(f"UPDATE runs SET {field} = '{{broken' WHERE id = ?", (run_id,))
        return
    if url.startswith("postgres"):
        assert field in ("input", "retry")
        target = parse_postgres_url(url)
        with psycopg.connect(target.conninfo) as connection:
            connection.execute(
                f"UPDATE {target.schema}.runs SET {field} = '{{broken' WHERE id = %s",
                (run_id,),
            )
        return
    client = redis.Redis.from_url(url)
    try:
        client.hset(Keys("workpool").run(run_id), field, "{broken")
    finally:
        client.close()


async def test_corrupt_record_gives_a_clear_error_and_fails_only_that_run(
    pool: Workpool, backend_url: str
) -> None:
    @pool.workflow()
    async def echo(ctx: RunContext, value: int) -> int:
        return value

    damaged = await echo.run(1)
    healthy = await echo.run(2)
    corrupt_stored_field(backend_url, damaged.id, "input")
    with pytest.raises(CorruptRecordError, match=damaged.id):
        await pool.get_run(damaged.id)
    async with fast_worker(pool):
        assert await healthy.result(timeout=10) == 2
        with pytest.raises(CorruptRecordError):
            await damaged.result(timeout=10)
    backend = await pool.backend()
    record = await backend.get_run(damaged.id)
    assert record is not None
    assert record.status == "failed"
    assert record.error is not None
    assert "CorruptRecordError" in record.error


async def test_corrupt_retry_policy_fails_the_run_clearly(pool: Workpool, backend_url: str) -> None:
    @pool.workflow(retries=True)
    async def failing(ctx: RunContext, value: int) -> int:
        raise ValueError("handler failed")

    handle = await failing.run(1)
    corrupt_stored_field(backend_url, handle.id, "retry")
    async with fast_worker(pool):
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=10)
    assert failure.value.error.type == "CorruptRecordError"
    assert "retry policy" in failure.value.error.message
    assert "handler failed" in failure.value.error.message
