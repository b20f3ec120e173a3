"""Screenshots of the web dashboard for the docs: ``.venv/bin/python -m
scripts.dashboard_screenshots [--out docs]``.

Builds a demo store in a temporary folder (SQLite): an hour of history, written by a
worker whose clock is moved a minute at a time, then live runs of a shop (payments,
emails, fulfilment with steps, a paused queue, crons); serves the dashboard on a free
port of 127.0.0.1 and takes screenshots of its pages with headless Chromium
(Debian's, as the browser tests use it). Writes ``dashboard-overview.png``,
``dashboard-run.png``, ``dashboard-failed-run.png`` and ``dashboard-workflows.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from playwright.async_api import async_playwright
from tests.dashboard import chromium

from workpool import Cron, RateLimit, RetryPolicy, RunContext, RunFailedError, Workpool
from workpool.clock import ManualClock
from workpool.dashboard import create_dashboard
from workpool.dashboard.server import listen, serve, url_of

QUEUES = ("payments", "emails", "fulfilment", "reports")
HISTORY_MINUTES = 58


class CardDeclinedError(Exception):
    """The bank said no."""


def shop(url: str) -> Workpool:
    """The demo shop's pool and workflows."""
    pool = Workpool(url, app="shop")
    pool.queue("payments", max_parallelism=20, rate_limit=RateLimit(200, per=1))

    @pool.workflow(queue="payments", max_concurrency=None)
    async def charge_card(ctx: RunContext, order: dict[str, int]) -> str:
        if order["amount_cents"] % 23 == 0:
            raise CardDeclinedError(
                f"card declined for {order['amount_cents']} cents: insufficient funds"
            )
        return f"payment-{order['amount_cents']}"

    @pool.workflow(queue="emails", max_concurrency=None, retries=RetryPolicy(max_attempts=3))
    async def send_receipt(ctx: RunContext, order_id: str) -> None:
        await asyncio.sleep(0.01)

    @pool.workflow(queue="fulfilment", max_concurrency=None)
    async def fulfil_order(ctx: RunContext, order_id: str) -> str:
        items = await ctx.step.run("reserve-stock", reserve_stock, order_id)
        payment = await ctx.step.run_workflow(
            "charge", charge_card, {"amount_cents": 4200 + len(items)}
        )
        await ctx.step.emit_workflow("receipt", send_receipt, order_id)
        await ctx.set_event("stage", "cooling off")
        await ctx.step.sleep("cooling-off", timedelta(seconds=1))
        label = await ctx.step.run("ship", ship, order_id)
        await ctx.set_event("stage", "shipped")
        await ctx.set_event("tracking", {"carrier": "PostNord", "parcel": f"PN-{order_id}"})
        return f"{payment}, {label}"

    @pool.workflow(queue="reports", cron=[Cron("*/5 * * * *")])
    async def sync_catalog(ctx: RunContext, value: None) -> int:
        return 1200

    @pool.workflow(queue="reports", cron=[Cron("0 3 * * *", timezone="Europe/Paris")])
    async def nightly_report(ctx: RunContext, value: None) -> str:
        return "report.pdf"

    # Every 10 s, 12 s long, one at a time: its ticks are fired and skipped in turn.
    @pool.workflow(queue="reports", max_concurrency=1, cron=[Cron("* * * * * */10")])
    async def ping_partners(ctx: RunContext, value: None) -> None:
        await asyncio.sleep(12)

    @pool.workflow(queue="imports", max_concurrency=2)
    async def import_feed(ctx: RunContext, feed: str) -> int:
        return 0

    return pool


async def reserve_stock(order_id: str) -> list[str]:
    await asyncio.sleep(0.12)
    return ["sku-1042", "sku-2201"]


def ship(order_id: str) -> str:
    time.sleep(0.05)
    return f"label-{order_id}"


async def write_history(url: str, rng: random.Random) -> None:
    """An hour of runs, a minute at a time, by a worker on a clock moved by hand."""
    clock = ManualClock(time.time() - 60 * HISTORY_MINUTES)
    pool = shop(url)
    pool.clock = clock
    async with pool.worker(queues=QUEUES, concurrency=50, housekeeping_every=3600):
        for minute in range(HISTORY_MINUTES):
            load = 25 + int(20 * abs((minute % 30) - 15) / 15) + rng.randrange(10)
            runs = [
                pool.workflows["charge_card"].prepare({"amount_cents": rng.randrange(500, 9000)})
                for _ in range(load)
            ]
            runs += [
                pool.workflows["send_receipt"].prepare(f"A-{minute}-{n}") for n in range(load // 2)
            ]
            await pool.enqueue_many(runs)
            while True:
                now = (await pool.stats(timedelta(minutes=1))).total
                if not now.pending and not now.running:
                    break
                await asyncio.sleep(0.05)
            clock.advance(60)
    await pool.aclose()


async def live_runs(pool: Workpool) -> dict[str, str]:
    """Runs of the shop now; returns the ids the screenshots show."""
    await pool.pause("imports")
    for feed in ("partners.csv", "suppliers.csv", "catalog.xml"):
        await pool.run_by_name("import_feed", feed)
    fulfil = await pool.run_by_name("fulfil_order", "A-1042")
    declined = await pool.run_by_name("charge_card", {"amount_cents": 4600})
    for n in range(12):
        await pool.run_by_name("send_receipt", f"B-{n}", run_after=timedelta(minutes=5))
    await fulfil.result(timeout=30)
    with contextlib.suppress(RunFailedError):  # declined on purpose: the failed-run page
        await declined.result(timeout=30)
    return {"run": fulfil.id, "failed-run": declined.id}


async def screenshots(base: str, ids: dict[str, str], out: Path) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium.executable(), args=chromium.ARGUMENTS
        )
        page = await browser.new_page(viewport={"width": 1360, "height": 900})
        pages = {
            "overview": base,
            "run": f"{base}runs/{ids['run']}",
            "failed-run": f"{base}runs/{ids['failed-run']}",
        }
        for name, address in pages.items():
            await page.goto(address)
            await page.wait_for_timeout(300)
            await page.screenshot(path=out / f"dashboard-{name}.png", full_page=True)
        # The workflows page once a tick of ping_partners was skipped (within a minute).
        await page.goto(f"{base}workflows")
        skipped = page.locator('[data-cron="ping_partners:0"] [data-tick="skipped"]')
        deadline = time.monotonic() + 90
        while not await skipped.count() and time.monotonic() < deadline:
            await page.wait_for_timeout(1000)
            await page.reload()
        await page.screenshot(path=out / "dashboard-workflows.png", full_page=True)
        await browser.close()


async def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/shop.db"
        await write_history(url, random.Random(7))
        pool = shop(url)
        async with pool.worker(queues=(*QUEUES, "imports"), concurrency=20):
            ids = await live_runs(pool)
            listening = listen("127.0.0.1", 0)
            server = asyncio.create_task(serve(create_dashboard(pool), listening))
            await screenshots(url_of(listening), ids, out)
            server.cancel()
        await pool.aclose()


if __name__ == "__main__":
    logging.disable(logging.ERROR)  # the declined cards are on purpose
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs"))
    asyncio.run(main(parser.parse_args().out))
