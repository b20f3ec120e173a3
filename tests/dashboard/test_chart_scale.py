"""The overview's chart reads on its own: a scale of round numbers with its gridlines, a
time axis, and a rate that says something for a quiet hour too."""

from __future__ import annotations

import pytest

from workpool.backends.base import MinuteCounters, PairCounters
from workpool.dashboard.charts import MINUTES, TIME_TICKS, last_hour

NOW = 1_764_159_960.0 + 30
MINUTE = NOW - 30


def hour_with(*per_minute: int) -> list[MinuteCounters]:
    """Counters of the last minutes: the last count is the current minute's."""
    return [
        MinuteCounters(MINUTE - 60 * age, [PairCounters("mail", "send", succeeded=count)])
        for age, count in enumerate(reversed(per_minute))
        if count
    ]


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
    assert [label for label, _ in TIME_TICKS] == [
        "60 min ago",
        "45 min",
        "30 min",
        "15 min",
        "now",
    ]
    assert [share for _, share in TIME_TICKS] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert MINUTES == 60
