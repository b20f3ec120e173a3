"""The failures page and the bulk actions, in a real browser: groups by error type, a
group's bulk retry after a page that shows the count, bulk cancel from the runs list."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.dashboard.conftest import Site, has_status
from tests.polling import wait_until
from workpool import RunFilter

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def refused_runs(site: Site, count: int) -> list[str]:
    """``count`` runs of ``refuse`` (PermissionError), once they have failed."""
    handles = [await site.pool.run_by_name("refuse", f"no {n}") for n in range(count)]
    for handle in handles:
        await wait_until(lambda handle=handle: has_status(site, handle.id, "failed"))
    return [handle.id for handle in handles]


async def test_a_failure_group_is_retried_after_its_count_is_shown(site: Site, page: Page) -> None:
    run_ids = await refused_runs(site, 3)
    group = RunFilter(workflow="refuse", status="failed", error_type="PermissionError")
    waiting = await site.pool.retry_runs(group, dry_run=True)
    assert waiting >= 3

    await page.goto(f"{site.url}failures")
    row = page.locator('tr[data-group="refuse:PermissionError"]')
    await expect(row.locator('[data-field="count"]')).to_have_text(
        str(await _count(site, "refuse", "PermissionError"))
    )
    await row.get_by_role("button", name="Retry all").click()

    await expect(page.locator('[data-field="count"]')).to_have_text(str(waiting))
    for run_id in run_ids:
        assert (await site.pool.get_run(run_id)).retried_as is None  # nothing changed yet
    await page.get_by_role("button", name="Yes, retry them").click()

    await expect(page.locator('[data-field="done"]')).to_have_text(f"{waiting} runs retried.")
    for run_id in run_ids:
        assert (await site.pool.get_run(run_id)).retried_as is not None


async def test_the_runs_list_cancels_every_run_its_filters_select(site: Site, page: Page) -> None:
    handles = [await site.pool.run_by_name("held", f"bulk {n}") for n in range(2)]
    held = RunFilter(workflow="held", queue="held", status="queued")
    count = await site.pool.cancel_runs(held, dry_run=True)

    await page.goto(f"{site.url}runs?workflow=held&queue=held&status=queued")
    await page.get_by_role("button", name="Cancel…").click()
    await expect(page.locator('[data-field="count"]')).to_have_text(str(count))
    await page.get_by_role("button", name="Yes, cancel them").click()

    await expect(page.locator('[data-field="done"]')).to_have_text(f"{count} runs canceled.")
    for handle in handles:
        assert (await site.pool.get_run(handle.id)).status == "canceled"


async def test_the_read_only_dashboard_shows_failures_without_actions(
    site: Site, page: Page
) -> None:
    await refused_runs(site, 1)
    await page.goto(f"{site.mounted_url}failures")
    await expect(page.locator('tr[data-group="refuse:PermissionError"]')).to_be_visible()
    assert await page.get_by_role("button", name="Retry all…").count() == 0


async def _count(site: Site, workflow: str, error_type: str) -> int:
    groups = await site.pool.failures()
    return next(g.count for g in groups if (g.workflow, g.error_type) == (workflow, error_type))
