"""The SQLite backend's SQL files: migrations, named queries, and their query plans."""

from __future__ import annotations

import ast
import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workpool.backends import open_backend
from workpool.backends.base import Enqueued, NewRun
from workpool.backends.sqlite import backend as backend_module
from workpool.backends.sqlite import operations as operations_module
from workpool.backends.sqlite import reads as reads_module
from workpool.backends.sqlite import recovery as recovery_module
from workpool.backends.sqlite.backend import SQLiteBackend
from workpool.backends.sqlite.sql import (
    load_migrations,
    load_queries,
    parse_queries,
)

HOT_QUERIES = (
    "find_idempotency_key",
    "insert_run",
    "set_progress",
    "promote_due",
    "expired_leases",
    "past_deadline",
    "queue_workflows",
    "oldest_isolated",
    "claimable_in_pair",
    "claim_queued",
    "next_wake_at",
    "renew_leases",
    "held_lease",
    "end_run",
    "retry_run",
    "requeue_run",
    "cancelable_in_pair",
    "get_run",
    "waiters_of",
    "promote_timers",
    "suspend_run",
    "resume_now",
    "unfinished_among",
    "record_child_outcome",
    "wake_suspended",
    "awaited_children",
    "child_outcome",
    "save_step",
    "mark_has_steps",
    "get_children",
    "leave_gate",
    "count_admitted",
    "gate_admitted",
    "first_waiting",
    "admit_runs",
    "wait_at_gate",
    "listed_ids",
    "listed_ids_after",
    "runs_by_ids",
    "pair_activity",
    "oldest_claimable",
    "purgeable_runs",
    "delete_runs",
    "add_counters",
    "rerun_source",
    "event_target",
    "take_event",
    "events_waiting",
    "get_step",
    "publish_value",
    "get_published",
    "pending_debounced",
    "remember_debounced",
    "collapse_debounced",
    "join_batch",
    "get_batch",
    "count_in_batch",
    "batch_run_ended",
    "note_batch_failure",
    "batch_failures",
    "complete_batch",
    "cancelable_in_batch",
    "trigger_latest_run",
    "remember_trigger_run",
    "trim_skipped_ticks",
)
SAMPLE_PARAMETERS = {
    "id": "run-1",
    "workflow": "send_email",
    "queue": "default",
    "queues": '["default", "other"]',
    "leases": '[["run-1", "token", "{}"]]',
    "key": "key",
    "token": "token",
    "ran": 0.0,
    "status": "queued",
    "input": "{}",
    "trace_context": None,
    "output": None,
    "error": None,
    "retry": None,
    "retry_at": 1.0,
    "hooks": "[]",
    "now": 1.0,
    "available_at": 1.0,
    "cursor": "run-9",
    "minute": 60,
    "executions": 1,
    "timed": 1,
    "run_time": 1.0,
    "succeeded": 1,
    "failed": 0,
    "canceled": 0,
    "retried": 0,
    "expires_at": 2.0,
    "before": 3.0,
    "idempotency_key": None,
    "timeout": None,
    "deadline": None,
    "gate_list": None,
    "progress": "{}",
    "batch": 100,
    "limit": 10,
    "worker_id": "worker",
    "reason": None,
    "cancel_reason": None,
    "cancel_requested": 0,
    "lease_loss": 0,
    "resume": 0,
    "run_id": "run-1",
    "parent_run_id": None,
    "parent_step": None,
    "parent": "run-0",
    "child": "run-1",
    "step": "charge",
    "ids": '["run-1"]',
    "wake_at": None,
    "name": "charge",
    "kind": "run",
    "attempts": 1,
    "child_run_id": None,
    "started_at": 1.0,
    "finished_at": 1.0,
    "gate": "4:send:",
    "gate_limit": 1,
    "delta": 1,
    "room": 2,
    "rate_limits": None,
    "isolate": 0,
    "workflows": '["send_email", "charge"]',
    "priority": 0,
    "rank_offset": 0.0,
    "events": '["approval"]',
    "keys": '["approval"]',
    "value": "{}",
    "batch_id": "batch-1",
    "until": None,
    "position": 1,
    "args_hash": None,
    "count": 2,
    "callback_run_id": None,
    "trigger_id": "0 3 * * * UTC",
    "kept": 100,
}


