"""Cron triggers: validation, and next fire times across daylight saving changes."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from workpool import ConfigurationError, Cron
from workpool.cron import trigger_ids

PARIS = ZoneInfo("Europe/Paris")


def ticks(cron: Cron, start: datetime, count: int) -> list[str]:
    moment = start.timestamp()
    found = []
    for _ in range(count):
        moment = cron.next_after(moment)
        found.append(datetime.fromtimestamp(moment, PARIS).isoformat())
    return found


def test_bad_expressions_and_zones_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="invalid cron expression"):
        Cron("61 * * * *")
    with pytest.raises(ConfigurationError, match="unknown time zone"):
        Cron("* * * * *", timezone="Mars/Olympus")


def test_every_five_minutes_in_utc() -> None:
    start = datetime(2026, 1, 1, 10, 2, tzinfo=ZoneInfo("UTC")).timestamp()
    assert Cron("*/5 * * * *").next_after(start) - start == 180


def test_spring_forward_fires_a_skipped_time_when_the_clocks_jump() -> None:
    daily = Cron("30 2 * * *", timezone="Europe/Paris")
    assert ticks(daily, datetime(2026, 3, 28, 12, tzinfo=PARIS), 2) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    hourly = Cron("0 * * * *", timezone="Europe/Paris")
    assert ticks(hourly, datetime(2026, 3, 29, 0, 30, tzinfo=PARIS), 3) == [
        "2026-03-29T01:00:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T04:00:00+02:00",
    ]


def test_fall_back_fires_a_fixed_time_once_and_hourly_ticks_in_both_hours() -> None:
    daily = Cron("30 2 * * *", timezone="Europe/Paris")
    assert ticks(daily, datetime(2026, 10, 24, 12, tzinfo=PARIS), 2) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    hourly = Cron("0 * * * *", timezone="Europe/Paris")
    assert ticks(hourly, datetime(2026, 10, 25, 0, 30, tzinfo=PARIS), 4) == [
        "2026-10-25T01:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
    ]


def test_a_bad_overlap_or_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"invalid overlap 'buffer'.*'buffer_one'"):
        Cron("* * * * *", overlap="buffer")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="invalid name ''"):
        Cron("* * * * *", name="")


def test_a_trigger_is_identified_by_its_name_else_its_expression_and_time_zone() -> None:
    crons = [
        Cron("*/5 * * * *", timezone="Europe/Paris"),
        Cron("0 3 * * *", name="nightly"),
        Cron("*/5 * * * *", timezone="Europe/Paris", input={"full": True}),
        Cron("0 3 * * *"),
    ]
    assert trigger_ids(crons, "sync") == (
        "*/5 * * * * Europe/Paris",
        "nightly",
        "*/5 * * * * Europe/Paris #2",
        "0 3 * * * UTC",
    )
    with pytest.raises(ConfigurationError, match="two cron triggers are named 'nightly'"):
        trigger_ids([Cron("0 3 * * *", name="nightly"), Cron("0 4 * * *", name="nightly")], "sync")
