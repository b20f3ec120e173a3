"""The workflows page in a real browser: the registry and each cron's ticks."""

from __future__ import annotations

import time

import pytest
from playwright.async_api import Page, expect

from tests.dashboard.conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

DEADLINE = 30.0


async def test_the_registry_shows_limits_and_retry_policies(site: Site, page: Page) -> None:
    await page.goto(f"{site.url}workflows")

    greet = page.locator('tr[data-workflow="greet"]')
    await expect(greet).to_contain_text("dashboard-tests")
    await expect(greet).to_contain_text("100 per 1 s (workflow)")
    await expect(greet).to_contain_text("2 attempts")
    await expect(page.locator('tr[data-workflow="tick"] td.num')).to_have_text("1")


async def test_a_shared_limit_shows_its_runs_in_use_and_waiting(site: Site, page: Page) -> None:
    workflow = site.pool.workflows["call_partner"]
    await site.pool.enqueue_many([workflow.prepare(f"call {n}") for n in range(3)])
    await page.goto(f"{site.url}workflows")
    row = page.locator('tr[data-limit="partner-api"]')
    await expect(row.locator('[data-field="in-use"]')).to_have_text("1")
    await expect(row.locator('[data-field="waiting"]')).to_have_text("2")
    await expect(row).to_contain_text("50 per 1 s")
    await row.get_by_role("link", name="call_partner").click()
    await expect(page).to_have_url(f"{site.url}runs?workflow=call_partner")


async def test_a_cron_shows_its_next_tick_and_its_last_ones(site: Site, page: Page) -> None:
    await page.goto(f"{site.url}workflows")
    cron = page.locator('[data-cron="tick:0"]')
    await expect(cron.locator('[data-field="next"]')).to_contain_text("UTC")

    await expect(cron.locator('[data-field="trigger"]')).to_have_text("* * * * * */2 UTC")
    await expect(cron.locator('[data-field="overlap"]')).to_have_text("skip")
    # Each run lasts 3 s and ticks come every 2 s: some ticks fire a run, the ones that
    # find the trigger's previous run still active are skipped, and recorded so. The
    # page is read again until both show (a new worker fires its first tick within 2 s).
    deadline = time.monotonic() + DEADLINE
    while True:
        fired = await cron.locator('[data-tick="fired"]').count()
        skipped = await cron.locator('[data-tick="skipped"]').count()
        if fired and skipped:
            break
        assert time.monotonic() < deadline, f"{fired} fired and {skipped} skipped ticks shown"
        await page.wait_for_timeout(500)
        await page.reload()
    skip = cron.locator('[data-tick="skipped"]').first
    await expect(skip.locator('[data-field="reason"]')).to_have_text("previous run active")
    await expect(skip.locator("a.run-id")).to_have_count(1)  # the run that was active
    await expect(cron.locator('[data-field="skipped-kept"]')).not_to_have_text("0")
    await cron.locator('[data-tick="fired"] a.run-id').first.click()
    # Its idempotency key names its trigger.
    await expect(page.locator(".fields")).to_contain_text("cron:* * * * * */2 UTC:")
