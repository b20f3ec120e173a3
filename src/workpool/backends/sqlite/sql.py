"""Loading the backend's SQL files: named queries and numbered migrations."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

_PACKAGE = "workpool.backends.sqlite"
_NAME_LINE = re.compile(r"^--\s*(?P<kind>name|fragment):\s*(?P<name>[a-z_][a-z0-9_]*)\s*$")
_FRAGMENT_USE = re.compile(r"\{(?P<name>[a-z_][a-z0-9_]*)\}")
_MIGRATION_FILE = re.compile(r"^(?P<version>\d{4})_[a-z0-9_]+\.sql$")


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
    """Split ``-- name: x`` blocks; each needs a description comment and one statement.
    A ``-- fragment: y`` block is an expression (described too) that queries write as
    ``{y}``, put in as it is, in parentheses."""
    blocks: dict[str, list[str]] = {}
    fragments: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _NAME_LINE.match(line.strip())
        if match:
            if match["name"] in blocks or match["name"] in fragments:
                raise ValueError(f"queries.sql defines {match['name']!r} twice")
            kind = blocks if match["kind"] == "name" else fragments
            current = kind[match["name"]] = []
        elif current is not None:
            current.append(line)
    expressions = {name: _fragment(name, lines) for name, lines in fragments.items()}

    def put_in(name: str, statement: str) -> str:
        def expression(use: re.Match[str]) -> str:
            if use["name"] not in expressions:
                raise ValueError(f"query {name!r} in queries.sql uses no fragment {use[0]}")
            return expressions[use["name"]]

        return _FRAGMENT_USE.sub(expression, statement)

    return {name: put_in(name, _statement(name, lines)) for name, lines in blocks.items()}


def _fragment(name: str, lines: list[str]) -> str:
    """A fragment's expression, after its description comment, in parentheses."""
    if not lines or not lines[0].strip().startswith("--"):
        raise ValueError(f"fragment {name!r} in queries.sql lacks its description comment")
    code = [line.strip() for line in lines if line.strip() and not line.strip().startswith("--")]
    return "(" + "\n".join(code) + ")"


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
    """Read ``migrations/NNNN_name.sql`` files, sorted by version, numbered from 1."""
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
    if versions != list(range(1, len(versions) + 1)):
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
