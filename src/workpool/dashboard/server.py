"""Serving a dashboard on its own (``workpool dashboard``): safe by default.

It binds to 127.0.0.1 unless told otherwise, and refuses any address that is not a
loopback one unless requests must authenticate (a token or basic auth).
"""

from __future__ import annotations

import ipaddress
import socket

import uvicorn
from starlette.types import ASGIApp

from workpool.dashboard.options import BASIC_AUTH_VARIABLE, TOKEN_VARIABLE
from workpool.errors import ConfigurationError


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, *, guarded: bool) -> None:
    """ConfigurationError if serving on ``host`` would open the dashboard to others
    (``guarded``: requests must authenticate)."""
    if is_loopback(host) or guarded:
        return
    raise ConfigurationError(
        f"refusing to serve the dashboard on {host} without authentication: anyone who "
        f"reaches it could cancel runs and pause queues. Give --token (or "
        f"${TOKEN_VARIABLE}) or --basic-auth USER:PASSWORD (or ${BASIC_AUTH_VARIABLE}), "
        "or serve on 127.0.0.1"
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: any free port), or ConfigurationError."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        return socket.create_server((address, port), family=family)
    except OSError as error:
        raise ConfigurationError(
            f"cannot serve the dashboard on {host}:{port}: {error.strerror or error}"
        ) from None


def url_of(listening: socket.socket) -> str:
    """The dashboard's address, as a browser opens it."""
    host, port = listening.getsockname()[:2]
    shown = f"[{host}]" if listening.family == socket.AF_INET6 else host
    return f"http://{shown}:{port}/"


async def serve(app: ASGIApp, listening: socket.socket) -> None:
    """Serve ``app`` on ``listening`` until SIGINT or SIGTERM."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", server_header=False
    )
    await uvicorn.Server(config).serve(sockets=[listening])