def _migrated(connection: sqlite3.Connection) -> sqlite3.Connection:
    for migration in load_migrations():
        for statement in migration.statements:
            connection.execute(statement)
    return connection


async def test_opening_a_new_file_migrates_it_to_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    backend = await SQLiteBackend.open(path)
    await backend.close()

    with sqlite3.connect(path) as connection:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_schema")}
    connection.close()
    assert version == load_migrations()[-1].version == 21
    assert mode == "wal"
    assert {"runs", "idempotency_keys", "runs_claimable", "steps", "workers", "wakeups"} <= tables
    assert {"events", "events_by_key", "published"} <= tables
    assert {"batches", "batch_failures", "runs_of_batch", "debounces"} <= tables
    assert {"trigger_runs", "skipped_ticks", "failure_groups"} <= tables
    assert "runs_queued_by_queue" not in tables


async def test_a_version_1_database_keeps_its_runs_and_keys_when_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        for statement in load_migrations()[0].statements:
            connection.execute(statement)
        connection.execute(
            "INSERT INTO runs (id, workflow, queue, status, input, created_at, available_at) "
            "VALUES ('r1', 'w', 'default', 'queued', '{}', 1.5, 1.5)"
        )
        connection.execute("INSERT INTO idempotency_keys VALUES ('w', 'k', 'r1', 99.0)")
    connection.close()
    backend = await SQLiteBackend.open(path)
    try:
        record = await backend.get_run("r1")
        assert record is not None
        assert (record.status, record.created_at) == ("queued", 1.5)
        again = await backend.enqueue(
            [NewRun("r2", "w", "default", "{}", 2.0, idempotency_key="k")], 2.0
        )
        assert again == [Enqueued("r1", created=False)]
    finally:
        await backend.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        assert (
            connection.execute("PRAGMA user_version").fetchone()[0] == load_migrations()[-1].version
        )
    connection.close()


def test_migrations_are_numbered_from_one_and_each_sets_its_version() -> None:
    connection = sqlite3.connect(":memory:")
    for migration in load_migrations():
        for statement in migration.statements:
            connection.execute(statement)
        assert connection.execute("PRAGMA user_version").fetchone()[0] == migration.version


def test_every_named_query_is_used_by_the_backend() -> None:
    modules = (backend_module, reads_module, recovery_module)
    operations = Path(operations_module.__file__ or "").parent.glob("*.py")
    sources = [Path(module.__file__ or "") for module in modules] + sorted(operations)
    used = {
        node.value
        for source in sources
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert set(load_queries()) <= used
    assert set(HOT_QUERIES) <= set(load_queries())


@pytest.mark.parametrize("name", HOT_QUERIES)
def test_hot_queries_search_an_index_and_never_sort_or_scan_runs(name: str) -> None:
    connection = _migrated(sqlite3.connect(":memory:"))
    query = load_queries()[name]

    plan = [row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + query, SAMPLE_PARAMETERS)]

    assert not [step for step in plan if step.startswith("SCAN runs")], plan
    assert not [step for step in plan if "TEMP B-TREE" in step], plan
    if name not in (
        "insert_run",
        "save_step",
        "count_admitted",
        "add_counters",
        "publish_value",
        "note_batch_failure",
        "remember_debounced",
        "remember_trigger_run",
    ):  # upserts
        assert any(step.startswith("SEARCH") and " USING " in step for step in plan), plan


def test_claim_searches_the_claimable_index() -> None:
    """A claim seeks each served (queue, workflow) pair's claimable runs, runs to isolate
    apart, in the index's order (no sort), then leases the chosen runs by id."""
    connection = _migrated(sqlite3.connect(":memory:"))

    def plan(name: str) -> list[str]:
        query = "EXPLAIN QUERY PLAN " + load_queries()[name]
        return [row[3] for row in connection.execute(query, SAMPLE_PARAMETERS)]

    searched = "SEARCH runs USING INDEX runs_claimable (queue=? AND workflow=? AND isolate=?)"
    assert plan("claimable_in_pair") == [searched]
    assert searched in plan("oldest_isolated")
    assert searched.replace("runs", "r", 1) in plan("oldest_claimable")
    # (not a covering index: the lease checks the row's values, sound_run, as it writes it)
    assert "SEARCH runs USING INDEX sqlite_autoindex_runs_1 (id=?)" in plan("claim_queued")


