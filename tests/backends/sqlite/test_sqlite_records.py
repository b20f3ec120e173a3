"""SQLite-only behaviour: open errors, corrupt rows, the exact hook input, closing."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from workpool.backends.base import CompletionHook, Finish, NewRun
from workpool.backends.sqlite.backend import SQLiteBackend
from workpool.errors import BackendUnavailableError, CorruptRecordError

NOW = 1_700_000_000.0


async def _backend(tmp_path: Path) -> SQLiteBackend:
    return await SQLiteBackend.open(tmp_path / "workpool.db")


async def test_opening_in_a_missing_directory_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "workpool.db"

    with pytest.raises(BackendUnavailableError, match=re.escape(str(path))):
        await SQLiteBackend.open(path)


async def test_opening_a_file_that_is_not_a_database_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are not the pages you are looking for" * 100)

    with pytest.raises(BackendUnavailableError, match=re.escape(str(path))):
        await SQLiteBackend.open(path)


async def _corrupted(tmp_path: Path, assignment: str) -> SQLiteBackend:
    """A backend holding run-1 (queued, one hook) after ``UPDATE runs SET <assignment>``."""
    backend = await _backend(tmp_path)
    hook = CompletionHook("notify", "hooks", "{}", None, False)
    await backend.enqueue([NewRun("run-1", "w", "q", "{}", NOW, hooks=(hook,))], NOW)
    with sqlite3.connect(tmp_path / "workpool.db") as connection:
        connection.execute("UPDATE runs SET " + assignment)
    connection.close()
    return backend


@pytest.mark.parametrize(
    ("column", "value"), [("attempts", "'many'"), ("created_at", "'noon'"), ("input", "X'7B7D'")]
)
async def test_get_run_of_a_wrongly_typed_column_raises_corrupt_record(
    tmp_path: Path, column: str, value: str
) -> None:
    backend = await _corrupted(tmp_path, column + " = " + value)

    try:
        with pytest.raises(CorruptRecordError, match=f"run run-1: column '{column}'"):
            await backend.get_run("run-1")
    finally:
        await backend.close()


async def test_ending_a_run_with_unreadable_hooks_raises_corrupt_record(tmp_path: Path) -> None:
    backend = await _corrupted(tmp_path, "hooks = '[{\"workflow\": 1}]'")

    try:
        with pytest.raises(CorruptRecordError, match="run run-1: column 'hooks'"):
            await backend.cancel("run-1", None, NOW)
        record = await backend.get_run("run-1")
    finally:
        await backend.close()
    assert record is not None
    assert record.status == "queued"  # the failed transaction was rolled back


async def test_hook_input_embeds_the_stored_json(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    hook = CompletionHook("notify", "hooks", '{"channel": "ops"}', None, False)
    await backend.enqueue([NewRun("run-1", "w", "q", "{}", NOW, hooks=(hook,))], NOW)
    (claimed,) = (await backend.claim(["q"], "worker", 1, 30.0, 3, NOW)).runs
    await backend.finish([Finish(claimed.lease, "succeeded", output='{"sent": [1, 2.5]}')], NOW)

    record = await backend.get_run("run-1-0")
    await backend.close()

    assert record is not None
    assert json.loads(record.input) == {
        "run_id": "run-1",
        "workflow": "w",
        "context": {"channel": "ops"},
        "result": {"status": "succeeded", "output": {"sent": [1, 2.5]}},
    }
    assert list(json.loads(record.input)) == ["run_id", "workflow", "context", "result"]


async def test_a_closed_backend_refuses_work(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    await backend.close()
    await backend.close()

    with pytest.raises(BackendUnavailableError, match="closed"):
        await backend.get_run("run-1")
