"""Order processing on workpool's embedded SQLite default: `make demo`.

Shows a flaky step retried with backoff, an on_complete callback, a delayed run, a
cancel, status/result reads, a durable multi-step workflow (steps run once, a child
run awaited and a durable sleep, both without holding a worker slot), and the pool's
stats at the end, printing what happens as it happens; workpool logs each failed
attempt as a WARNING, shown here one line each.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel

from workpool import (
    OnComplete,
    RetryPolicy,
    RunCanceledError,
    RunContext,
    RunFailedError,
    Success,
    Workpool,
)

STARTED = time.monotonic()


def say(message: str) -> None:
    """Print one event with the seconds since the demo started."""
    print(f"[{time.monotonic() - STARTED:5.2f}s] {message}", flush=True)


class DemoLines(logging.Formatter):
    """workpool's warnings and errors as one line each, like ``say`` (the worker command
    prints the traceback under each failed attempt; ``--log-format json`` gives fields)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"[{time.monotonic() - STARTED:5.2f}s] {record.levelname} {record.getMessage()}"


def show_workpool_warnings() -> None:
    """A failed attempt is a WARNING (retried) or an ERROR (failed for good)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(DemoLines())
    handler.setLevel(logging.WARNING)
    logging.getLogger("workpool").addHandler(handler)


class Order(BaseModel):
    order_id: str
    customer: str
    amount_cents: int


class Receipt(BaseModel):
    order_id: str
    charged_cents: int
    attempts: int


directory = Path(tempfile.mkdtemp(prefix="workpool-demo-"))
pool = Workpool(f"sqlite:///{directory}/orders.db", app="orders-demo")


@pool.workflow(retries=RetryPolicy(max_attempts=4, initial_backoff=timedelta(milliseconds=200)))
async def charge_card(ctx: RunContext, order: Order) -> Receipt:
    """Charges the card; the payment gateway times out on the first two attempts."""
    say(f"charge_card  {order.order_id}: attempt {ctx.attempt}")
    if ctx.attempt <= 2:
        raise ConnectionError("payment gateway timed out")
    return Receipt(order_id=order.order_id, charged_cents=order.amount_cents, attempts=ctx.attempt)


@pool.workflow()
async def order_settled(ctx: RunContext, event: OnComplete) -> None:
    """on_complete callback: runs once when a charge ends, however it ends."""
    outcome = event.result
    detail = ""
    if isinstance(outcome, Success):
        detail = f"charged {outcome.output['charged_cents']} cents"
    say(f"order_settled {event.context['order_id']}: charge {outcome.status} {detail}")


@pool.workflow()
def send_review_request(ctx: RunContext, customer: str) -> str:
    """A plain (sync) function, run in a thread: asks for a review a little later."""
    say(f"send_review_request: emailing {customer}")
    return f"review request sent to {customer}"


def reserve_stock(order_id: str) -> str:
    """A side effect wrapped in a step: it runs once however often the workflow replays."""
    say(f"reserve_stock {order_id}: reserved (printed once)")
    return f"stock reserved for {order_id}"


@pool.workflow()
async def fulfil_order(ctx: RunContext, order: Order) -> str:
    """Durable steps: each execution replays from the top with saved step results."""
    say(f"fulfil_order {order.order_id}: executing (replays saved steps)")
    reserved = await ctx.step.run("reserve-stock", reserve_stock, order.order_id)
    receipt = await ctx.step.run_workflow("charge", charge_card, order)  # suspended meanwhile
    await ctx.step.sleep("cooling-off", timedelta(seconds=1))  # suspended, slot freed
    await ctx.step.emit_workflow("ask-for-review", send_review_request, order.customer)
    return f"{reserved}; charged {receipt.charged_cents} cents"


@pool.workflow()
async def abandoned_cart_reminder(ctx: RunContext, customer: str) -> None:
    """Scheduled for later, then canceled: never runs."""
    say(f"abandoned_cart_reminder: {customer} (this line should never print)")


async def main() -> None:
    show_workpool_warnings()
    say(f"store: {directory}/orders.db (SQLite, no server)")
    async with pool.worker(concurrency=8):
        order = Order(order_id="A-1001", customer="ada@example.com", amount_cents=4200)
        charge = await charge_card.run(
            order, on_complete=order_settled, context={"order_id": order.order_id}
        )
        say(f"enqueued charge_card {charge.id}")
        review = await send_review_request.run(order.customer, run_after=timedelta(seconds=2))
        say(f"enqueued send_review_request to start in 2 s: {await review.status()}")
        reminder = await abandoned_cart_reminder.run(order.customer, run_after=timedelta(hours=1))
        await reminder.cancel(reason="customer completed checkout")
        say(f"canceled abandoned_cart_reminder: {await reminder.status()}")

        receipt = await charge.result(timeout=15)
        say(f"charge_card result: {receipt}")
        say(f"charge_card status: {await charge.status()}")
        say(f"send_review_request result: {await review.result(timeout=15)}")
        second = Order(order_id="A-1002", customer="grace@example.com", amount_cents=990)
        fulfil = await fulfil_order.run(second)
        say(f"fulfil_order result: {await fulfil.result(timeout=20)}")
        steps = await pool.get_steps(fulfil.id)
        say("fulfil_order steps: " + ", ".join(f"{s.name}={s.status}" for s in steps))
        try:
            await reminder.result(timeout=1)
        except RunCanceledError as error:
            say(f"reminder result: {error}")
        except RunFailedError as error:  # not expected; shown for completeness
            say(f"reminder failed: {error}")
        await asyncio.sleep(0.3)  # let the on_complete callback print
    await summary(charge.id, review.id, reminder.id)
    await pool.aclose()


async def summary(*run_ids: str) -> None:
    """One line per run: workflow, final state, attempts."""
    say("summary:")
    for run_id in (*run_ids, f"{run_ids[0]}-0"):
        run = await pool.get_run(run_id)
        print(f"    {run.workflow:<24} {run.status:<10} attempts={run.attempts}")
    stats = (await pool.stats(timedelta(minutes=5))).total
    say(
        f"stats: {stats.completed} runs completed ({stats.succeeded} succeeded, "
        f"{stats.failed} failed for good, {stats.canceled} canceled), {stats.pending} pending"
    )
    say(
        f"stats: attempts that failed, incl. retried: {stats.retries + stats.failed} of "
        f"{stats.executions} ({stats.error_rate or 0:.0%}); runs that failed for good: "
        f"{stats.permanent_failure_rate or 0:.0%}"
    )


if __name__ == "__main__":
    asyncio.run(main())
