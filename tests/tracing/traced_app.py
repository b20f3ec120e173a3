"""The pool that worker processes of the tracing tests load: when loaded by a worker
(``WORKPOOL_TEST_LOG`` set), it sets the SDK's tracer provider, as an application
would, exporting every span as it ends to ``<WORKPOOL_TEST_LOG>.spans``."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from workpool import RetryPolicy, RunContext, Workflow, Workpool

pool = Workpool(app="traced")

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=20))


def configure_tracing(log: str) -> None:
    """The set-up of README "Tracing", with the test's file exporter."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tests.tracing.span_file import SpanFile

    provider = TracerProvider()
    # Simple (not batched): a span is in the file once it ended, even if the process is
    # killed a moment later.
    provider.add_span_processor(SimpleSpanProcessor(SpanFile(Path(log + ".spans"))))
    trace.set_tracer_provider(provider)


if "WORKPOOL_TEST_LOG" in os.environ:  # a worker process (the test imports it too)
    configure_tracing(os.environ["WORKPOOL_TEST_LOG"])


def note(*fields: object) -> None:
    """Append one line to the test's log (O_APPEND writes of one line do not interleave)."""
    with open(os.environ["WORKPOOL_TEST_LOG"], "a") as handle:
        handle.write(" ".join(str(field) for field in fields) + "\n")


@dataclass(frozen=True)
class Tree:
    """The workflows of the tracing tests, defined on one pool."""

    order: Workflow[int, str]
    notify: Workflow[Any, None]
    stall: Workflow[None, str]


def define(pool: Workpool) -> Tree:
    """order -> charge (child) -> ledger (grandchild): the order fails its first attempt
    after a step, sleeps durably and waits for an event; notify is a completion
    callback; stall hangs on its first attempt (the test kills its worker)."""

    @pool.workflow()
    async def ledger(ctx: RunContext, amount: int) -> int:
        booked: int = await ctx.step.run("book", lambda: amount)
        return booked

    @pool.workflow()
    async def charge(ctx: RunContext, amount: int) -> int:
        booked: int = await ctx.step.run_workflow("ledger", ledger, amount)
        return booked

    @pool.workflow()
    async def notify(ctx: RunContext, hook: Any) -> None:
        return None

    @pool.workflow(retries=QUICK_RETRY)
    async def order(ctx: RunContext, amount: int) -> str:
        await ctx.step.run("reserve", lambda: "ok")
        if ctx.attempt == 1:
            raise ValueError("the stock service timed out")
        await ctx.step.sleep("cool down", 0.6)
        charged = await ctx.step.run_workflow("charge", charge, amount)
        approval = await ctx.step.wait_for_event("approval", "approve")
        return f"{charged} approved by {approval}"

    @pool.workflow(retries=QUICK_RETRY)
    async def stall(ctx: RunContext, _: None) -> str:
        note("start", ctx.run_id, ctx.attempt, os.getpid())
        if ctx.attempt == 1:
            await asyncio.sleep(3600)
        return "done"

    return Tree(order, notify, stall)


tree = define(pool)
