"""The test session's private PostgreSQL server: started, reachable, restartable."""

from __future__ import annotations

import psycopg
from tests.postgres_server import PostgresServer


def test_the_session_server_answers_on_its_own_socket(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.conninfo()) as connection:
        row = connection.execute("SHOW unix_socket_directories").fetchone()
    assert row is not None
    assert row[0] == str(postgres_server.directory)
    assert postgres_server.port != 5432


def test_a_server_stopped_immediately_starts_again() -> None:
    with PostgresServer() as server:
        server.stop("immediate")
        server.start()
        with psycopg.connect(server.url()) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
