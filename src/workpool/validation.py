"""Checks of the names, durations and times users give, at the API edge.

Each check returns the value (as workpool stores it) or raises ``ConfigurationError``
saying what was wrong and what to do. Times must fall within ``EARLIEST`` and
``LATEST``: a day inside ``datetime``'s range, so a stored time reads back as a
datetime in every time zone. The backends refuse other times too (``storable_time``).
"""

from __future__ import annotations

import math
import numbers
import unicodedata
from datetime import UTC, datetime, timedelta

from workpool.errors import ConfigurationError

MAX_NAME_LENGTH = 200
"""Most characters in a workflow, queue, step, app or prefix name or a key."""

EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
"""The earliest time workpool stores."""
LATEST = datetime(9999, 12, 31, tzinfo=UTC)
"""The latest time workpool stores."""
EARLIEST_TIME = EARLIEST.timestamp()
LATEST_TIME = LATEST.timestamp()
LONGEST_SPAN = LATEST_TIME - EARLIEST_TIME
"""Seconds from EARLIEST to LATEST: no delay or lifetime can be longer."""
LONGEST_WAIT = timedelta(days=36525)
"""A hundred years: the longest retry wait or rate limit period accepted."""
MAX_COUNT = 2**53 - 1
"""The largest whole number workpool takes for a count or a limit (max_concurrency,
max_parallelism, attempts, rate limit counts, slots, payload bytes...): the largest
that a Lua number (a double, in Redis's scripts) and a JSON number as most parsers read
it hold exactly, and well within SQLite's 64-bit INTEGER, so a limit is stored, read
back and compared as given on every backend. 9007199254740991 is more than any real
limit; a larger one is an error, not a silently rounded or overflowing value."""
MIN_PRIORITY = -100
"""The lowest priority a run may have (runs after every higher one)."""
MAX_PRIORITY = 100
"""The highest priority a run may have."""
STRICT_STEP = 2.0**33
"""Seconds of waiting one priority level is worth in a queue without aging: 2**33 s,
about 272 years, more than any wait, so priority decides first. A queue's
``priority_aging`` may not exceed it; 100 of them (1e12 s less a little) are within the
backends' ``MAX_RANK_OFFSET``."""


def check_name(value: object, *, what: str) -> str:
    """A name: a non-empty str of at most MAX_NAME_LENGTH characters that UTF-8 can
    encode (no lone surrogate) and without control characters."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    if not value or len(value) > MAX_NAME_LENGTH:
        raise ConfigurationError(
            f"{what} must be a non-empty string of at most {MAX_NAME_LENGTH} characters, "
            f"got {value!r}"
        )
    if not value.isprintable():  # fast path: printable text has neither problem
        for char in value:
            category = unicodedata.category(char)
            if category == "Cs":
                raise ConfigurationError(
                    f"{what} {value!r} holds a lone surrogate ({char!r}), which UTF-8 cannot "
                    "store: pass valid Unicode text (decode bytes with errors='replace')"
                )
            if category == "Cc":
                raise ConfigurationError(
                    f"{what} {value!r} holds a control character ({char!r}): names are "
                    "shown in logs and tables; use printable characters only"
                )
    return value


def storable_time(value: float) -> bool:
    """Whether ``value`` (seconds since the epoch) is finite and within EARLIEST..LATEST."""
    return EARLIEST_TIME <= value <= LATEST_TIME  # False for NaN and infinities


def check_time(value: float, *, what: str) -> float:
    """``value`` if storable (see ``storable_time``), else ConfigurationError."""
    if not storable_time(value):
        raise ConfigurationError(
            f"{what} is {value!r}, not a time between {EARLIEST.date()} and "
            f"{LATEST.date()} (UTC); give a time within that range"
        )
    return value


def timestamp_of(when: object, *, what: str) -> float:
    """The timestamp of a datetime (naive: local time) that workpool can store."""
    if not isinstance(when, datetime):
        raise ConfigurationError(
            f"{what} must be a datetime (naive: local time), got {type(when).__name__} "
            f"{when!r}; for a delay use a timedelta or a number of seconds"
        )
    try:
        stamp = when.timestamp()
    except (OverflowError, ValueError, OSError):
        stamp = math.nan  # outside what the platform's clock functions cover
    return check_time(stamp, what=f"{what} ({when.isoformat()})")


MAX_TIMEOUT = 1e9
"""The longest time limit of an attempt, in seconds (about 31 years)."""


def timeout_seconds(value: object, *, what: str) -> float:
    """A time limit (a timedelta or seconds) as seconds: positive, at most MAX_TIMEOUT."""
    seconds = duration_seconds(value, what=what, positive=True)
    if seconds > MAX_TIMEOUT:
        raise ConfigurationError(
            f"{what} is {seconds:g} seconds; give at most {MAX_TIMEOUT:g} s, or no timeout"
        )
    return seconds


def deadline_given(value: object, *, what: str) -> float | datetime:
    """A deadline as given: seconds from enqueue (a positive timedelta or number, at
    most MAX_TIMEOUT) or an aware datetime (checked storable)."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ConfigurationError(
                f"{what} is a naive datetime ({value.isoformat()}): give an aware one, e.g. "
                "datetime.now(timezone.utc) + timedelta(hours=1), or a timedelta from enqueue"
            )
        timestamp_of(value, what=what)
        return value
    if isinstance(value, bool) or not isinstance(value, timedelta | numbers.Real):
        raise ConfigurationError(
            f"{what} must be a timedelta from enqueue, a number of seconds or an aware "
            f"datetime, got {type(value).__name__} {value!r}"
        )
    return timeout_seconds(value, what=what)


