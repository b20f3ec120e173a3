"""The overview's chart reads on its own: a scale of round numbers with its gridlines, a
time axis per range, and a rate that says something for a quiet hour, day or week too."""

from __future__ import annotations

import pytest

from workpool.backends.base import PairCounters, PeriodCounters
from workpool.dashboard.charts import RANGES, Chart, Range, range_named
from workpool.history import bounds, summarize_history

NOW = 1_764_159_960.0 + 30
MINUTE = NOW - 30


def hour_with(*per_minute: int) -> list[PeriodCounters]:
    """Counters of the last minutes: the last count is the current minute's."""
    return [
        PeriodCounters(MINUTE - 60 * age, [PairCounters("mail", "send", succeeded=count)])
        for age, count in enumerate(reversed(per_minute))
        if count
    ]


def last_hour(found: list[PeriodCounters], now: float, over: Range = RANGES[0]) -> Chart:
    return Chart(over, summarize_history(found, over.span, now).total)


@pytest.mark.parametrize(
    ("completed_per_minute", "said"),
    [
        ((), "none in the last hour"),
        ((1, 0, 1), "1 every 30 min"),  # 2 in the hour, not "0.0 per minute"
        ((5,), "1 every 12 min"),
        ((45,), "0.75 per minute"),
        ((30, 30, 30), "1.5 per minute"),
        ((3390,), "56 per minute"),
    ],
)
def test_the_rate_says_something_at_any_pace(
    completed_per_minute: tuple[int, ...], said: str
) -> None:
    assert last_hour(hour_with(*completed_per_minute), NOW).rate_text == said


@pytest.mark.parametrize(
    ("peak", "top"),
    [(0, 0), (1, 2), (2, 2), (3, 4), (7, 8), (9, 10), (57, 60), (100, 100), (101, 120)],
)
def test_the_scale_tops_at_a_round_number_with_a_round_middle(peak: int, top: int) -> None:
    hour = last_hour(hour_with(peak), NOW)
    assert hour.scale_top == top
    assert hour.scale == ([top, top // 2, 0] if top else [0])
    if top:
        [rect] = hour.bars(600, 100, scaled=True)[-1][1]
        assert rect.height == pytest.approx(100 * peak / top)


def test_the_time_axis_spans_the_hour_to_now() -> None:
    hour = range_named("hour")
    assert [label for label, _ in hour.ticks] == [
        "60 min ago",
        "45 min",
        "30 min",
        "15 min",
        "now",
    ]
    assert [share for _, share in hour.ticks] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert len(last_hour([], NOW).periods) == 60
    assert range_named("nonsense") == hour


@pytest.mark.parametrize(
    ("key", "bars", "ticks"),
    [
        ("day", 96, ["24 h ago", "18 h", "12 h", "6 h", "now"]),
        ("week", 168, ["7 days ago", "5 days", "3 days", "1 day", "now"]),
    ],
)
def test_a_day_and_a_week_have_their_bars_and_axes(key: str, bars: int, ticks: list[str]) -> None:
    over = range_named(key)
    chart = last_hour([], NOW, over)
    assert len(chart.periods) == bars
    assert [label for label, _ in over.ticks] == ticks
    for _, share in over.ticks:  # every tick falls between two bars
        assert share * bars == pytest.approx(round(share * bars))


@pytest.mark.parametrize(
    ("key", "completed", "said"),
    [
        ("day", 0, "none in the last day"),
        ("day", 30, "1.2 per hour"),
        ("day", 4, "1 every 6 h"),
        ("week", 2, "1 every 84 h"),
        ("week", 20_160, "2.0 per minute"),
    ],
)
def test_the_rate_of_a_longer_range(key: str, completed: int, said: str) -> None:
    over = range_named(key)
    first, _, _ = bounds(over.span, NOW)  # the start of the range's first period
    found = [PeriodCounters(first, [PairCounters("mail", "send", succeeded=completed)])]
    assert last_hour(found if completed else [], NOW, over).rate_text == said
