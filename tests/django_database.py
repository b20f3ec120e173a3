"""Django's ``default`` database pointed at the test session's PostgreSQL, in this
process: shared by every test that enqueues inside ``transaction.atomic()``, whichever
configured Django first (tests/contrib set it up from the test project's settings, with
no database; tests/integration configures it directly)."""

from __future__ import annotations

import django
from asgiref.local import Local
from django.conf import settings

from tests.postgres_server import DATABASE, PostgresServer


def use_test_database(server: PostgresServer) -> None:
    """Make ``server``'s database Django's ``default``, configuring Django if nobody did."""
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE,
        "USER": DATABASE,
        "HOST": str(server.directory),
        "PORT": server.port,
    }
    if not settings.configured:
        settings.configure(DATABASES={"default": database}, USE_TZ=True)
        django.setup()
        return
    if settings.DATABASES.get("default", {}).get("PORT") == server.port:
        return
    from django.db import connections

    settings.DATABASES = {"default": database}
    # The handler read DATABASES once (a cached property) and keeps a connection per
    # thread: both forgotten, so the next use connects to the new database.
    connections.__dict__.pop("settings", None)
    connections._settings = None  # type: ignore[attr-defined]
    connections._connections = Local(connections.thread_critical)  # type: ignore[attr-defined]
