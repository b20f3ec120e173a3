"""What a step call does with its arguments: its time limits read, its function called
under that limit, its result made JSON."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from workpool.engine.environment import StepEnvironment
from workpool.errors import NonRetriableError, PayloadError, StepTimeoutError
from workpool.serialization import check_size, to_json
from workpool.validation import check_time, duration_seconds


def step_timeout(now: float, name: str, timeout: timedelta | float | None) -> float | None:
    """Seconds of a step's ``timeout`` (None: no limit)."""
    if timeout is None:
        return None
    return step_duration(now, name, "timeout", timeout, positive=True)


def step_duration(now: float, name: str, what: str, value: object, *, positive: bool) -> float:
    """Seconds of a step's duration argument, ending at a time workpool can store."""
    seconds = duration_seconds(value, what=f"step {name!r}: {what}", positive=positive)
    check_time(now + max(0.0, seconds), what=f"step {name!r}: the end of its {what}")
    return seconds


def result_json(name: str, value: Any, limit: int) -> str:
    """A step result as JSON; one that cannot be stored fails the run for good (the
    same function would return the same thing on a retry)."""
    try:
        output = to_json(value, what=f"result of step {name!r}")
        check_size(output, what=f"result of step {name!r}", limit=limit)
    except PayloadError as error:
        raise NonRetriableError(str(error)) from error
    return output


async def call_step(
    env: StepEnvironment, name: str, call: Callable[[], Any], timeout: float | None
) -> Any:
    """Call a step's function (``call``: it bound to its arguments; sync ones in the
    worker's threads) within ``timeout`` seconds, or StepTimeoutError."""
    try:
        async with asyncio.timeout(timeout) as limit:
            if inspect.iscoroutinefunction(call):
                return await call()
            return await asyncio.get_running_loop().run_in_executor(env.threads, call)
    except TimeoutError:
        if not limit.expired():
            raise
        raise StepTimeoutError(
            f"step {name!r} of run {env.lease.run_id} ran over its timeout of {timeout} s"
        ) from None
