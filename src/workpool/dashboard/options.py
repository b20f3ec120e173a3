"""``DashboardOptions``: how a dashboard is guarded and how often its pages refresh."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from workpool.errors import ConfigurationError

TOKEN_VARIABLE = "WORKPOOL_DASHBOARD_TOKEN"
"""The environment variable ``workpool dashboard`` reads a token from."""
BASIC_AUTH_VARIABLE = "WORKPOOL_DASHBOARD_BASIC_AUTH"
"""The environment variable ``workpool dashboard`` reads ``user:password`` from."""


@dataclass(frozen=True, slots=True)
class DashboardOptions:
    """A dashboard's guard and refresh settings (``create_dashboard`` takes them as
    keyword arguments)."""

    read_only: bool = False
    """Show no action (pause, resume, max_parallelism, retry, cancel) and refuse every
    POST with 403."""
    token: str | None = None
    """Every request must carry it: ``Authorization: Bearer <token>``, or a browser
    opens the dashboard once with ``?token=<token>`` and keeps a session cookie."""
    basic_auth: tuple[str, str] | None = None
    """(user, password) for HTTP basic authentication (the browser asks for them)."""
    refresh: timedelta = timedelta(seconds=2)
    """How often the overview and an unfinished run's page read the backend again
    while they are open and visible (short polling)."""

    def __post_init__(self) -> None:
        if self.token is not None and len(self.token) < 8:
            raise ConfigurationError("a dashboard token needs at least 8 characters")
        if self.basic_auth is not None and not all(self.basic_auth):
            raise ConfigurationError("basic auth needs a user name and a password")
        if not timedelta(milliseconds=200) <= self.refresh <= timedelta(hours=1):
            raise ConfigurationError(
                f"the dashboard's refresh must be from 0.2 s to an hour, not {self.refresh}"
            )

    @property
    def guarded(self) -> bool:
        """Whether requests must authenticate (a token or basic auth is set)."""
        return self.token is not None or self.basic_auth is not None


def parse_basic_auth(text: str) -> tuple[str, str]:
    """``user:password`` as (user, password); ConfigurationError without the colon."""
    user, colon, password = text.partition(":")
    if not colon or not user or not password:
        raise ConfigurationError("basic auth is given as user:password (both non-empty)")
    return user, password
