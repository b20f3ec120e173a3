"""Reading many stored records at once, as a listing does: one corrupt record (a field
missing or malformed, written behind workpool's back) is left out of the page instead
of failing it. ``get_run`` of that run raises CorruptRecordError naming the field, and
the claim that meets it sets it aside and reports it (README, "Errors and limits").

Also: which counter rows a ``get_counters`` period sums (``counter_rows``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from workpool.errors import CorruptRecordError

Stored = TypeVar("Stored")
Decoded = TypeVar("Decoded")


def readable(decode: Callable[[Stored], Decoded], stored: Iterable[Stored]) -> list[Decoded]:
    """Each stored record decoded, in order, leaving out those that are corrupt."""
    decoded: list[Decoded] = []
    for record in stored:
        try:
            decoded.append(decode(record))
        except CorruptRecordError:
            continue
    return decoded


MINUTE = 60
HOUR = 3600


@dataclass(frozen=True, slots=True)
class CounterRows:
    """Which counter rows ``get_counters`` sums, and into which periods."""

    hourly: bool
    """True: the per-hour counters; False: the per-minute ones."""
    first: int
    """The start of the first row to read (the first period's start)."""
    last: int
    """The start of the last row to read (the last minute or hour of the last period)."""
    period: int


def counter_rows(since: float, now: float, period: int) -> CounterRows:
    """The rows holding the periods of ``period`` seconds from the one holding ``since``
    to the one holding ``now``; ValueError for a period neither a whole number of hours
    nor a whole number of minutes that divides an hour."""
    if type(period) is not int or period <= 0:
        raise ValueError(f"period must be a positive whole number of seconds, not {period!r}")
    hourly = period % HOUR == 0
    if not hourly and (period % MINUTE or HOUR % period):
        raise ValueError(
            f"period {period} s is neither whole hours nor whole minutes dividing an hour "
            "(60, 120, 300, 600, 900, 1800...)"
        )
    first = int(since // period) * period
    last = int(now // period) * period + period - (HOUR if hourly else MINUTE)
    return CounterRows(hourly, first, last, period)
