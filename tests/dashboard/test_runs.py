"""Runs in a real browser: a failure's traceback, retry, cancel, steps and links, the
list's filters and pages, and untrusted output shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.dashboard.conftest import TOKEN, Site, failed_run

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_failed_runs_page_shows_its_traceback(site: Site, page: Page) -> None:
    run_id = await failed_run(site, "the <b>disk</b> is full")

    await page.goto(f"{site.url}runs/{run_id}")

    await expect(page.locator('[data-field="error-type"]')).to_have_text("ValueError")
    message = page.locator('[data-field="error-message"]')
    await expect(message).to_have_text("the <b>disk</b> is full")  # as text, not markup
    assert await message.locator("b").count() == 0
    traceback = page.locator('[data-field="traceback"]')
    await expect(traceback).to_contain_text("Traceback (most recent call last)")
    await expect(traceback).to_contain_text("raise ValueError(message)")
    await expect(traceback).to_contain_text("ValueError: the <b>disk</b> is full")


async def test_retry_creates_a_linked_run(site: Site, page: Page) -> None:
    run_id = await failed_run(site, "try me again")
    await page.goto(f"{site.url}runs/{run_id}")
    page.once("dialog", lambda dialog: dialog.accept())

    await page.get_by_role("button", name="Retry").click()

    await expect(page.locator('[data-field="retry-of"]')).to_have_text(run_id)
    new_id = page.url.rsplit("/", 1)[1].partition("?")[0]
    assert new_id != run_id
    assert (await site.pool.get_run(run_id)).retried_as == new_id
    assert (await site.pool.get_run(new_id)).retry_of == run_id
    await page.locator('[data-field="retry-of"] a').click()
    await expect(page.locator('[data-field="retried-as"]')).to_have_text(new_id)


async def test_cancel_cancels_and_the_open_page_follows(site: Site, page: Page) -> None:
    first = await site.pool.run_by_name("held", "cancel me")
    await page.goto(f"{site.url}runs/{first.id}")
    await expect(page.locator('[data-field="waiting"]')).to_contain_text("no worker defines")
    page.once("dialog", lambda dialog: dialog.accept())

    await page.get_by_role("button", name="Cancel").click()

    await expect(page.locator(".heading .status")).to_have_text("canceled")
    assert (await site.pool.get_run(first.id)).status == "canceled"

    second = await site.pool.run_by_name("held", "canceled elsewhere")
    await page.goto(f"{site.url}runs/{second.id}")
    await expect(page.locator(".heading .status")).to_have_text("queued")
    await site.pool.cancel(second.id, "by a script")
    await expect(page.locator(".heading .status")).to_have_text("canceled")  # no reload


async def test_a_declined_confirmation_does_nothing(site: Site, page: Page) -> None:
    handle = await site.pool.run_by_name("held", "keep me")
    await page.goto(f"{site.url}runs/{handle.id}")
    await page.evaluate("window.sameDocument = true")
    page.once("dialog", lambda dialog: dialog.dismiss())

    await page.get_by_role("button", name="Cancel").click()  # waits for a navigation it starts

    assert await page.evaluate("window.sameDocument") is True  # the form was not sent
    assert (await site.pool.get_run(handle.id)).status == "queued"
    await site.pool.cancel(handle.id)


async def test_output_with_markup_shows_as_text(site: Site, page: Page) -> None:
    markup = "<script>window.pwned = 1</script><b>bold</b><img src=x onerror=window.pwned=2>"
    handle = await site.pool.run_by_name("echo", markup)
    assert await handle.result(timeout=20) == markup

    await page.goto(f"{site.url}runs/{handle.id}")

    output = page.locator('[data-field="output"]')
    await expect(output).to_have_text(f'"{markup}"')  # the JSON string, as text
    assert await output.locator("script, b, img").count() == 0
    await expect(page.locator('[data-field="input"]')).to_contain_text("<script>")
    assert await page.evaluate("window.pwned") is None


async def test_steps_show_as_a_timeline_with_links_to_children(site: Site, page: Page) -> None:
    handle = await site.pool.run_by_name("fulfil", "A-7")
    assert await handle.result(timeout=20) == "sku-A-7; hello A-7"

    await page.goto(f"{site.url}runs/{handle.id}")

    rows = page.locator("tr[data-step]")
    await expect(rows).to_have_count(3)
    await expect(rows.nth(0)).to_contain_text("reserve")
    await expect(page.locator('tr[data-step="greet"] td').nth(1)).to_have_text("workflow")
    await expect(page.locator('tr[data-step="settle"] td').nth(1)).to_have_text("sleep")
    await page.locator('tr[data-step="greet"] a.run-id').click()
    await expect(page.locator('[data-field="parent"]')).to_have_text(handle.id)
    await expect(page.locator('[data-field="output"]')).to_have_text('"hello A-7"')


async def test_the_list_filters_searches_and_pages(site: Site, page: Page) -> None:
    failed = [await failed_run(site, f"listed {n}") for n in range(3)]

    await page.goto(f"{site.url}runs?status=failed&workflow=explode&limit=2")
    links = page.locator("table.runs a.run-id")
    await expect(links).to_have_count(2)
    assert await links.all_inner_texts() == [failed[2], failed[1]]  # newest first
    await page.get_by_role("link", name="Older →").click()
    await expect(links.first).to_have_text(failed[0])
    for status in await page.locator("table.runs .status").all_inner_texts():
        assert status == "failed"

    await page.get_by_placeholder("search by run id").fill(failed[1])
    await page.get_by_role("button", name="Show").click()
    await expect(page).to_have_url(re.compile(f"/runs/{failed[1]}$"))
    await page.goto(f"{site.url}runs?id=no-such-run")
    await expect(page.locator("p.warning")).to_have_text("No run has the id no-such-run.")


async def test_reading_works_with_javascript_off(site: Site, browser: Browser) -> None:
    run_id = await failed_run(site, "read me without a script")
    held = await site.pool.run_by_name("held", "cancel me without a script")
    context = await browser.new_context(java_script_enabled=False)
    try:
        tab = await context.new_page()
        await tab.goto(f"{site.url}?token={TOKEN}")
        await expect(tab.locator('tr[data-queue="work"]')).to_be_visible()
        await tab.goto(f"{site.url}runs/{run_id}")
        await expect(tab.locator('[data-field="error-message"]')).to_have_text(
            "read me without a script"
        )
        await tab.goto(f"{site.url}runs/{held.id}")
        await tab.get_by_role("button", name="Cancel").click()  # no dialog: a page asks
        await tab.get_by_role("button", name="Yes, cancel it").click()
        await expect(tab.locator(".heading .status")).to_have_text("canceled")
    finally:
        await context.close()
