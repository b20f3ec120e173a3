"""Options: frozen values with units in their types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from workpool.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a failing run is tried again, and how long it waits in between.

    The wait before attempt n+1 is ``initial_backoff * base**(n-1) * U`` with U uniform
    in [0.5, 1.5), so concurrent failures do not retry in lockstep.
    """

    max_attempts: int = 5
    """Attempts in all, the first one included. 1 means no retry."""
    initial_backoff: timedelta = timedelta(milliseconds=250)
    """Wait before the second attempt, before jitter."""
    base: float = 2.0
    """Growth factor of the wait from one attempt to the next."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError(
                f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}"
            )
        if self.initial_backoff < timedelta(0):
            raise ConfigurationError("RetryPolicy.initial_backoff must not be negative")
        if self.base < 1:
            raise ConfigurationError(f"RetryPolicy.base must be at least 1, got {self.base}")

    def to_json(self) -> dict[str, Any]:
        """The policy as stored with a run."""
        return {
            "max_attempts": self.max_attempts,
            "initial_backoff": self.initial_backoff.total_seconds(),
            "base": self.base,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetryPolicy:
        """Read back a policy stored by ``to_json``."""
        return cls(
            max_attempts=int(data["max_attempts"]),
            initial_backoff=timedelta(seconds=float(data["initial_backoff"])),
            base=float(data["base"]),
        )


NO_RETRY = RetryPolicy(max_attempts=1)
"""One attempt only: the policy when retries are off."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``count`` runs started per ``per``, across every worker (bursts of up to
    ``count`` at once; beyond, starts are spaced ``per / count`` apart).

    ``key``: scope the limit per key computed from a run's input (on a workflow only),
    e.g. ``lambda order: order.customer_id``.
    """

    count: int
    per: timedelta | float = timedelta(seconds=1)
    key: Callable[[Any], object] | None = None

    def __post_init__(self) -> None:
        if type(self.count) is not int or self.count < 1 or self.seconds <= 0:
            raise ConfigurationError(
                f"RateLimit needs count >= 1 and a positive period, got count={self.count!r} "
                f"per={self.per!r}"
            )

    @property
    def seconds(self) -> float:
        """The period in seconds."""
        return self.per.total_seconds() if isinstance(self.per, timedelta) else float(self.per)
