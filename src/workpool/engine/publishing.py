"""``ctx.set_event``: values a run publishes under keys, for callers to read or wait for
(``handle.get_event``), from async handlers and from sync handlers' threads."""

from __future__ import annotations

import asyncio
from typing import Any

from workpool.engine.environment import LeaseLost, StepEnvironment, ride_out
from workpool.serialization import check_size, to_json
from workpool.sync import refuse_in_event_loop
from workpool.validation import check_name


class Publisher:
    """Publishes the values of one execution of a run, through the worker's event loop."""

    def __init__(self, env: StepEnvironment, loop: asyncio.AbstractEventLoop) -> None:
        self._env = env
        self._loop = loop

    async def publish(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` now (see ``RunContext.set_event``)."""
        await self._store(key, self._value_json(key, value))

    def publish_sync(self, key: str, value: Any) -> None:
        """``publish`` from a thread that runs no event loop (a sync handler's)."""
        text = self._value_json(key, value)
        refuse_in_event_loop("ctx.set_event")
        asyncio.run_coroutine_threadsafe(self._store(key, text), self._loop).result()

    def _value_json(self, key: str, value: Any) -> str:
        run_id = self._env.lease.run_id
        check_name(key, what="event key")
        what = f"value of event {key!r} of run {run_id}"
        return check_size(
            to_json(value, what=what), what=what, limit=self._env.settings.max_payload_bytes
        )

    async def _store(self, key: str, text: str) -> None:
        env = self._env
        stored = await ride_out(
            env, f"publish {key!r}", lambda: env.backend.set_event(env.lease, key, text)
        )
        if not stored:
            raise LeaseLost(f"run {env.lease.run_id}: lease lost, {key!r} not published")
