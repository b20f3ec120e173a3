"""Loading the backend's SQL files: named queries and numbered migrations."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

_PACKAGE = "workpool.backends.sqlite"
_NAME_LINE = re.compile(r"^--\s*name:\s*(?P<name>[a-z_][a-z0-9_]*)\s*$")
_MIGRATION_FILE = re.compile(r"^(?P<version>\d{4})_[a-z0-9_]+\.sql$")

RESERVED_VERSIONS = frozenset(range(13, 19))
"""Migration numbers other branches hold (0019, trace context, was numbered on its own
branch while 0013 to 0018 were being written elsewhere): a checkout without such a file
still migrates, skipping its number. Emptied when the migrations are renumbered."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema migration: its version and its statements, in order."""

    version: int
    name: str
    statements: tuple[str, ...]


def load_queries() -> Mapping[str, str]:
    """Read ``queries.sql`` into a read-only mapping of query name to statement."""
    text = resources.files(_PACKAGE).joinpath("queries.sql").read_text(encoding="utf-8")
    return MappingProxyType(parse_queries(text))


def parse_queries(text: str) -> dict[str, str]:
    """Split ``-- name: x`` blocks; each needs a description comment and one statement."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _NAME_LINE.match(line.strip())
        if match:
            if match["name"] in blocks:
                raise ValueError(f"queries.sql defines {match['name']!r} twice")
            current = blocks[match["name"]] = []
        elif current is not None:
            current.append(line)
    return {name: _statement(name, lines) for name, lines in blocks.items()}


def _statement(name: str, lines: list[str]) -> str:
    """The single statement of a block, after its description comment."""
    if not lines or not lines[0].strip().startswith("--"):
        raise ValueError(f"query {name!r} in queries.sql lacks its description comment")
    code = [line for line in lines if not line.strip().startswith("--")]
    statement = "\n".join(code).strip()
    if not sqlite3.complete_statement(statement) or statement.count(";") != 1:
        raise ValueError(f"query {name!r} in queries.sql must be one statement ending in ';'")
    return statement.rstrip(";").strip()


def load_migrations() -> tuple[Migration, ...]:
    """Read ``migrations/NNNN_name.sql`` files, sorted by version, numbered from 1 (a
    number of ``RESERVED_VERSIONS`` may be missing)."""
    folder = resources.files(_PACKAGE).joinpath("migrations")
    migrations = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            text = entry.read_text(encoding="utf-8")
            migrations.append(
                Migration(int(match["version"]), entry.name, tuple(split_statements(text)))
            )
    migrations.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in migrations]
    whole = range(1, versions[-1] + 1) if versions else range(0)
    if versions != [v for v in whole if v in versions or v not in RESERVED_VERSIONS]:
        raise ValueError(f"SQLite migrations must be numbered 1, 2, 3 ...; found {versions}")
    return tuple(migrations)


def split_statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (so each runs inside our transaction)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip() and not _only_comments(pending):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {pending!r}")
    return statements


def _only_comments(text: str) -> bool:
    """True if every non-blank line is a ``--`` comment."""
    return all(line.strip().startswith("--") for line in text.splitlines() if line.strip())
