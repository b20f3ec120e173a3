"""The client's base: the registry, the settings, one backend per event loop, the
portal of the ``*_sync`` methods, and the caller's transaction for ``connection=``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from workpool.backends import open_backend
from workpool.backends.base import Backend, Enqueued, NewRun, WorkflowInfo
from workpool.coalescing import LoopBatchers
from workpool.loops import LoopBackends
from workpool.registry import Registry
from workpool.settings import Settings
from workpool.sync import Portal, in_event_loop
from workpool.transactional import join

if TYPE_CHECKING:
    from workpool.backends.postgres.joined import JoinedTransaction

client_logger = logging.getLogger("workpool.client")


class ClientBase:
    """What every part of the client shares (see ``Client``)."""

    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings
        self._backends = LoopBackends(
            lambda: open_backend(self.settings.url, prefix=self.settings.prefix)
        )
        """One backend per event loop, closed with its loop (see ``workpool.loops``)."""
        self._batchers = LoopBatchers(self._store)
        """Concurrent enqueues of one loop share a write (see ``workpool.coalescing``)."""
        self._registered: dict[str, WorkflowInfo] | None = None
        """The registry's records by name (what every app's workers define), as last read."""
        self._portal = Portal()
        self._schema_ready = False
        """Whether this client opened its backend once (which migrates the schema), as
        ``connection=`` needs before it joins a caller's transaction."""

    # -- backend -------------------------------------------------------------------

    async def backend(self) -> Backend:
        """The backend for the running event loop, opened on first use and closed when
        the loop shuts down (``asyncio.run`` and ``asyncio.Runner`` do that), or by
        ``aclose()``. In a forked child, the parent's backends are never used."""
        return await self._backends.get()

    async def aclose(self) -> None:
        """Close the running event loop's backend now (the next call opens a new one)."""
        await self._backends.close()

    def close(self) -> None:
        """Close the connections of the ``*_sync`` methods and their event loop (the
        next ``*_sync`` call opens them again)."""
        self._portal.close()

    @property
    def portal(self) -> Portal:
        """The private event loop that serves the ``*_sync`` methods."""
        return self._portal

    async def _store(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """One write of the running loop's batcher: one ``backend.enqueue``."""
        backend = await self.backend()
        return await backend.enqueue(runs, now)

    async def _joined(self, connection: object) -> JoinedTransaction:
        """The pool's operations inside the open transaction of the caller's
        ``connection`` (see ``workpool.transactional``), once the pool's schema is
        created and migrated (opening the pool's own backend does that, once)."""
        joined = await join(self.settings.url, connection)
        if not self._schema_ready:
            if in_event_loop():
                await self.backend()
            else:  # a *_sync call driven without a loop (``workpool.sync.drive``)
                self._portal.call(self.backend(), "pool.backend")
            self._schema_ready = True
        return joined
