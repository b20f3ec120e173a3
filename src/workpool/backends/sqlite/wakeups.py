"""Datagrams that wake idle workers in other processes on the same host.

A backend that waits for work binds a ``Listener``: a unix datagram socket in Linux's
abstract namespace (a name, no file), so nothing is left behind when its process dies,
even of SIGKILL, and no directory needs to be writable. It announces the address in the
database (table ``wakeups``, one row per queue it waits on). A transaction that makes
work runnable in a queue reads that queue's addresses and, after its commit, sends an
empty datagram to each with a ``Sender``; the listener's process reads it on its event
loop. A send never blocks: a full buffer means a wake-up is already pending there.

Where abstract sockets do not exist (macOS, Windows) ``Listener.open`` returns None and
the backend polls ``PRAGMA data_version`` instead (``waiting.py``).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import uuid
from collections.abc import Iterable

PREFIX = "workpool-"
"""Every listener's name starts with it (then 32 hex digits)."""
RECEIVE_BYTES = 64
"""Datagrams carry nothing: any read size drains one."""


def _abstract(address: str) -> str:
    return "\0" + address


class Listener:
    """A bound, non-blocking datagram socket that this backend's waits watch."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        self._socket = sock
        self.address = address
        """The abstract name, as announced (without its leading NUL)."""

    @classmethod
    def open(cls) -> Listener | None:
        """A new listener, or None where abstract unix sockets are not available."""
        if not sys.platform.startswith("linux") or not hasattr(socket, "AF_UNIX"):
            return None
        address = PREFIX + uuid.uuid4().hex
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            sock.bind(_abstract(address))
            sock.setblocking(False)
        except OSError:
            sock.close()
            return None
        return cls(sock, address)

    def fileno(self) -> int:
        """The descriptor to watch for readability."""
        return self._socket.fileno()

    def drain(self) -> int:
        """Read every pending datagram; return how many there were."""
        count = 0
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while True:
                self._socket.recv(RECEIVE_BYTES)
                count += 1
        return count

    def close(self) -> None:
        """Unbind the address. Idempotent."""
        self._socket.close()


class Sender:
    """An unbound datagram socket that wakes listeners by address."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None

    def wake(self, addresses: Iterable[str]) -> list[str]:
        """Send a datagram to each address; return those no listener holds any more."""
        gone: list[str] = []
        for address in addresses:
            try:
                self._open().sendto(b"", _abstract(address))
            except (BlockingIOError, InterruptedError):
                pass  # its buffer is full: a wake-up is pending there already
            except (ConnectionRefusedError, FileNotFoundError):
                gone.append(address)
            except OSError:
                pass  # best effort: the listener's own wait times out and looks anyway
        return gone

    def close(self) -> None:
        """Close the socket. Idempotent."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _open(self) -> socket.socket:
        if self._socket is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            sock.setblocking(False)
            self._socket = sock
        return self._socket
