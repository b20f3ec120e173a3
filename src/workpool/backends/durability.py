"""An optional backend capability: a store whose own settings can lose data says so.

Not part of the ``Backend`` protocol: SQLite's durability is set by workpool itself
(``synchronous=FULL``), while a Redis server's eviction policy and persistence are its
operator's configuration, which workpool can only read and warn about (README, "Redis
settings"). A worker calls ``check_durability`` once at start on a backend that has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class DurabilityReport:
    """What a backend found about the settings of its store."""

    warnings: tuple[str, ...] = ()
    """Settings that weaken workpool's guarantees: one sentence each, with the fix."""
    unreadable: tuple[str, ...] = ()
    """Settings that could not be read, and why (so not checked)."""


@runtime_checkable
class ChecksDurability(Protocol):
    """A backend that can tell whether its store's settings can lose runs."""

    async def check_durability(self) -> DurabilityReport:
        """Read the store's settings (one or a few round trips; call it at start only)."""
        ...