def test_claims_and_gates_read_runs_in_rank_order_from_their_index() -> None:
    """Priorities: the claim and gate indexes order by the rank expression itself, so
    taking the first runs by rank is a seek that reads them in order (no sort), and the
    rank is never a column to keep in step with available_at."""
    connection = _migrated(sqlite3.connect(":memory:"))
    indexes = dict(connection.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'index'"))
    assert "available_at - rank_offset)" in indexes["runs_claimable"]
    assert "available_at - rank_offset)" in indexes["runs_waiting_by_gate"]
    for name, index in (
        ("claimable_in_pair", "runs_claimable"),
        ("first_waiting", "runs_waiting_by_gate"),
    ):
        assert "ORDER BY available_at - rank_offset" in load_queries()[name]
        query = "EXPLAIN QUERY PLAN " + load_queries()[name]
        plan = [row[3] for row in connection.execute(query, SAMPLE_PARAMETERS)]
        assert any(f"USING INDEX {index} (" in step for step in plan), plan
        assert not [step for step in plan if "TEMP B-TREE" in step], plan


def test_batches_and_debounce_read_their_own_indexes() -> None:
    """A batch's cancelable runs are one seek of an index that holds only runs with a
    batch; a debounced run's predecessor, of the debounce table's key, then of the run."""
    connection = _migrated(sqlite3.connect(":memory:"))

    def plan(name: str) -> list[str]:
        query = "EXPLAIN QUERY PLAN " + load_queries()[name]
        return [row[3] for row in connection.execute(query, SAMPLE_PARAMETERS)]

    assert plan("cancelable_in_batch") == ["SEARCH runs USING INDEX runs_of_batch (batch_id=?)"]
    assert plan("pending_debounced") == [
        "SEARCH debounces USING PRIMARY KEY (workflow=? AND key=?)",
        "SEARCH runs USING INDEX sqlite_autoindex_runs_1 (id=?)",
    ]


def test_query_blocks_need_a_description_and_one_statement() -> None:
    assert parse_queries("-- name: one\n-- Says what.\nSELECT 1;\n") == {"one": "SELECT 1"}
    with pytest.raises(ValueError, match="description"):
        parse_queries("-- name: bare\nSELECT 1;\n")
    with pytest.raises(ValueError, match="one statement"):
        parse_queries("-- name: two\n-- Two.\nSELECT 1; SELECT 2;\n")


def test_a_fragment_is_put_in_the_queries_that_name_it() -> None:
    text = "-- fragment: small\n-- Says what.\nx < 2\n-- name: one\n-- Uses it.\nSELECT {small};\n"
    assert parse_queries(text) == {"one": "SELECT (x < 2)"}
    with pytest.raises(ValueError, match="no fragment"):
        parse_queries("-- name: one\n-- Uses none.\nSELECT {other};\n")


OPEN_AND_ENQUEUE = textwrap.dedent(
    """
    import asyncio, sys, pathlib
    from workpool.backends.base import NewRun
    from workpool.backends.sqlite.backend import SQLiteBackend

    async def main() -> None:
        backend = await SQLiteBackend.open(pathlib.Path(sys.argv[1]))
        run = NewRun(id=sys.argv[2], workflow="w", queue="q", input="{}", available_at=0.0)
        await backend.enqueue([run], 1.0)
        await backend.close()

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_several_processes_can_open_the_same_new_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            OPEN_AND_ENQUEUE,
            str(path),
            f"run-{index}",
            stderr=subprocess.PIPE,
        )
        for index in range(6)
    ]
    outcomes = [await process.communicate() for process in processes]

    assert [process.returncode for process in processes] == [0] * 6, outcomes
    with sqlite3.connect(path) as connection:
        count = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
    connection.close()
    assert (count, version) == (6, load_migrations()[-1].version)


@pytest.mark.parametrize(("url_option", "level"), [("", 2), ("?synchronous=normal", 1)])
async def test_the_url_chooses_how_often_sqlite_syncs(
    tmp_path: Path, url_option: str, level: int
) -> None:
    backend = await open_backend(f"sqlite:///{tmp_path}/sync.db{url_option}")
    assert isinstance(backend, SQLiteBackend)
    read = await backend._thread.read(lambda c: c.execute("PRAGMA synchronous").fetchone()[0])
    await backend.close()
    assert read == level  # 2: FULL (the default), 1: NORMAL
