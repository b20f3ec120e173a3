"""Waiting for a condition with a deadline, never for a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

DEFAULT_LIMIT = 20.0
"""Seconds; generous, since a loaded CI machine is slow, and it only bounds a failure."""


async def wait_until(
    condition: Callable[[], object] | Callable[[], Awaitable[object]],
    limit: float = DEFAULT_LIMIT,
    every: float = 0.02,
) -> None:
    """Poll ``condition()`` (sync or async) until it is true; fail after ``limit`` s."""
    deadline = time.monotonic() + limit
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(every)
