"""A private event loop in a daemon thread, so synchronous code can call the async API."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

ResultT = TypeVar("ResultT")


class Portal:
    """Runs coroutines to completion on its own loop, from any thread, blocking the caller."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="workpool-sync", daemon=True
        )
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, ResultT]) -> ResultT:
        """Run ``coroutine`` on the portal's loop and return its result."""
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a *_sync method was called from inside the workpool portal")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self, final: Coroutine[Any, Any, None]) -> None:
        """Run ``final`` (e.g. closing connections), then stop the loop and thread."""
        self.call(final)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
