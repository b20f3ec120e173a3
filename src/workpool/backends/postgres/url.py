"""``postgresql://`` URLs: libpq's connection string, and the schema that holds the pool."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workpool.errors import BackendUnavailableError, ConfigurationError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "workpool"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """Where a pool lives: libpq's URL (without workpool's options) and the schema."""

    conninfo: str
    schema: str

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of the schema's wake-ups."""
        return f"workpool_{self.schema}"


def parse_postgres_url(url: str) -> PostgresTarget:
    """Split a ``postgresql://`` URL into libpq's URL and ``?schema=`` (default
    ``workpool``); every other query option goes to libpq unchanged."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigurationError(f"not a PostgreSQL URL: {url!r}")
    options = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for name, value in options if name == "schema"]
    if len(schemas) > 1:
        raise ConfigurationError(f"PostgreSQL URL option 'schema' given twice in {url!r}")
    schema = schemas[0] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.match(schema):
        raise ConfigurationError(
            f"in PostgreSQL URL {describe_postgres_url(url)!r}, schema must be a lower-case "
            f"identifier (letters, digits, _; at most 63), got {schema!r}"
        )
    rest = urlencode([(name, value) for name, value in options if name != "schema"])
    libpq = urlunsplit(("postgresql", parts.netloc, parts.path, rest, parts.fragment))
    return PostgresTarget(conninfo=libpq, schema=schema)


def describe_postgres_url(url: str) -> str:
    """The URL without its password (in the user part or the ``password`` option), safe to
    log."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    options = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(name, value) for name, value in options if name != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def unavailable(target: PostgresTarget, error: BaseException) -> BackendUnavailableError:
    """The error a caller sees when PostgreSQL cannot do the operation."""
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return BackendUnavailableError(
        f"PostgreSQL (schema {target.schema}) is unavailable: {detail}; check the URL and "
        "that the server runs"
    )
