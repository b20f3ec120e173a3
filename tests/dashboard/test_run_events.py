"""A run's page lists the values the run published (``ctx.set_event``), as text."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.dashboard.conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_runs_page_lists_its_published_values(site: Site, page: Page) -> None:
    markup = "<b>not bold</b>"
    handle = await site.pool.run_by_name("publish", markup)
    assert await handle.result(timeout=30) == "published"

    await page.goto(f"{site.url}runs/{handle.id}")

    events = page.locator('[data-field="events"]')
    await expect(events.locator("[data-event]")).to_have_count(2)
    await expect(events.locator('[data-event="note"] dt')).to_have_text("note")
    await expect(events.locator('[data-event="note"] pre')).to_have_text(f'"{markup}"')
    assert await events.locator("b").count() == 0  # as text, not markup
    await expect(events.locator('[data-event="stage"] pre')).to_contain_text('"step": 2')


async def test_a_run_that_published_nothing_has_no_events_block(site: Site, page: Page) -> None:
    handle = await site.pool.run_by_name("echo", "quiet")
    assert await handle.result(timeout=30) == "quiet"

    await page.goto(f"{site.url}runs/{handle.id}")

    await expect(page.locator('[data-field="output"]')).to_have_text('"quiet"')
    assert await page.locator('[data-field="events"]').count() == 0
