"""The dashboard's pure parts: the hour's chart, the steps' timeline, cron ticks, the
guards' settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from importlib import resources

import pytest

from workpool.backends.base import PairCounters, PeriodCounters
from workpool.cron import Cron
from workpool.dashboard.charts import RANGES, Chart
from workpool.dashboard.crons import recent_ticks, triggers
from workpool.dashboard.options import DashboardOptions, parse_basic_auth
from workpool.dashboard.server import is_loopback
from workpool.dashboard.timeline import SHORTEST, timeline
from workpool.dashboard.workflows import describe_retry
from workpool.errors import ConfigurationError
from workpool.history import summarize_history
from workpool.models import Run, SkippedTick, Step

NOW = 1_764_159_960.0 + 30  # 30 s into a minute
MINUTE = NOW - 30


def counters(queue: str, **counts: int) -> PairCounters:
    return PairCounters(queue, "send", **counts)


def last_hour(found: list[PeriodCounters], now: float, *, queue: str | None = None) -> Chart:
    """The overview's chart of the hour, of all queues or of one."""
    history = summarize_history(found, RANGES[0].span, now)
    series = history.total if queue is None else history.by_queue.get(queue)
    if series is None:
        series = summarize_history([], RANGES[0].span, now).total
    return Chart(RANGES[0], series)


def test_the_hour_has_sixty_minutes_ending_with_the_current_one() -> None:
    hour = last_hour(
        [
            PeriodCounters(MINUTE - 3600, [counters("mail", succeeded=9)]),  # too old
            PeriodCounters(MINUTE - 120, [counters("mail", succeeded=3, failed=1)]),
            PeriodCounters(MINUTE, [counters("mail", succeeded=2), counters("bulk", failed=2)]),
        ],
        NOW,
    )

    assert len(hour.periods) == 60
    assert hour.periods[-1].start == datetime.fromtimestamp(MINUTE, UTC)
    assert hour.periods[0].start == datetime.fromtimestamp(MINUTE - 59 * 60, UTC)
    assert [minute.completed for minute in hour.periods[-3:]] == [4, 0, 4]
    assert (hour.completed, hour.failed, hour.failure_rate) == (8, 3, 3 / 8)


def test_a_queues_hour_counts_its_own_pairs_only() -> None:
    minutes = [PeriodCounters(MINUTE, [counters("mail", succeeded=2), counters("bulk", failed=2)])]

    assert last_hour(minutes, NOW, queue="mail").failure_rate == 0.0
    assert last_hour(minutes, NOW, queue="bulk").failure_rate == 1.0
    assert last_hour(minutes, NOW, queue="idle").failure_rate is None


def test_bars_stack_and_the_busiest_minute_fills_the_height() -> None:
    minutes = [
        PeriodCounters(MINUTE - 60, [counters("mail", succeeded=1)]),
        PeriodCounters(MINUTE, [counters("mail", succeeded=2, canceled=1, failed=1)]),
    ]

    bars = last_hour(minutes, NOW).bars(600, 100)

    assert len(bars) == 60
    assert bars[0][1] == []  # nothing in that minute
    [one] = bars[-2][1]
    assert (one.kind, one.height) == ("succeeded", 25.0)
    stacked = bars[-1][1]
    assert [rect.kind for rect in stacked] == ["succeeded", "canceled", "failed"]
    assert [rect.height for rect in stacked] == [50.0, 25.0, 25.0]
    assert stacked[-1].y == 0.0  # the top of the busiest bar is the top of the chart


def step(name: str, start: float, end: float | None) -> Step:
    base = datetime(2026, 11, 26, 12, tzinfo=UTC)
    return Step(
        name=name,
        kind="run",
        status="succeeded" if end is not None else "waiting",
        attempts=1,
        output=None,
        error=None,
        child_run_id=None,
        wake_at=None,
        started_at=base + timedelta(seconds=start),
        finished_at=base + timedelta(seconds=end) if end is not None else None,
    )


def test_the_timeline_places_steps_on_one_span() -> None:
    now = datetime(2026, 11, 26, 12, 0, 10, tzinfo=UTC)
    rows = timeline([step("a", 0, 2), step("b", 2, 2), step("c", 5, None)], now)

    assert [(row.offset, row.width) for row in rows] == [(0.0, 0.2), (0.2, SHORTEST), (0.5, 0.5)]
    assert rows[0].duration == timedelta(seconds=2)
    assert rows[2].duration is None
    assert timeline([], now) == []


