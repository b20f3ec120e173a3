"""The client: enqueue, read, cancel and administer runs over a backend.

``Client`` turns user calls into backend operations and stored records into values; it
never decides a run's fate. It holds the registry and the settings (plain values), and
one backend per event loop (``workpool.loops``). Every async method has a ``*_sync``
twin, written once by ``sync_twin``. ``Workpool`` is a client with the definitions API
and the worker factory on top.
"""

from __future__ import annotations

from workpool.builder import new_run_id
from workpool.client.reading import MAX_PAGE
from workpool.client.recovery import Recovery
from workpool.handles import RunHandle

__all__ = ["MAX_PAGE", "Client", "RunHandle", "new_run_id"]


class Client(Recovery):
    """Runs over one backend, for the workflows of ``registry``, configured by ``settings``."""
