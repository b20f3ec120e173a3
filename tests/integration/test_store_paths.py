"""A relative SQLite URL names a file relative to the process's current directory, so
wherever the client reports its store (repr, errors) it names the absolute path: a web
process and a worker started in two directories show two different files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from workpool import BackendUnavailableError, Workpool


async def test_a_relative_sqlite_store_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pool = Workpool("sqlite:///shop.db")
    try:
        backend = await pool.backend()
        assert f"sqlite:///{tmp_path / 'shop.db'}" in repr(pool)
        assert repr(backend) == f"<SQLiteBackend {tmp_path / 'shop.db'}>"
    finally:
        await pool.aclose()


async def test_a_store_that_cannot_be_opened_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").write_text("a file where the URL wants a directory")
    pool = Workpool("sqlite:///data/shop.db")
    with pytest.raises(BackendUnavailableError) as caught:
        await pool.get_queue("default")
    assert f"cannot open SQLite database {tmp_path / 'data' / 'shop.db'}:" in str(caught.value)
    with pytest.raises(BackendUnavailableError, match=str(tmp_path / "data" / "shop.db")):
        await asyncio.to_thread(pool.get_queue_sync, "default")
    pool.close()


async def test_a_redis_store_is_named_without_its_password(redis_server_url: str) -> None:
    url = redis_server_url.replace("redis://", "redis://default:s3cret@")
    pool = Workpool(redis_server_url, prefix="shop")
    try:
        backend = await pool.backend()
        assert repr(backend) == f"<RedisBackend {redis_server_url} (prefix shop)>"
        assert "s3cret" not in repr(Workpool(url))
    finally:
        await pool.aclose()
