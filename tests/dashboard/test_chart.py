"""The overview in a real browser reads on its own: the hour's chart has a scale and a
time axis placed on its plot, the hour's rate never reads "0.0 per minute", and queue
names stay on one line however narrow the window."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.dashboard.conftest import TOKEN, Site

pytestmark = pytest.mark.asyncio(loop_scope="session")

LONG_QUEUE = "notifications-transactional-eu-west"


async def test_the_hours_chart_has_a_scale_and_a_time_axis_on_its_plot(
    site: Site, page: Page
) -> None:
    handle = await site.pool.run_by_name("greet", "chart")
    await handle.result(timeout=30)
    await page.reload()

    frame = page.locator('[data-chart="hour"]')
    scale = await frame.locator(".y-scale span").all_inner_texts()
    top = re.fullmatch(r"(\d+)/min", scale[0])
    assert top is not None, scale
    assert scale[1:] == [str(int(top[1]) // 2), "0"]
    assert await frame.locator(".x-scale span").all_inner_texts() == [
        "60 min ago",
        "45 min",
        "30 min",
        "15 min",
        "now",
    ]
    # One read of every box (the page swaps its live part in now and then).
    boxes = await frame.evaluate(
        """frame => {
            const box = e => e.getBoundingClientRect().toJSON();
            const all = selector => [...frame.querySelectorAll(selector)].map(box);
            return {
                plot: box(frame.querySelector("svg")),
                scale: all(".y-scale span"),
                ticks: all(".x-scale span"),
            };
        }"""
    )
    plot, labels, ticks = boxes["plot"], boxes["scale"], boxes["ticks"]
    centers = [box["y"] + box["height"] / 2 for box in labels]
    wanted = [plot["top"], plot["top"] + plot["height"] / 2, plot["bottom"]]
    assert centers == pytest.approx(wanted, abs=3)  # each number on its gridline
    assert all(box["top"] >= plot["bottom"] for box in ticks)  # under the plot
    first, middle, last = ticks[0], ticks[2], ticks[-1]
    assert first["left"] == pytest.approx(plot["left"], abs=2)
    assert middle["left"] + middle["width"] / 2 == pytest.approx(
        plot["left"] + plot["width"] / 2, abs=2
    )
    assert last["right"] == pytest.approx(plot["right"], abs=2)

    rate = await page.locator('[data-total="rate"]').inner_text()
    assert re.fullmatch(r"\d+(\.\d+)? per minute|1 every \d+ min", rate), rate
    assert rate != "0.0 per minute"


async def test_queue_names_stay_on_one_line_in_a_narrow_window(
    site: Site, context: BrowserContext
) -> None:
    await site.pool.run_by_name("held", "long name", queue=LONG_QUEUE)
    tab = await context.new_page()
    await tab.set_viewport_size({"width": 800, "height": 900})
    await tab.goto(f"{site.url}?token={TOKEN}")

    row = f'tr[data-queue="{LONG_QUEUE}"] th'
    await expect(tab.locator(row)).to_contain_text(LONG_QUEUE)
    await _on_one_line(tab, row, LONG_QUEUE)
    await tab.goto(f"{site.url}runs?queue={LONG_QUEUE}")
    await expect(tab.locator("table.runs tbody td.name").nth(1)).to_have_text(LONG_QUEUE)
    await _on_one_line(tab, "table.runs tbody td", LONG_QUEUE)


async def _on_one_line(tab: Page, selector: str, text: str) -> None:
    """Whether the text node holding ``text``, in the first element ``selector`` finds
    that holds it, is laid out on one line: the tops of its line boxes, not the cell's
    height, which the tallest cell of its row sets (read at once: the page swaps its live
    part in now and then)."""
    lines = await tab.evaluate(
        """([selector, text]) => {
            const cell = [...document.querySelectorAll(selector)]
                .find(element => element.textContent.includes(text));
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            let node = walker.nextNode();
            while (!node.data.includes(text)) node = walker.nextNode();
            const range = document.createRange();
            range.selectNodeContents(node);
            const tops = [...range.getClientRects()]
                .filter(rect => rect.width > 0)
                .map(rect => Math.round(rect.top));
            return new Set(tops).size;
        }""",
        [selector, text],
    )
    assert lines == 1, (selector, lines)
