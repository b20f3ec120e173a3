"""``postgresql://`` URLs: libpq's connection string, and the schema that holds the pool."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workpool.errors import BackendUnavailableError, ConfigurationError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "workpool"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_LONGEST_NAME = 63
_LISTEN = {"on": True, "off": False}
WORKPOOL_OPTIONS = ("schema", "listen")


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """Where a pool lives: libpq's URL (without workpool's options), the schema, and
    whether workers LISTEN for wake-ups (``?listen=off``: they poll)."""

    conninfo: str
    schema: str
    listen: bool = True

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of the schema's wake-ups (a channel name, like any
        identifier, has at most 63 bytes: a longer schema's is shortened and hashed)."""
        channel = f"workpool_{self.schema}"
        if len(channel) <= _LONGEST_NAME:
            return channel
        digest = hashlib.sha256(self.schema.encode()).hexdigest()[:12]
        return f"{channel[: _LONGEST_NAME - 13]}_{digest}"


def parse_postgres_url(url: str) -> PostgresTarget:
    """Split a ``postgresql://`` URL into libpq's URL, ``?schema=`` (default
    ``workpool``) and ``?listen=on|off`` (default on); every other query option goes to
    libpq unchanged."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigurationError(f"not a PostgreSQL URL: {url!r}")
    options = parse_qsl(parts.query, keep_blank_values=True)
    schema = _option(url, options, "schema") or DEFAULT_SCHEMA
    if not _SCHEMA_NAME.match(schema):
        raise ConfigurationError(
            f"in PostgreSQL URL {describe_postgres_url(url)!r}, schema must be a lower-case "
            f"identifier (letters, digits, _; at most 63), got {schema!r}"
        )
    listen = _option(url, options, "listen")
    listen = "on" if listen is None else listen
    if listen not in _LISTEN:
        raise ConfigurationError(
            f"in PostgreSQL URL {describe_postgres_url(url)!r}, listen must be on or off "
            f"(off: workers poll, as they must behind PgBouncer in transaction mode), "
            f"got {listen!r}"
        )
    rest = urlencode([(name, value) for name, value in options if name not in WORKPOOL_OPTIONS])
    libpq = urlunsplit(("postgresql", parts.netloc, parts.path, rest, parts.fragment))
    return PostgresTarget(conninfo=libpq, schema=schema, listen=_LISTEN[listen])


def _option(url: str, options: list[tuple[str, str]], name: str) -> str | None:
    """The value of workpool's option ``name``, or None; ConfigurationError if repeated."""
    values = [value for key, value in options if key == name]
    if len(values) > 1:
        raise ConfigurationError(
            f"PostgreSQL URL option {name!r} given twice in {describe_postgres_url(url)!r}"
        )
    return values[0] if values else None


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
