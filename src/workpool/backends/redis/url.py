"""Redis URLs: what redis-py would misread, refused up front, and a form safe to show."""

from __future__ import annotations

from urllib.parse import urlsplit

from workpool.errors import ConfigurationError

URL_FORMAT = "write redis://[[user]:password@]host[:port][/db], or rediss:// for TLS"


def describe_url(url: str) -> str:
    """The URL without user name, password or query, safe to show in messages and logs."""
    scheme, _, rest = url.partition("://")
    location = rest.split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{location.rpartition('@')[2]}"


def check_url(url: str) -> None:
    """Raise ConfigurationError for a URL redis-py would misread or reject."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed lazily; raises ValueError when not a number
    except ValueError as error:
        raise ConfigurationError(
            f"malformed Redis URL {describe_url(url)!r}: {error}; {URL_FORMAT}"
        ) from None
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise ConfigurationError(
            f"malformed Redis URL {describe_url(url)!r}: database {database!r} is not a "
            f"number; {URL_FORMAT}"
        )
