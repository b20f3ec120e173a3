"""URL resolution: explicit, environment, default."""

from __future__ import annotations

from pathlib import Path

import pytest

from workpool import Workpool
from workpool.backends import sqlite_path


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
