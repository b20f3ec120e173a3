"""``workpool dashboard [MODULE:POOL]``: serve the web dashboard (``workpool.dashboard``)."""

from __future__ import annotations

import asyncio
import contextlib

import click
from click.core import ParameterSource

from workpool.app import Workpool
from workpool.backends import describe_store
from workpool.cli.common import (
    URL_OPTION,
    CommandRefusedError,
    Seconds,
    WholeNumber,
    fail,
    require_store,
)
from workpool.cli.worker import load_pool
from workpool.errors import ConfigurationError

EXTRA = frozenset({"starlette", "uvicorn", "jinja2"})
"""The packages of the ``dashboard`` extra."""


@click.command()
@click.argument("pool_path", metavar="[MODULE:POOL]", required=False)
@URL_OPTION
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port", default=8080, show_default=True, type=WholeNumber(0, 65535), help="0: any free."
)
@click.option(
    "--token",
    envvar="WORKPOOL_DASHBOARD_TOKEN",
    help="Every request must carry it (a browser opens /?token=... once; scripts send "
    "'Authorization: Bearer ...'). Default: $WORKPOOL_DASHBOARD_TOKEN.",
)
@click.option(
    "--basic-auth",
    envvar="WORKPOOL_DASHBOARD_BASIC_AUTH",
    metavar="USER:PASSWORD",
    help="HTTP basic authentication. Default: $WORKPOOL_DASHBOARD_BASIC_AUTH.",
)
@click.option("--read-only", is_flag=True, help="Show no action and refuse every POST.")
@click.option(
    "--refresh-seconds",
    default=2.0,
    show_default=True,
    type=Seconds(0.2, 3600),
    help="How often open pages read the backend again.",
)
def dashboard(
    pool_path: str | None,
    url: str | None,
    host: str,
    port: int,
    token: str | None,
    basic_auth: str | None,
    read_only: bool,
    refresh_seconds: float,
) -> None:
    """Serve the web dashboard: queues, runs, steps, workflows and crons.

    It reads the store of --url, or of MODULE:POOL's pool, whose definitions add
    the rate limits of its workflows. It binds to 127.0.0.1; on any other address it
    refuses to start without --token or --basic-auth. The first line printed is
    its address.
    """
    try:
        from workpool.dashboard import server
        from workpool.dashboard.app import create_dashboard
        from workpool.dashboard.options import parse_basic_auth
    except ModuleNotFoundError as error:
        if error.name not in EXTRA:
            raise
        fail(f"the dashboard needs {error.name}: pip install 'workpool[dashboard]'", 2)
    if pool_path is not None and _typed("url"):
        fail("give MODULE:POOL (its pool names its store) or --url, not both", 2)
    pool = load_pool(pool_path) if pool_path is not None else Workpool(url)
    try:
        require_store(pool.url)
    except CommandRefusedError as error:
        fail(str(error), 1)
    try:
        credentials = parse_basic_auth(basic_auth) if basic_auth else None
        app = create_dashboard(
            pool, read_only=read_only, token=token, basic_auth=credentials, refresh=refresh_seconds
        )
        server.check_exposure(host, guarded=bool(token or credentials))
        listening = server.listen(host, port)
    except ConfigurationError as error:
        fail(str(error), 2)
    mode = ", read-only" if read_only else ""
    store = describe_store(pool.url, prefix=pool.prefix)
    click.echo(f"workpool dashboard: {server.url_of(listening)} ({store}{mode})")

    async def main() -> None:
        try:
            await server.serve(app, listening)
        finally:
            await pool.aclose()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


def _typed(option: str) -> bool:
    """Whether ``option`` was given on the command line (not from the environment)."""
    return click.get_current_context().get_parameter_source(option) is ParameterSource.COMMANDLINE
