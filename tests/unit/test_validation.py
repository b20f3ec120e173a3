"""The checks of names, durations and times, and of the option values built on them."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from workpool import ConfigurationError, RateLimit, RetryPolicy
from workpool.validation import (
    EARLIEST,
    LATEST,
    check_name,
    check_time,
    duration_seconds,
    storable_time,
    timestamp_of,
)

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    "name",
    ["charge", "payments-eu", "a:b/c", "émoji 🎉", "x" * 200, "<lambda>", "spaced name"],
)
def test_good_names_pass(name: str) -> None:
    assert check_name(name, what="workflow name") == name


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "non-empty"),
        ("x" * 201, "at most 200"),
        ("bad \ud800", "lone surrogate"),
        ("\udfff", "lone surrogate"),
        ("nul\x00byte", "control character"),
        ("line\nbreak", "control character"),
        ("tab\tname", "control character"),
        ("del\x7f", "control character"),
        (42, "must be a string"),
        (None, "must be a string"),
        (b"bytes", "must be a string"),
    ],
)
def test_bad_names_are_refused_saying_why(name: object, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=f"queue name.*{problem}"):
        check_name(name, what="queue name")


def test_storable_times_are_a_day_inside_the_range_of_datetime() -> None:
    assert storable_time(0.0)
    assert storable_time(EARLIEST.timestamp())
    assert storable_time(LATEST.timestamp())
    for bad in (NAN, INF, -INF, 1e300, -1e300, EARLIEST.timestamp() - 1, LATEST.timestamp() + 1):
        assert not storable_time(bad), bad
    with pytest.raises(ConfigurationError, match=r"run_at.*between 0001-01-02 and 9999-12-31"):
        check_time(NAN, what="run_at")


@pytest.mark.parametrize(
    "when",
    [
        1_700_000_000.0,
        "2030-01-01",
        None,
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1, 1, 1, 3, tzinfo=timezone(timedelta(hours=5))),  # year 0 in UTC
        datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
        datetime(9999, 12, 31, 20, tzinfo=timezone(timedelta(hours=-5))),  # year 10000 in UTC
        datetime.min,
        datetime.max,
    ],
)
def test_times_must_be_datetimes_that_read_back(when: object) -> None:
    with pytest.raises(ConfigurationError, match="sleep_until"):
        timestamp_of(when, what="sleep_until")


def test_a_datetime_gives_its_timestamp() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    assert timestamp_of(moment, what="run_at") == moment.timestamp()


@pytest.mark.parametrize("value", [NAN, INF, -INF, "5", True, None, [1], 10**400])
def test_durations_must_be_finite_numbers_or_timedeltas(value: object) -> None:
    with pytest.raises(ConfigurationError, match="run_after"):
        duration_seconds(value, what="run_after")


def test_durations_give_seconds_and_can_be_required_positive() -> None:
    assert duration_seconds(timedelta(minutes=2), what="x") == 120.0
    assert duration_seconds(3, what="x") == 3.0
    assert duration_seconds(-1.5, what="x") == -1.5
    for value in (0, -1, timedelta(0)):
        with pytest.raises(ConfigurationError, match="timeout must be positive"):
            duration_seconds(value, what="timeout", positive=True)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"base": NAN}, "base"),
        ({"base": INF}, "base"),
        ({"base": 0.5}, "base"),
        ({"base": "2"}, "base"),
        ({"base": True}, "base"),
        ({"max_attempts": True}, "max_attempts"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 2.5}, "max_attempts"),
        ({"max_attempts": "3"}, "max_attempts"),
        ({"initial_backoff": timedelta(seconds=-1)}, "initial_backoff"),
        ({"initial_backoff": "5"}, "initial_backoff"),
        ({"max_attempts": 100}, "longest wait"),
        ({"initial_backoff": timedelta.max, "base": 1}, "initial_backoff"),
        ({"max_attempts": 10_000, "base": 10}, "longest wait"),
    ],
)
def test_bad_retry_policies_are_refused(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        RetryPolicy(**arguments)


def test_a_policy_at_the_longest_wait_is_accepted() -> None:
    policy = RetryPolicy(max_attempts=30, initial_backoff=timedelta(seconds=1), base=2)
    assert RetryPolicy.from_json(policy.to_json()) == policy
    assert RetryPolicy(max_attempts=1_000_000, base=1) == RetryPolicy.from_json(
        {"max_attempts": 1_000_000, "initial_backoff": 0.25, "base": 1}
    )


@pytest.mark.parametrize(
    "stored",
    [
        {"max_attempts": 3, "initial_backoff": 0.25, "base": NAN},
        {"max_attempts": 3, "initial_backoff": NAN, "base": 2.0},
        {"max_attempts": 3, "initial_backoff": 1e300, "base": 2.0},
        {"max_attempts": 2.5, "initial_backoff": 0.25, "base": 2.0},
        {"max_attempts": True, "initial_backoff": 0.25, "base": 2.0},
        {"max_attempts": "3", "initial_backoff": 0.25, "base": 2.0},
        {"max_attempts": 3, "initial_backoff": "0.25", "base": 2.0},
        {"max_attempts": 3, "base": 2.0},
        ["not", "an", "object"],
        "text",
        None,
    ],
)
def test_bad_stored_policies_are_refused(stored: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"(?i)retry ?policy"):
        RetryPolicy.from_json(stored)


@pytest.mark.parametrize(
    "arguments",
    [
        {"count": 1, "per": NAN},
        {"count": 1, "per": INF},
        {"count": 1, "per": -1},
        {"count": 1, "per": 0},
        {"count": 1, "per": timedelta(0)},
        {"count": 1, "per": "1"},
        {"count": 1, "per": True},
        {"count": 1, "per": 1e300},
        {"count": True, "per": 1},
        {"count": 0, "per": 1},
        {"count": 1.5, "per": 1},
    ],
)
def test_bad_rate_limits_are_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="RateLimit"):
        RateLimit(**arguments)


def test_good_rate_limits_keep_their_period() -> None:
    assert RateLimit(10, per=timedelta(minutes=1)).seconds == 60.0
    assert RateLimit(2, per=0.5).seconds == 0.5
