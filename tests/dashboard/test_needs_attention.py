"""A run that needs attention in a real browser: the overview counts it, its page says
why, and "Rerun from here" on a step queues it again from that step; a failed run's
steps have the button too."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.conformance.helpers import claim_one, enqueue_new, error_json
from tests.dashboard.conftest import Site
from workpool.backends.base import Finish, StepRecord

pytestmark = pytest.mark.asyncio(loop_scope="session")

WHY = "step 'charge' is now called with other arguments"
WHY_ERROR = error_json("ValueError", "card rejected")


async def stopped_run(site: Site) -> str:
    """A run (of a workflow no worker serves) with steps reserve, charge and ship,
    stopped in needs_attention."""
    backend = await site.pool.backend()
    now = site.pool.settings.clock.now()
    run_id = await enqueue_new(backend, now, queue="attention")
    claimed = await claim_one(backend, now, queues=["attention"])
    for position, name in enumerate(("reserve", "charge", "ship")):
        step = StepRecord(name, "run", "succeeded", 1, now + position, "1", position=position)
        await backend.save_step(claimed.lease, step, now)
    error = error_json("StepMismatchError", WHY)
    await backend.finish([Finish(claimed.lease, "attention", error=error)], now + 3)
    return run_id


async def test_rerun_from_a_step_on_the_run_page(site: Site, page: Page) -> None:
    run_id = await stopped_run(site)
    await page.goto(site.url)
    await expect(page.locator('[data-total="needs_attention"]')).not_to_have_text("0")

    await page.goto(f"{site.url}runs/{run_id}")
    await expect(page.locator(".heading .status")).to_have_text("needs_attention")
    await expect(page.locator('[data-field="attention"]')).to_contain_text("needs attention")
    await expect(page.locator('[data-field="error-message"]')).to_have_text(WHY)
    page.once("dialog", lambda dialog: dialog.accept())

    await page.locator('[data-step="charge"]').get_by_role("button", name="Rerun from here").click()

    await expect(page.locator(".heading .status")).to_have_text("queued")
    await expect(page.locator('[data-field="rerun-from"]')).to_contain_text("charge")
    await expect(page.locator("[data-step]")).to_have_count(1)
    run = await site.pool.get_run(run_id)
    assert run.rerun_from is not None
    assert (run.status, run.rerun_from["step"]) == ("queued", "charge")
    await expect(page.get_by_role("button", name="Rerun from here")).to_have_count(0)


async def test_rerun_a_failed_run_from_its_failing_step(site: Site, page: Page) -> None:
    backend = await site.pool.backend()
    now = site.pool.settings.clock.now()
    run_id = await enqueue_new(backend, now, queue="failing")
    claimed = await claim_one(backend, now, queues=["failing"])
    reserve = StepRecord("reserve", "run", "succeeded", 1, now, "1", position=0)
    await backend.save_step(claimed.lease, reserve, now)
    charge = StepRecord("charge", "run", "failed", 1, now + 1, error=WHY_ERROR, position=1)
    await backend.save_step(claimed.lease, charge, now)
    await backend.finish([Finish(claimed.lease, "failed", error=WHY_ERROR)], now + 2)

    await page.goto(f"{site.url}runs/{run_id}")
    await expect(page.locator(".heading .status")).to_have_text("failed")
    page.once("dialog", lambda dialog: dialog.accept())
    await page.locator('[data-step="charge"]').get_by_role("button", name="Rerun from here").click()

    await expect(page.locator(".heading .status")).to_have_text("queued")
    await expect(page.locator("[data-step]")).to_have_count(1)
    assert (await site.pool.get_run(run_id)).status == "queued"
