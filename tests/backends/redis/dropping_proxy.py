"""A TCP proxy in front of a redis-server that can lose a reply on purpose.

``drop_next_reply()`` arms it: the next request a client sends is forwarded to the
server, which executes it; when the server's reply comes back the proxy closes that
client's connection instead of passing the reply on. The client is left not knowing
whether its command ran, as when a network path or a proxy fails at the worst moment.
Threads, not asyncio: the client under test may block a thread of its own (``*_sync``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

CHUNK = 65536


class _Pair:
    """One client connection and its connection to the server."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.doomed = False
        """A request went through while the proxy was armed: drop at its reply."""

    def close(self) -> None:
        for each in (self.client, self.server):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()


class DroppingProxy:
    """Forwards connections on 127.0.0.1:``port`` to 127.0.0.1:``target_port``."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._lock = threading.Lock()
        self._armed = False
        self._pairs: list[_Pair] = []
        self.dropped = 0
        """Replies dropped so far."""
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def drop_next_reply(self) -> None:
        """Lose the reply to the next request any client sends (see the module)."""
        with self._lock:
            self._armed = True

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()

    def __enter__(self) -> DroppingProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(("127.0.0.1", self._target_port))
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
            for target, name in ((self._requests, "up"), (self._replies, "down")):
                threading.Thread(target=target, args=(pair,), name=name, daemon=True).start()

    def _requests(self, pair: _Pair) -> None:
        while data := _receive(pair.client):
            with self._lock:
                pair.doomed = pair.doomed or self._armed
                self._armed = False
            try:
                pair.server.sendall(data)
            except OSError:
                break
        pair.close()

    def _replies(self, pair: _Pair) -> None:
        while data := _receive(pair.server):
            with self._lock:
                doomed = pair.doomed
                self.dropped += doomed
            if doomed:
                break
            try:
                pair.client.sendall(data)
            except OSError:
                break
        pair.close()


def _receive(sock: socket.socket) -> bytes:
    """The next bytes, or b'' once the connection is closed (either way)."""
    try:
        return sock.recv(CHUNK)
    except OSError:
        return b""