def as_timedelta(value: object, *, what: str, positive: bool = False) -> timedelta:
    """A timedelta or a number of seconds as a timedelta that is not negative (with
    ``positive``: more than zero), finite and at most LONGEST_SPAN."""
    seconds = duration_seconds(value, what=what, positive=positive)
    if seconds < 0:
        raise ConfigurationError(f"{what} must not be negative, got {value!r}")
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds)


def duration_seconds(value: object, *, what: str, positive: bool = False) -> float:
    """Seconds of a timedelta or a real number (not a bool), finite and at most
    LONGEST_SPAN either way; with ``positive``, more than zero."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif not isinstance(value, bool) and isinstance(value, numbers.Real):
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
    else:
        raise ConfigurationError(
            f"{what} must be a timedelta or a number of seconds, got "
            f"{type(value).__name__} {value!r}"
        )
    if not abs(seconds) <= LONGEST_SPAN:  # NaN too
        raise ConfigurationError(
            f"{what} is {seconds!r} seconds: give a finite duration of at most "
            f"{LONGEST_SPAN:.0f} s (times are stored between {EARLIEST.date()} and "
            f"{LATEST.date()})"
        )
    if positive and seconds <= 0:
        raise ConfigurationError(f"{what} must be positive, got {value!r}")
    return seconds


def check_priority(value: object, *, what: str = "priority") -> int:
    """A run's priority: a whole number (not a bool) from MIN_PRIORITY to MAX_PRIORITY."""
    if type(value) is not int or not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise ConfigurationError(
            f"{what} must be a whole number from {MIN_PRIORITY} to {MAX_PRIORITY} (higher "
            f"runs first; 0 is the default), got {type(value).__name__} {value!r}"
        )
    return value


def check_priority_aging(value: object, *, what: str) -> float:
    """A queue's ``priority_aging`` in seconds: positive, at most STRICT_STEP."""
    seconds = duration_seconds(value, what=what, positive=True)
    if seconds > STRICT_STEP:
        raise ConfigurationError(
            f"{what} is {seconds!r} seconds; give at most {STRICT_STEP:.0f} s (beyond it "
            "priorities are strict anyway: leave priority_aging unset)"
        )
    return seconds


def check_count(
    value: object,
    *,
    what: str,
    minimum: int = 0,
    maximum: int = MAX_COUNT,
    none: str | None = None,
) -> int:
    """A whole number (an int, not a bool) from ``minimum`` to ``maximum``, else
    ConfigurationError giving the range; ``none``: what None means there, if allowed
    (the caller handles None)."""
    if isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= maximum:
        return int(value)  # an IntEnum's plain value
    alternative = f", or None ({none})" if none is not None else ""
    raise ConfigurationError(
        f"{what} must be a whole number from {minimum} to {maximum}{alternative}, "
        f"got {describe_value(value)}"
    )


def describe_value(value: object) -> str:
    """``value``'s type and repr for an error message (see ``short_repr``)."""
    return f"{type(value).__name__} {short_repr(value)}"


def short_repr(value: object) -> str:
    """``repr(value)``, short even for a huge int (whose repr past 4300 digits raises)
    or a long text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"{'-' if value < 0 else ''}2**{value.bit_length() - 1} or more"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"


def parse_count(
    text: str, *, what: str, minimum: int = 0, maximum: int = MAX_COUNT, none: str | None = None
) -> int | None:
    """A whole number typed by a user (the command line, a dashboard form) from
    ``minimum`` to ``maximum``; with ``none`` (what None means), 'none' or nothing gives
    None. ConfigurationError otherwise (``what`` empty: the message starts 'must be')."""
    typed = text.strip()
    if none is not None and typed.lower() in ("", "none"):
        return None
    digits = typed.removeprefix("-")
    # Only ASCII digits (int() takes '١٢' and '1_000'); no int() of a huge string.
    if digits.isascii() and digits.isdigit() and len(digits) <= len(str(maximum)):
        number = int(typed)
        if minimum <= number <= maximum:
            return number
    alternative = f", or 'none' ({none})" if none is not None else ""
    subject = f"{what} " if what else ""
    raise ConfigurationError(
        f"{subject}must be a whole number from {minimum} to {maximum}{alternative}, got "
        f"{short_repr(typed)}"
    )
