"""Loading the backend's SQL files: named queries and numbered migrations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from workpool.backends.sqlite.sql import parse_queries

_PACKAGE = "workpool.backends.postgres"
_MIGRATION_FILE = re.compile(r"^(?P<version>\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema migration: its version, file name and script."""

    version: int
    name: str
    script: str


def load_queries() -> Mapping[str, str]:
    """Read ``queries.sql`` into a read-only mapping of query name to statement (blocks as
    the SQLite backend's; parameters are psycopg's ``%(name)s``)."""
    text = resources.files(_PACKAGE).joinpath("queries.sql").read_text(encoding="utf-8")
    return MappingProxyType(parse_queries(text))


def load_migrations() -> tuple[Migration, ...]:
    """Read ``migrations/NNNN_name.sql`` files, sorted by version, numbered from 1."""
    folder = resources.files(_PACKAGE).joinpath("migrations")
    migrations = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            text = entry.read_text(encoding="utf-8")
            migrations.append(Migration(int(match["version"]), entry.name, text))
    migrations.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"PostgreSQL migrations must be numbered 1, 2, 3 ...; found {versions}")
    return tuple(migrations)
