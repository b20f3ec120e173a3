"""Whether a Redis server's settings can lose workpool's keys, read at worker start.

``INFO`` gives the eviction policy and whether AOF is on, and works on managed Redis
where ``CONFIG`` is often disabled; ``CONFIG GET save`` gives the RDB save points where
the server allows it. A setting that cannot be read is reported as such, not guessed.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from workpool.backends.durability import DurabilityReport
from workpool.backends.redis.connection import CommandLink

SEE = "see the README, Redis settings"


async def check(link: CommandLink) -> DurabilityReport:
    """Warn about an evicting ``maxmemory-policy`` and about a server with no AOF and
    no save points. Raises BackendUnavailableError if the server cannot be reached."""
    warnings: list[str] = []
    unreadable: list[str] = []
    policy = await _info_field(link, "memory", "maxmemory_policy", unreadable)
    if policy not in (None, "noeviction"):
        warnings.append(
            f"Redis maxmemory-policy is {policy}: when it reaches maxmemory, Redis deletes "
            "keys, workpool's runs, leases and queues among them; set maxmemory-policy "
            f"noeviction ({SEE})"
        )
    aof = await _info_field(link, "persistence", "aof_enabled", unreadable)
    if aof == "0":
        try:
            save = _config_value(await link.call("CONFIG", "GET", "save", repeatable=True), "save")
        except ResponseError as error:
            unreadable.append(f"Redis's save points (CONFIG GET save: {error}); AOF is off")
        else:
            if not save.strip():
                warnings.append(
                    "Redis has no persistence (appendonly no and no save points): a restart "
                    "loses every run, step and lease it holds; set appendonly yes with "
                    f"appendfsync everysec ({SEE})"
                )
    return DurabilityReport(tuple(warnings), tuple(unreadable))


async def _info_field(
    link: CommandLink, section: str, name: str, unreadable: list[str]
) -> str | None:
    """One field of an INFO section; None, noted in ``unreadable``, if it cannot be read."""
    try:
        text = await link.call("INFO", section, repeatable=True)
    except ResponseError as error:
        unreadable.append(f"Redis's {name} (INFO {section}: {error})")
        return None
    for line in str(text).splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip()
    unreadable.append(f"Redis's {name} (not in INFO {section})")
    return None


def _config_value(reply: Any, name: str) -> str:
    """One value of a CONFIG GET reply (a flat list in RESP2, a map in RESP3)."""
    values = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))
    return str(values.get(name, ""))
