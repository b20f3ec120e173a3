"""History beyond the hour in a real browser: the overview's range selector (by
keyboard, and kept by the live refresh), the week's time axis on its plot, and each
workflow's throughput and failure rate, with JavaScript off too."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.dashboard.conftest import TOKEN, Site, failed_run

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_the_range_selector_moves_the_chart_to_a_week(site: Site, page: Page) -> None:
    await failed_run(site, "counted in the week")
    await page.reload()
    selector = page.get_by_role("navigation", name="Time range")
    await expect(selector.locator('[aria-current="true"]')).to_have_text("1 hour")

    await selector.get_by_role("link", name="1 week").focus()
    await page.keyboard.press("Enter")

    await expect(page).to_have_url(f"{site.url}?range=week")
    frame = page.locator('[data-chart="week"]')
    await expect(frame.locator(".x-scale span")).to_have_text(
        ["7 days ago", "5 days", "3 days", "1 day", "now"]
    )
    await expect(frame.locator(".y-scale span").first).to_have_text(re.compile(r"\d+/h"))
    await expect(page.locator(".cards")).to_contain_text("Failure rate, last week")
    boxes = await frame.evaluate(
        """frame => ({
            plot: frame.querySelector("svg").getBoundingClientRect().toJSON(),
            ticks: [...frame.querySelectorAll(".x-scale span")]
                .map(e => e.getBoundingClientRect().toJSON()),
        })"""
    )
    plot, ticks = boxes["plot"], boxes["ticks"]
    for share, tick in zip((2 / 7, 4 / 7, 6 / 7), ticks[1:4], strict=True):
        center = tick["left"] + tick["width"] / 2
        assert center == pytest.approx(plot["left"] + plot["width"] * share, abs=2)
    # The live part is fetched again from the same address: it stays on the week.
    updated = await page.locator(".updated").inner_text()
    await expect(page.locator(".updated")).not_to_have_text(updated, timeout=10_000)
    await expect(page.locator('[data-chart="week"]')).to_have_count(1)


async def test_each_workflow_shows_its_throughput_and_failure_rate(
    site: Site, browser: Browser
) -> None:
    await failed_run(site, "a failure to count")
    context = await browser.new_context(java_script_enabled=False)
    try:
        tab = await context.new_page()
        await tab.goto(f"{site.url}workflows?range=day&token={TOKEN}")
        row = tab.locator('tr[data-throughput="explode"]')
        await expect(row.locator('[data-field="failure-rate"]')).to_have_text("100.0%")
        finished = int(await row.locator('[data-field="finished"]').inner_text())
        assert finished >= 1
        per_hour = float(await row.locator('[data-field="per-hour"]').inner_text())
        assert per_hour == pytest.approx(finished / 24, rel=0.01)
        await expect(row.locator("svg rect.bar-failed")).not_to_have_count(0)
        selector = tab.get_by_role("navigation", name="Time range")
        await expect(selector.locator('[aria-current="true"]')).to_have_text("1 day")
        await selector.get_by_role("link", name="1 hour").click()
        await expect(tab.locator("h2").first).to_contain_text("last hour")
    finally:
        await context.close()
