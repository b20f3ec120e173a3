"""Backend selection by URL scheme."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from workpool.backends.base import Backend
from workpool.errors import ConfigurationError

DEFAULT_URL = "sqlite:///workpool.db"


async def open_backend(url: str, *, prefix: str = "workpool") -> Backend:
    """Open the backend a URL names; raise ConfigurationError or BackendUnavailableError.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` (add
    ``?synchronous=normal`` to trade the last commits on power loss for speed),
    ``redis://[[user]:password@]host[:port][/db]`` and ``rediss://`` (TLS),
    ``postgresql://[user[:password]@][host][:port]/database[?schema=name&...]`` (or
    ``postgres://``; ``schema``, default ``workpool``, lets several pools share a
    database; the other options are libpq's).
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        from workpool.backends.sqlite.backend import SQLiteBackend

        return await SQLiteBackend.open(sqlite_path(url), synchronous=sqlite_synchronous(url))
    if scheme in ("redis", "rediss"):
        from workpool.backends.redis.backend import RedisBackend

        return await RedisBackend.open(url, prefix=prefix)
    if scheme in ("postgresql", "postgres"):
        from workpool.backends.postgres.backend import PostgresBackend

        return await PostgresBackend.open(url)
    raise ConfigurationError(
        f"unsupported backend URL {url!r}: use sqlite:///path/to.db, redis://host:port/db "
        "or postgresql://user@host/database"
    )


def sqlite_path(url: str) -> Path:
    """The file path of a ``sqlite:///`` URL (three slashes: relative, four: absolute)."""
    if not url.lower().startswith("sqlite:///"):
        raise ConfigurationError(
            f"malformed SQLite URL {url!r}: write sqlite:///relative/path.db "
            "or sqlite:////absolute/path.db"
        )
    path = url[len("sqlite:///") :].split("?", 1)[0]
    if not path or path.endswith("/"):
        raise ConfigurationError(f"SQLite URL {url!r} names no file: add a file name")
    return Path(path)


SYNCHRONOUS_LEVELS = ("FULL", "NORMAL")


def sqlite_synchronous(url: str) -> str:
    """The ``PRAGMA synchronous`` level a ``sqlite:///`` URL asks for: FULL by default.

    FULL syncs the write-ahead log at every commit: a commit survives power loss.
    NORMAL (``?synchronous=normal``) syncs at checkpoints only: still atomic and
    consistent, and safe against a process crash, but the last commits before a
    power loss or OS crash may be lost.
    """
    sqlite_path(url)
    options = parse_qs(urlsplit(url).query, keep_blank_values=True)
    for name, values in options.items():
        if name != "synchronous":
            raise ConfigurationError(
                f"unknown SQLite URL option {name!r} in {url!r}: the only option is "
                "synchronous=full|normal"
            )
        if len(values) > 1:
            raise ConfigurationError(f"SQLite URL option {name!r} given twice in {url!r}")
    level = options.get("synchronous", ["full"])[0].upper()
    if level not in SYNCHRONOUS_LEVELS:
        raise ConfigurationError(
            f"in SQLite URL {url!r}, synchronous must be full or normal, got {level.lower()!r}"
        )
    return level


def describe_store(url: str, *, prefix: str = "workpool") -> str:
    """The store a URL names, safe to log: a SQLite URL with the absolute path of its
    file (a relative path is relative to the current directory), a Redis URL without
    user name, password or query, and its key prefix."""
    if url.lower().startswith("sqlite:"):
        query = urlsplit(url).query
        return f"sqlite:///{sqlite_path(url).resolve()}" + (f"?{query}" if query else "")
    if urlsplit(url).scheme.lower() in ("postgresql", "postgres"):
        from workpool.backends.postgres.url import describe_postgres_url, parse_postgres_url

        schema = parse_postgres_url(url).schema
        return f"{describe_postgres_url(url)} (schema {schema})"
    from workpool.backends.redis.url import describe_url

    return f"{describe_url(url)} (prefix {prefix})"


def postgres_schema(url: str) -> str:
    """The schema a ``postgresql://`` URL names (``?schema=``, default ``workpool``);
    ConfigurationError if it is no plain lower-case identifier."""
    from workpool.backends.postgres.url import parse_postgres_url

    return parse_postgres_url(url).schema
