"""Pause, resume and run now on a run's page in a real browser; the read-only dashboard
shows none of them."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.conformance.helpers import enqueue_new
from tests.dashboard.conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def scheduled_run(site: Site) -> str:
    """A run (of a queue no worker serves) scheduled an hour from now."""
    backend = await site.pool.backend()
    now = site.pool.settings.clock.now()
    return await enqueue_new(backend, now, queue="paused", available_at=now + 3600)


async def test_pause_resume_and_run_now_on_the_run_page(site: Site, page: Page) -> None:
    run_id = await scheduled_run(site)
    await page.goto(f"{site.url}runs/{run_id}")
    status = page.locator(".heading .status")
    await expect(status).to_have_text("scheduled")
    await expect(page.get_by_role("button", name="Resume")).to_have_count(0)

    await page.get_by_role("button", name="Pause").click()
    await expect(status).to_have_text("paused")
    await expect(page.locator(".notice")).to_contain_text("Run paused")
    assert (await site.pool.get_run(run_id)).status == "paused"
    await expect(page.get_by_role("button", name="Pause")).to_have_count(0)
    await expect(page.get_by_role("button", name="Run now")).to_have_count(0)

    await page.get_by_role("button", name="Resume").click()
    await expect(status).to_have_text("scheduled")
    await expect(page.locator(".notice")).to_contain_text("Run resumed")

    await page.get_by_role("button", name="Run now").click()
    await expect(status).to_have_text("queued")
    await expect(page.locator(".notice")).to_contain_text("available now")
    await expect(page.get_by_role("button", name="Run now")).to_have_count(0)
    await expect(page.get_by_role("button", name="Pause")).to_have_count(1)


async def test_the_read_only_dashboard_has_no_pause_buttons(site: Site, page: Page) -> None:
    run_id = await scheduled_run(site)
    await page.goto(f"{site.mounted_url}runs/{run_id}")
    await expect(page.locator(".heading .status")).to_have_text("scheduled")
    for name in ("Pause", "Resume", "Run now"):
        await expect(page.get_by_role("button", name=name)).to_have_count(0)
