"""Reading many stored records at once, as a listing does: one corrupt record (a field
missing or malformed, written behind workpool's back) is left out of the page instead
of failing it. ``get_run`` of that run raises CorruptRecordError naming the field, and
the claim that meets it sets it aside and reports it (README, "Errors and limits")."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
