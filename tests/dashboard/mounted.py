"""A host app with the dashboard mounted at /ops, read-only: ``python -m
tests.dashboard.mounted`` serves it on a free port of 127.0.0.1 ($WORKPOOL_URL names
the store) and prints its address first."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from workpool import Workpool
from workpool.dashboard import create_dashboard
from workpool.dashboard.server import listen, serve, url_of


async def home(request: object) -> PlainTextResponse:
    return PlainTextResponse("the host app")


def host_app(pool: Workpool) -> Starlette:
    """The host app: its own page at /, the read-only dashboard at /ops."""
    dashboard = create_dashboard(pool, read_only=True, refresh=0.3)
    return Starlette(routes=[Route("/", home), Mount("/ops", app=dashboard)])


def main() -> None:
    pool = Workpool()
    listening = listen("127.0.0.1", 0)
    print(f"{url_of(listening)}ops/", flush=True)
    asyncio.run(serve(host_app(pool), listening))


if __name__ == "__main__":
    main()
