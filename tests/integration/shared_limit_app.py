"""The pool that the shared-limit process tests' workers load: three workflows in two
queues under one shared limit of 3, and one outside it.

Every handler appends a ``start`` line when it begins and an ``end`` line when it is done
to the file named by ``WORKPOOL_TEST_LOG`` (see ``process_app.log``), so the test counts
the runs in flight from the handlers' own record. With ``WORKPOOL_TEST_FREEZE`` naming a
file that does not exist yet, the process whose handler starts the limit's third run
creates it and stops itself (SIGSTOP) from that handler: a worker stalled while it holds
every place, not in the middle of a write (SQLite's write lock would stop every worker).
"""

from __future__ import annotations

import asyncio
import os
import signal

from tests.integration.process_app import log
from workpool import RunContext, Workflow, Workpool

LIMIT = 3


def define(pool: Workpool) -> dict[str, Workflow[float, None]]:
    """Define the limit and the workflows on ``pool``; the workflows by name."""
    partner = pool.limit("partner-api", max_concurrency=LIMIT)

    started: list[str] = []

    async def call_partner(ctx: RunContext, seconds: float) -> None:
        log("start", ctx.run_id, os.getpid())
        started.append(ctx.run_id)
        if len(started) == LIMIT:
            freeze_once()
        await asyncio.sleep(seconds)
        log("end", ctx.run_id, os.getpid())

    defined = {}
    for name, queue in (("sync", "crm"), ("refund", "crm"), ("invoice", "billing")):
        register = pool.workflow(name, queue=queue, limits=[partner], max_concurrency=None)
        defined[name] = register(call_partner)

    @pool.workflow(queue="crm", max_concurrency=None)
    async def unlimited(ctx: RunContext, seconds: float) -> None:
        log("free", ctx.run_id, os.getpid())

    defined["unlimited"] = unlimited
    return defined


def freeze_once() -> None:
    marker = os.environ.get("WORKPOOL_TEST_FREEZE")
    if marker is None:
        return
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGSTOP)


pool = Workpool(app="shared-limits")
define(pool)
