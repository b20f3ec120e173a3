"""The next version of ``process_app``: the same app, plus a workflow the first version
does not define (what a rolling deploy's new workers load)."""

from __future__ import annotations

import os

from tests.integration.process_app import log, pool
from workpool import RunContext


@pool.workflow(max_concurrency=None)
async def newcomer(ctx: RunContext, value: int) -> int:
    """Defined from this version on."""
    log("newcomer", ctx.run_id, ctx.attempt, os.getpid())
    return value * 2
