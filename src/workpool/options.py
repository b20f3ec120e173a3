"""Options: frozen values with units in their types."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeGuard

from workpool.errors import ConfigurationError
from workpool.validation import (
    LONGEST_WAIT,
    as_timedelta,
    check_count,
    duration_seconds,
    short_repr,
)

LONGEST_SECONDS = LONGEST_WAIT.total_seconds()


def _real(value: object) -> TypeGuard[float]:
    """A real number, not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a failing run is tried again, and how long it waits in between.

    The wait before attempt n+1 is ``initial_backoff * base**(n-1) * U`` with U uniform
    in [0.5, 1.5), so concurrent failures do not retry in lockstep.
    """

    max_attempts: int = 5
    """Attempts in all, the first one included. 1 means no retry."""
    initial_backoff: timedelta | float = timedelta(milliseconds=250)
    """Wait before the second attempt, before jitter: a timedelta or seconds, stored as
    a timedelta (``backoff``)."""
    base: float = 2.0
    """Growth factor of the wait from one attempt to the next."""

    def __post_init__(self) -> None:
        attempts = check_count(self.max_attempts, what="RetryPolicy.max_attempts", minimum=1)
        object.__setattr__(self, "max_attempts", attempts)
        backoff = as_timedelta(self.initial_backoff, what="RetryPolicy.initial_backoff")
        object.__setattr__(self, "initial_backoff", backoff)
        if not _real(self.base) or not 1 <= self.base < math.inf:
            raise ConfigurationError(
                f"RetryPolicy.base must be a finite number >= 1, got {self.base!r}"
            )
        if self._longest_wait() > LONGEST_SECONDS:
            raise ConfigurationError(
                f"RetryPolicy: the longest wait, before attempt {self.max_attempts}, would be "
                f"up to {self._longest_wait():.3g} s, over {LONGEST_WAIT.days // 365} years; "
                "lower max_attempts, initial_backoff or base"
            )

    def _longest_wait(self) -> float:
        """Seconds of the longest wait (before the last attempt), jitter included;
        inf if it overflows."""
        if self.max_attempts < 2 or self.backoff == timedelta(0):
            return 0.0
        try:
            growth = float(self.base) ** (self.max_attempts - 2)
        except OverflowError:
            return math.inf
        return self.backoff.total_seconds() * growth * 1.5

    @property
    def backoff(self) -> timedelta:
        """``initial_backoff`` as a timedelta."""
        return as_timedelta(self.initial_backoff, what="RetryPolicy.initial_backoff")

    def to_json(self) -> dict[str, Any]:
        """The policy as stored with a run."""
        return {
            "max_attempts": self.max_attempts,
            "initial_backoff": self.backoff.total_seconds(),
            "base": self.base,
        }

    @classmethod
    def from_json(cls, data: Any) -> RetryPolicy:
        """Read back a policy stored by ``to_json``; ConfigurationError if it is not one."""
        fields = data if isinstance(data, dict) else {}
        attempts, backoff, base = (fields.get(name) for name in _RETRY_FIELDS)
        if type(attempts) is not int or not _real(backoff) or not _real(base):
            raise ConfigurationError(f"not a stored retry policy: {short_repr(data)}")
        if not 0 <= backoff <= LONGEST_SECONDS:
            raise ConfigurationError(f"stored retry policy has a bad initial_backoff: {data!r}")
        return cls(attempts, timedelta(seconds=backoff), base)


_RETRY_FIELDS = ("max_attempts", "initial_backoff", "base")


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
        object.__setattr__(
            self, "count", check_count(self.count, what="RateLimit count", minimum=1)
        )
        try:
            seconds = duration_seconds(self.per, what="RateLimit per", positive=True)
        except ConfigurationError:
            seconds = math.nan
        if not seconds <= LONGEST_SECONDS:
            raise ConfigurationError(
                "RateLimit needs a positive period (a timedelta or seconds) of at most "
                f"{LONGEST_WAIT.days // 365} years, got per={short_repr(self.per)}"
            )

    @property
    def seconds(self) -> float:
        """The period in seconds."""
        return self.per.total_seconds() if isinstance(self.per, timedelta) else float(self.per)


@dataclass(frozen=True, slots=True)
class Limit:
    """A limit shared by every workflow and queue that names it (``Workpool.limit``):
    at most ``max_concurrency`` of their runs admitted at once and at most ``rate``
    starts per period, across every worker; with ``key``, one such limit per key
    computed from a run's input."""

    name: str
    max_concurrency: int | None = None
    rate: RateLimit | None = None
    key: Callable[[Any], object] | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency is None and self.rate is None:
            raise ConfigurationError(
                f"limit {self.name!r} limits nothing: give max_concurrency=N, rate=RateLimit(...)"
                " or both"
            )
        if self.max_concurrency is not None:
            limit = check_count(
                self.max_concurrency, what=f"limit {self.name!r}: max_concurrency", minimum=1
            )
            object.__setattr__(self, "max_concurrency", limit)
        if self.rate is not None and not isinstance(self.rate, RateLimit):
            raise ConfigurationError(
                f"limit {self.name!r}: rate must be a RateLimit(count, per=...), got "
                f"{short_repr(self.rate)}"
            )
        if self.rate is not None and self.rate.key is not None:
            raise ConfigurationError(
                f"limit {self.name!r}: give the key to the limit (key=...), not to its RateLimit"
            )
        if self.key is not None and not callable(self.key):
            raise ConfigurationError(
                f"limit {self.name!r}: key must be a function of a run's input, "
                f"got {short_repr(self.key)}"
            )

    def gate(self, key: str | None) -> str:
        """The id of its gate and of its rate limiter for a run with that key: ``limit:``
        then the name's length, so names with ':' stay apart from keys."""
        return f"limit:{len(self.name)}:{self.name}:{key if key is not None else ''}"

    def to_json(self) -> dict[str, Any]:
        """As the registry shows it (a key function is code: only its presence)."""
        rate = self.rate
        return {
            "name": self.name,
            "max_concurrency": self.max_concurrency,
            "rate": None if rate is None else {"count": rate.count, "per": rate.seconds},
            "keyed": self.key is not None,
        }


def parse_limit_gate(gate: str) -> tuple[str, str] | None:
    """(name, key) of a shared limit's gate id (``Limit.gate``); None for another gate."""
    if not gate.startswith("limit:"):
        return None
    length, _, rest = gate[len("limit:") :].partition(":")
    if not length.isdigit() or len(rest) <= int(length) or rest[int(length)] != ":":
        return None
    return rest[: int(length)], rest[int(length) + 1 :]