def test_recent_ticks_are_the_ones_the_leader_fired() -> None:
    every_five = Cron("*/5 * * * *")
    now = datetime(2026, 11, 26, 12, 7, 30, tzinfo=UTC).timestamp()

    ticks = recent_ticks(every_five, now, 3)

    assert [datetime.fromtimestamp(t, UTC).strftime("%H:%M") for t in ticks] == [
        "11:55",
        "12:00",
        "12:05",
    ]


def test_a_tick_shows_its_run_or_its_recorded_skip_and_an_old_one_is_not_judged() -> None:
    now = datetime(2026, 11, 26, 12, 15, 2, tzinfo=UTC).timestamp()
    fired_at = datetime(2026, 11, 26, 12, 5, tzinfo=UTC).timestamp()
    legacy_at = datetime(2026, 11, 26, 12, 0, tzinfo=UTC).timestamp()
    fired = run_with_key(f"cron:*/5 * * * * UTC:{fired_at!r}")
    legacy = run_with_key(f"cron:0:{legacy_at!r}")  # keyed by index before trigger ids
    skipped = SkippedTick(
        "tick",
        "*/5 * * * * UTC",
        datetime(2026, 11, 26, 12, 10, tzinfo=UTC),
        "previous_run_active",
        fired.id,
        datetime(2026, 11, 26, 12, 10, 1, tzinfo=UTC),
    )
    stored = [{"expression": "*/5 * * * *", "timezone": "UTC", "input": None}]

    [trigger] = triggers(stored, [fired, legacy], [skipped], now - 1250, now)

    assert [(tick.at.strftime("%H:%M"), tick.state) for tick in trigger.ticks] == [
        ("12:15", "due"),  # 2 s ago: the leader has not fired it yet
        ("12:10", "skipped"),
        ("12:05", "fired"),
        ("12:00", "fired"),
        ("11:55", "missed"),  # no run, no skip recorded: no worker led then
    ]  # 11:50 is older than the newest runs read: not judged
    assert trigger.ticks[1].skipped is skipped
    assert trigger.ticks[2].run is fired
    assert (trigger.id, trigger.overlap, trigger.skipped_kept) == ("*/5 * * * * UTC", "skip", 1)
    assert trigger.next_at is not None
    assert trigger.next_at.strftime("%H:%M") == "12:20"


def test_an_unreadable_trigger_says_why() -> None:
    stored = [
        {"expression": "every day", "timezone": "UTC"},
        {"expression": "* * * * *", "timezone": "Mars/Base"},
    ]

    problems = [str(trigger.problem) for trigger in triggers(stored, [], [], 0.0, NOW)]

    assert "invalid cron expression" in problems[0]
    assert "unknown time zone" in problems[1]


def run_with_key(key: str) -> Run:
    created = datetime(2026, 11, 26, 12, 5, tzinfo=UTC)
    return Run(
        id="01a2",
        workflow="tick",
        queue="default",
        status="succeeded",
        attempts=1,
        input=None,
        output=None,
        error=None,
        created_at=created,
        available_at=created,
        started_at=created,
        finished_at=created,
        cancel_requested=False,
        cancel_reason=None,
        idempotency_key=key,
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.com", False),
    ],
)
def test_only_loopback_addresses_are_local(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_guard_settings_are_checked() -> None:
    assert parse_basic_auth("ops:s3cret:with:colons") == ("ops", "s3cret:with:colons")
    with pytest.raises(ConfigurationError, match="user:password"):
        parse_basic_auth("ops:")
    with pytest.raises(ConfigurationError, match="at least 8"):
        DashboardOptions(token="short")
    with pytest.raises(ConfigurationError, match="refresh"):
        DashboardOptions(refresh=timedelta(0))
    assert DashboardOptions(basic_auth=("a", "b")).guarded
    assert not DashboardOptions().guarded


def test_retry_policies_read_in_words() -> None:
    assert describe_retry(None) == "1 attempt (no retry)"
    stored = {"max_attempts": 5, "initial_backoff": 0.25, "base": 2.0}
    assert describe_retry(stored).startswith("5 attempts; waits 0.25 s, then 2 times longer")
    assert describe_retry({"max_attempts": "x"}).startswith("unreadable policy")


def test_no_template_marks_text_as_safe() -> None:
    """Run inputs, outputs and errors are untrusted: every value is escaped."""
    templates = resources.files("workpool.dashboard").joinpath("templates")
    for template in templates.iterdir():
        text = template.read_text("utf-8")
        assert "|safe" not in text.replace(" ", ""), template.name
        assert "autoescape" not in text, template.name
