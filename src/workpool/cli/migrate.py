"""``workpool migrate``: bring a store's schema to this workpool's version, for teams that
migrate in their deploy rather than on first use."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import click

from workpool.backends import DEFAULT_URL, describe_store, open_backend
from workpool.cli.common import fail
from workpool.errors import WorkpoolError


@click.command()
@click.argument("url", required=False, envvar="WORKPOOL_URL")
def migrate(url: str | None) -> None:
    """Apply the pending schema migrations of the store at URL ($WORKPOOL_URL, else
    sqlite:///workpool.db), then exit.

    PostgreSQL: the schema of ?schema= (default workpool) is created if missing and
    migrated under an advisory lock, so several deploys may run this at once; workers
    and clients migrate on first use as well. SQLite: the file is created if missing.
    Redis keeps no schema. Exits 2 if the store cannot be reached or is newer than this
    workpool.
    """
    target = url or DEFAULT_URL
    try:
        message = asyncio.run(_migrate(target))
    except WorkpoolError as error:
        fail(str(error), 2)
    click.echo(message)


async def _migrate(url: str) -> str:
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("postgresql", "postgres"):
        from workpool.backends.postgres.migrate import migrate_url

        version = await migrate_url(url)
        return f"{describe_store(url)}: at schema version {version}"
    if scheme in ("redis", "rediss"):
        return f"{describe_store(url)}: Redis keeps no schema; nothing to migrate"
    backend = await open_backend(url)
    await backend.close()
    return f"{describe_store(url)}: migrated"
