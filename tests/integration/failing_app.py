"""The pool that the log-format tests run in a worker process: a run that logs through
``ctx.logger``, fails once (retried), then fails for good."""

from __future__ import annotations

from datetime import timedelta

from workpool import RetryPolicy, RunContext, Workpool

pool = Workpool(app="tests-logs")


@pool.workflow(
    retries=RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=20)),
    max_concurrency=None,
)
async def doomed(ctx: RunContext, order: str) -> None:
    """Logs one line, then raises, on every attempt."""
    ctx.logger.info("charging order %s", order)
    raise ValueError(f"card declined for {order} (attempt {ctx.attempt})")
