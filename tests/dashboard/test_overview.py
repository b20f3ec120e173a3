"""The overview in a real browser: live counts, queue actions, and the guards."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.dashboard.conftest import TOKEN, Site, failed_run
from tests.dashboard.http import status_of

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_counts_change_live(site: Site, page: Page) -> None:
    pending = page.locator('tr[data-queue="held"] td[data-field="pending"]')
    before = int(await pending.inner_text())
    await page.evaluate("window.notReloaded = true")

    for number in range(3):
        await site.pool.run_by_name("held", f"live-{number}")

    await expect(pending).to_have_text(str(before + 3))
    assert await page.evaluate("window.notReloaded") is True  # the script refreshed it


async def test_pause_stops_new_starts_and_resume_starts_them(site: Site, page: Page) -> None:
    row = page.locator('tr[data-queue="pausable"]')
    await row.get_by_role("button", name="Pause").click()
    await expect(row.locator('td[data-field="state"] .tag')).to_have_text("paused")
    assert (await site.pool.get_queue("pausable")).paused

    held = await site.pool.run_by_name("pausable", "while paused")
    other = await site.pool.run_by_name("greet", "meanwhile")
    await other.result(timeout=20)  # the worker keeps starting runs of its other queues
    assert (await site.pool.get_run(held.id)).status == "queued"
    await expect(row.locator('td[data-field="pending"]')).to_have_text("1")

    await row.get_by_role("button", name="Resume").click()
    await expect(row.locator('td[data-field="state"] .tag')).to_have_text("active")
    assert await held.result(timeout=20) == "while paused"


async def test_max_parallelism_is_set_from_the_page(site: Site, page: Page) -> None:
    for typed, stored in (("3", 3), ("", None)):
        field = page.get_by_label("max_parallelism of pausable")
        await field.fill(typed)
        async with page.expect_navigation():  # the POST, then the overview again
            await field.press("Enter")
        await expect(page.get_by_label("max_parallelism of pausable")).to_have_value(typed)
        assert (await site.pool.get_queue("pausable")).max_parallelism == stored


async def test_read_only_mode_has_no_buttons_and_refuses_actions(
    site: Site, context: BrowserContext
) -> None:
    tab = await context.new_page()
    await tab.goto(site.mounted_url)
    await expect(tab.locator('tr[data-queue="work"]')).to_be_visible()
    failed = await failed_run(site, "read-only")

    for path in ("", "runs", f"runs/{failed}", "workflows"):
        await tab.goto(site.mounted_url + path)
        assert await tab.locator("form[method=post]").count() == 0, path
    await tab.get_by_role("link", name="Runs", exact=True).click()
    await expect(tab).to_have_url(site.mounted_url + "runs")  # links keep the mount path

    cookies = {cookie["name"]: cookie["value"] for cookie in await context.cookies()}
    refused = await context.request.post(
        site.mounted_url + "actions/pause",
        form={"queue": "work", "csrf": cookies["workpool_dashboard_csrf"]},
    )
    assert refused.status == 403
    assert "read-only" in await refused.text()
    assert not (await site.pool.get_queue("work")).paused


async def test_a_request_without_the_token_is_refused(site: Site) -> None:
    assert await asyncio.to_thread(status_of, site.url) == 401
    assert await asyncio.to_thread(status_of, site.url, "Bearer not-the-token") == 401
    assert await asyncio.to_thread(status_of, site.url, f"Bearer {TOKEN}") == 200
    assert await asyncio.to_thread(status_of, f"{site.url}runs") == 401
    assert await asyncio.to_thread(status_of, f"{site.url}static/dashboard.css") == 401
    # With the token but no CSRF token, an action is refused too.
    action = f"{site.url}actions/pause"
    assert await asyncio.to_thread(status_of, action, f"Bearer {TOKEN}", b"queue=work") == 403
    assert not (await site.pool.get_queue("work")).paused
