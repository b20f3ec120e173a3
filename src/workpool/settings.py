"""Settings: the resolved configuration the client, engine and worker receive.

A frozen value built once from ``Workpool(...)``'s arguments (``Settings.resolve``
checks them), so code below the facade reads plain values, never the pool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta

from workpool.backends import DEFAULT_URL, postgres_schema, sqlite_synchronous
from workpool.clock import Clock, SystemClock
from workpool.errors import ConfigurationError
from workpool.options import RetryPolicy
from workpool.serialization import DEFAULT_MAX_PAYLOAD_BYTES
from workpool.validation import as_timedelta, check_count, check_name

DEFAULT_RETENTION = timedelta(days=7)
"""How long finished runs are kept by default."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every layer needs to know of a pool's configuration (see ``Workpool``)."""

    url: str
    """The backend's URL (``sqlite:///...``, ``redis://...`` or ``postgresql://...``)."""
    prefix: str = "workpool"
    """Namespace of every Redis key."""
    app: str | None = None
    """The application that defines the workflows (workers need one)."""
    retry_by_default: bool = False
    """Whether runs retry when neither the run nor its workflow says."""
    default_retry: RetryPolicy = field(default_factory=RetryPolicy)
    """The policy of ``retry=True`` and ``retry_by_default``."""
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    """Largest input, output or context, in bytes of JSON."""
    retention: timedelta | None = DEFAULT_RETENTION
    """How long finished runs are kept (None: forever)."""
    fail_unserved_after: timedelta | None = None
    """Fail runs that waited this long while no live worker serves them (None: never)."""
    clock: Clock = field(default_factory=SystemClock)
    """Where time comes from (tests pass a manual clock)."""
    trace_links: bool = False
    """Executions link to the span that enqueued their run instead of being its
    children (README "Tracing")."""

    @classmethod
    def resolve(
        cls,
        url: str | None = None,
        *,
        prefix: str = "workpool",
        app: str | None = None,
        retry_by_default: bool = False,
        default_retry: RetryPolicy | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        clock: Clock | None = None,
        retention: timedelta | float | None = DEFAULT_RETENTION,
        fail_unserved_after: timedelta | float | None = None,
        trace_links: bool = False,
    ) -> Settings:
        """Check ``Workpool(...)``'s arguments and fill in the defaults (the URL from
        ``$WORKPOOL_URL``, else ``sqlite:///workpool.db``)."""
        kept = (
            None
            if retention is None
            else as_timedelta(retention, what="retention (or None: keep forever)", positive=True)
        )
        unserved = (
            None
            if fail_unserved_after is None
            else as_timedelta(fail_unserved_after, what="fail_unserved_after", positive=True)
        )
        resolved_url = url or os.environ.get("WORKPOOL_URL") or DEFAULT_URL
        _check_url(resolved_url)
        checked_prefix = check_name(prefix, what="prefix")
        checked_app = None if app is None else check_name(app, what="app")
        if default_retry is not None and not isinstance(default_retry, RetryPolicy):
            raise ConfigurationError(f"default_retry must be a RetryPolicy, got {default_retry!r}")
        check_count(max_payload_bytes, what="max_payload_bytes", minimum=1)
        return cls(
            url=resolved_url,
            prefix=checked_prefix,
            app=checked_app,
            retry_by_default=retry_by_default,
            default_retry=default_retry or RetryPolicy(),
            max_payload_bytes=max_payload_bytes,
            retention=kept,
            fail_unserved_after=unserved,
            clock=clock or SystemClock(),
            trace_links=_check_flag(trace_links, "trace_links"),
        )

    def resolve_retry(
        self, explicit: bool | RetryPolicy | None, workflow_retries: bool | RetryPolicy | None
    ) -> RetryPolicy | None:
        """The policy a run gets: the run's choice, else its workflow's, else the pool's."""
        for choice in (explicit, workflow_retries):
            if isinstance(choice, RetryPolicy):
                return choice
            if choice is True:
                return self.default_retry
            if choice is False:
                return None
        return self.default_retry if self.retry_by_default else None


def _check_flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{what} must be True or False, got {value!r}")
    return value


def _check_url(url: str) -> None:
    lowered = url.lower()
    if lowered.startswith("sqlite:"):
        sqlite_synchronous(url)  # checks the path and the options
    elif lowered.startswith(("postgresql://", "postgres://")):
        postgres_schema(url)  # checks the schema option
    elif not lowered.startswith(("redis://", "rediss://")):
        raise ConfigurationError(
            f"unsupported backend URL {url!r}: use sqlite:///path/to.db, "
            "redis://host:port/db (rediss:// for TLS) or postgresql://user@host/database"
        )
