"""URL resolution: explicit, environment, default."""

from __future__ import annotations

from pathlib import Path

import pytest

from workpool import Workpool
from workpool.backends import sqlite_path, sqlite_synchronous
from workpool.errors import ConfigurationError


def test_default_is_a_sqlite_file_in_the_working_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WORKPOOL_URL", raising=False)
    assert Workpool().url == "sqlite:///workpool.db"


def test_environment_url_is_used_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKPOOL_URL", "redis://example:6379/2")
    assert Workpool().url == "redis://example:6379/2"
    assert Workpool("sqlite:///x.db").url == "sqlite:///x.db"


def test_sqlite_paths() -> None:
    assert sqlite_path("sqlite:///relative/x.db") == Path("relative/x.db")
    assert sqlite_path("sqlite:////abs/x.db") == Path("/abs/x.db")


def test_sqlite_durability_is_full_unless_the_url_asks_for_normal() -> None:
    assert sqlite_synchronous("sqlite:///x.db") == "FULL"
    assert sqlite_synchronous("sqlite:///x.db?synchronous=normal") == "NORMAL"
    assert sqlite_synchronous("sqlite:///x.db?synchronous=FULL") == "FULL"
    assert sqlite_path("sqlite:///x.db?synchronous=normal") == Path("x.db")


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("sqlite:///x.db?synchronous=off", "synchronous must be full or normal"),
        ("sqlite:///x.db?cache=shared", "unknown SQLite URL option 'cache'"),
        ("sqlite:///x.db?synchronous=normal&synchronous=full", "given twice"),
    ],
)
def test_bad_sqlite_url_options_are_configuration_errors(url: str, complaint: str) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        sqlite_synchronous(url)


def test_a_pools_repr_names_its_store_without_the_password() -> None:
    pool = Workpool("redis://user:s3cret@127.0.0.1:6379/0", prefix="shop")
    assert repr(pool) == "<Workpool redis://127.0.0.1:6379/0 (prefix shop) workflows=0>"
