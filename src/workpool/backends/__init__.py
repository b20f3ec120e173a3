"""Backend selection by URL scheme."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from workpool.backends.base import Backend
from workpool.errors import ConfigurationError

DEFAULT_URL = "sqlite:///workpool.db"


async def open_backend(url: str, *, prefix: str = "workpool") -> Backend:
    """Open the backend a URL names; raise ConfigurationError or BackendUnavailableError.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
    ``redis://[[user]:password@]host[:port][/db]`` and ``rediss://`` (TLS).
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        from workpool.backends.sqlite.backend import SQLiteBackend

        return await SQLiteBackend.open(sqlite_path(url))
    if scheme in ("redis", "rediss"):
        from workpool.backends.redis.backend import RedisBackend

        return await RedisBackend.open(url, prefix=prefix)
    raise ConfigurationError(
        f"unsupported backend URL {url!r}: use sqlite:///path/to.db or redis://host:port/db"
    )


def sqlite_path(url: str) -> Path:
    """The file path of a ``sqlite:///`` URL (three slashes: relative, four: absolute)."""
    if not url.lower().startswith("sqlite:///"):
        raise ConfigurationError(
            f"malformed SQLite URL {url!r}: write sqlite:///relative/path.db "
            "or sqlite:////absolute/path.db"
        )
    path = url[len("sqlite:///") :]
    if not path or path.endswith("/"):
        raise ConfigurationError(f"SQLite URL {url!r} names no file: add a file name")
    return Path(path)
