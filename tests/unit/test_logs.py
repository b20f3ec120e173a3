"""Log levels from the option or the environment, and the JSON line format."""

from __future__ import annotations

import json
import logging

import pytest

from workpool.logs import JsonFormatter, resolve_level


def test_the_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKPOOL_LOG_LEVEL", "debug")
    assert resolve_level("warning") == "WARNING"
    assert resolve_level() == "DEBUG"
    monkeypatch.delenv("WORKPOOL_LOG_LEVEL")
    assert resolve_level() == "INFO"


def test_an_invalid_level_warns_and_gives_info(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("WORKPOOL_LOG_LEVEL", "loud")
    with caplog.at_level(logging.WARNING, logger="workpool"):
        assert resolve_level() == "INFO"
    assert "$WORKPOOL_LOG_LEVEL='loud' is not a log level" in caplog.text


def test_a_run_event_is_one_json_line_with_its_fields() -> None:
    record = logging.LogRecord(
        "workpool.worker", logging.INFO, __file__, 1, "run %s", ("r1",), None
    )
    record.__dict__.update(
        event="completed",
        run_id="r1",
        workflow="charge",
        queue="default",
        attempt=2,
        duration=0.25,
        outcome="success",
    )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    document = json.loads(line)
    assert document["message"] == "run r1"
    assert {
        key: document[key]
        for key in (
            "event",
            "run_id",
            "workflow",
            "queue",
            "attempt",
            "duration",
            "outcome",
            "level",
        )
    } == {
        "event": "completed",
        "run_id": "r1",
        "workflow": "charge",
        "queue": "default",
        "attempt": 2,
        "duration": 0.25,
        "outcome": "success",
        "level": "INFO",
    }
