"""The PostgreSQL backend's hot paths send a fixed number of statements, whatever the
number of runs: an enqueue of many runs, a claim over many workflows, a finish of many
successes. Counted by the server (pg_stat_statements, loaded in a server of this
module's own), BEGIN and COMMIT included: each statement is a round trip."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import psycopg
import pytest
from tests.conformance.helpers import new_run
from tests.postgres_server import PostgresServer

from workpool.backends import open_backend
from workpool.backends.base import Backend, Finish

RUNS = 40
WORKFLOWS = [f"workflow_{number}" for number in range(7)]


@pytest.fixture(scope="module")
def counting_server() -> Iterator[PostgresServer]:
    """A server that counts every statement it runs."""
    try:
        server = PostgresServer(settings={"shared_preload_libraries": "pg_stat_statements"}).start()
    except RuntimeError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
async def backend(counting_server: PostgresServer) -> AsyncIterator[Backend]:
    opened = await open_backend(counting_server.url("round_trips"))
    try:
        yield opened
    finally:
        await opened.close()
        with psycopg.connect(counting_server.conninfo(), autocommit=True) as connection:
            connection.execute("DROP SCHEMA round_trips CASCADE")


async def statements(server: PostgresServer, action: Callable[[], Awaitable[object]]) -> int:
    """How many statements the server ran for ``action`` (this count's own left out, and
    the LISTEN of the backend's listening connection, which its first claim opens)."""
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        connection.execute("SELECT pg_stat_statements_reset()")
        await action()
        row = connection.execute(
            "SELECT sum(calls) FROM pg_stat_statements"
            " WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'LISTEN %'"
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


async def test_an_enqueue_of_many_plain_runs_is_a_few_statements(
    counting_server: PostgresServer, backend: Backend
) -> None:
    now = time.time()
    runs = [new_run(now) for _ in range(RUNS)]

    count = await statements(counting_server, lambda: backend.enqueue(runs, now))

    # BEGIN and SET LOCAL search_path (one round trip), the INSERT, COMMIT; then the
    # NOTIFY, in a transaction of its own (notifying.py).
    assert count <= 5


async def test_a_claim_over_many_workflows_and_a_finish_of_many_runs_are_a_few_statements(
    counting_server: PostgresServer, backend: Backend
) -> None:
    now = time.time()
    await backend.enqueue([new_run(now, workflow=WORKFLOWS[n % 7]) for n in range(RUNS)], now)
    claimed = []

    async def claim() -> None:
        result = await backend.claim(["default"], "w", RUNS, 30.0, 3, now, workflows=WORKFLOWS)
        claimed.extend(result.runs)

    claim_count = await statements(counting_server, claim)
    finishes = [Finish(run.lease, "succeeded", output="1") for run in claimed]
    finish_count = await statements(counting_server, lambda: backend.finish(finishes, now))

    assert len(claimed) == RUNS
    # BEGIN and SET LOCAL (one round trip); promote due runs and due timers, reap, runs
    # past their deadline, the queue's settings, the oldest run to isolate, the claimable
    # runs of the 7 workflows, their check, the lease, the next wake-up; COMMIT. And, the
    # backend's first claim, the NOTIFY that checks its new LISTEN hears (listening.py).
    assert claim_count <= 14
    # BEGIN and SET LOCAL; the runs' check, the queue's settings, the UPDATE, the minutes'
    # and the hours' counters; COMMIT; the NOTIFY after it.
    assert finish_count <= 9
