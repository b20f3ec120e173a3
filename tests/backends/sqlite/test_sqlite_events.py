"""SQLite-specific behaviour of events: a store made before them keeps its steps when
migrated, and their queries read their indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workpool.backends.base import Finish, StepRecord
from workpool.backends.sqlite.backend import SQLiteBackend
from workpool.backends.sqlite.sql import load_migrations, load_queries

NOW = 1_700_000_000.5


async def test_a_version_8_database_keeps_its_steps_and_takes_event_steps(
    tmp_path: Path,
) -> None:
    path = tmp_path / "before-events.db"
    with sqlite3.connect(path) as connection:
        for migration in load_migrations()[:8]:
            for statement in migration.statements:
                connection.execute(statement)
        connection.execute(
            "INSERT INTO runs (id, workflow, queue, status, input, created_at, available_at, "
            "has_steps) VALUES ('r1', 'w', 'default', 'queued', '{}', 1.5, 1.5, 1)"
        )
        connection.execute(
            "INSERT INTO steps (run_id, name, kind, status, attempts, output, started_at) "
            "VALUES ('r1', 'a', 'run', 'succeeded', 1, '7', 1.5)"
        )
    connection.close()
    backend = await SQLiteBackend.open(path)
    try:
        [claimed] = (await backend.claim(["default"], "w", 1, 30, 3, NOW)).runs
        assert claimed.has_steps
        waiting = StepRecord("b", "event", "waiting", 1, NOW)
        assert await backend.take_event(claimed.lease, waiting, "k", NOW) == waiting
        suspend = Finish(claimed.lease, "suspend", events=("k",))
        assert await backend.finish([suspend], NOW) == [True]
        assert await backend.send_event("r1", "k", '"yes"', NOW + 1) == "sent"
        assert (await backend.get_run("r1")) is not None
        steps = await backend.get_steps("r1")
        assert [(step.name, step.kind, step.output) for step in steps] == [
            ("a", "run", "7"),
            ("b", "event", None),
        ]
        [resumed] = (await backend.claim(["default"], "w", 1, 30, 3, NOW + 1)).runs
        taken = await backend.take_event(resumed.lease, waiting, "k", NOW + 2)
        assert taken is not None
        assert taken.output == '"yes"'
    finally:
        await backend.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    connection.close()


def test_taking_an_event_seeks_the_oldest_of_its_key_in_the_index() -> None:
    connection = sqlite3.connect(":memory:")
    for migration in load_migrations():
        for statement in migration.statements:
            connection.execute(statement)
    parameters = {"run_id": "r", "key": "k", "keys": '["k"]'}
    for name in ("take_event", "events_waiting"):
        query = "EXPLAIN QUERY PLAN " + load_queries()[name]
        plan = [row[3] for row in connection.execute(query, parameters)]
        assert any("USING COVERING INDEX events_by_key (run_id=? AND key=?)" in s for s in plan), (
            plan
        )
        assert not [step for step in plan if "TEMP B-TREE" in step], plan
