"""BackendHealth on its own: an outage is logged when it starts, reminded at most once
per interval (a manual clock, no waiting) and when it ends; other errors once each."""

from __future__ import annotations

import logging

import pytest

from workpool.clock import ManualClock
from workpool.errors import BackendUnavailableError
from workpool.worker.health import BackendHealth

UNREACHABLE = BackendUnavailableError("lost contact with Redis: Connection refused")


def taken(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records logged so far, and forget them."""
    records = list(caplog.records)
    caplog.clear()
    return records


def test_an_outage_is_one_error_a_reminder_a_minute_and_one_line_when_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(start=1000.0)
    health = BackendHealth(clock=clock.now)
    caplog.set_level(logging.INFO, logger="workpool")

    health.succeeded()
    assert taken(caplog) == []
    health.failed("claimer", UNREACHABLE)
    [lost] = taken(caplog)
    assert lost.levelno == logging.ERROR
    assert lost.exc_info is None
    assert "Connection refused" in lost.getMessage()
    assert "claimer" in lost.getMessage()

    for _ in range(1, 60):  # every side task fails, every second, for a minute
        clock.advance(1)
        health.failed("renewer", UNREACHABLE)
        health.failed("finisher", UNREACHABLE)
    assert taken(caplog) == []
    clock.advance(1)
    health.failed("claimer", UNREACHABLE)
    [reminder] = taken(caplog)
    assert reminder.levelno == logging.WARNING
    assert reminder.exc_info is None
    assert "60 s" in reminder.getMessage()
    assert "\n" not in reminder.getMessage()

    clock.advance(59)
    health.failed("claimer", UNREACHABLE)
    assert taken(caplog) == []
    clock.advance(1)
    health.failed("claimer", UNREACHABLE)
    assert [r.levelno for r in taken(caplog)] == [logging.WARNING]

    clock.advance(5.5)
    health.succeeded()
    health.succeeded()
    [back] = taken(caplog)
    assert back.levelno == logging.WARNING
    assert "125.5 s" in back.getMessage()
    assert back.__dict__["duration"] == 125.5
    assert health.reachable

    health.failed("cron", UNREACHABLE)  # a new outage is told again
    assert [r.levelno for r in taken(caplog)] == [logging.ERROR]


def test_another_error_is_a_bug_logged_with_its_traceback_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    health = BackendHealth(clock=ManualClock().now)
    caplog.set_level(logging.INFO, logger="workpool")

    def raised(error: Exception) -> Exception:
        try:
            raise error
        except Exception as caught:
            return caught

    for _ in range(3):
        health.failed("finisher", raised(ValueError("NaN is not a time")))
    health.failed("finisher", raised(ValueError("another message")))
    health.failed("claimer", raised(ValueError("NaN is not a time")))
    records = taken(caplog)
    assert [r.levelno for r in records] == [logging.ERROR] * 3
    assert all(r.exc_info is not None for r in records)
    assert "finisher" in records[0].getMessage()
    assert health.reachable  # the backend answered: not an outage

    health.failed("claimer", UNREACHABLE)
    taken(caplog)
    health.failed("claimer", raised(KeyError("during the outage")))
    assert [r.exc_info is not None for r in taken(caplog)] == [True]
    assert not health.reachable  # only a success ends an outage
