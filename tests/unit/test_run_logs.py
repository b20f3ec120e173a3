"""The records behind failures and ``ctx.logger``: fields, text and JSON lines."""

from __future__ import annotations

import json
import logging

import pytest

from workpool.logs import TEXT_FORMAT, JsonFormatter, RunLogger, log_completed

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "shop.py", line 3, in charge\n'
    "    raise ValueError('declined')\n"
    "ValueError: declined\n"
)
RUN = {"run_id": "r1", "workflow": "charge", "queue": "default", "attempt": 2}


def failed_attempt(
    caplog: pytest.LogCaptureFixture, *, retry_at: float | None
) -> logging.LogRecord:
    error = json.dumps({"type": "ValueError", "message": "declined", "traceback": TRACEBACK})
    with caplog.at_level(logging.INFO, logger="workpool"):
        log_completed(
            logging.getLogger("workpool.worker"),
            RUN,
            "retrying" if retry_at is not None else "failed",
            0.25,
            error=error,
            retry_at=retry_at,
            now=1_700_000_000.0,
        )
    [record] = caplog.records
    return record


def test_a_retried_attempt_is_a_warning_saying_when(caplog: pytest.LogCaptureFixture) -> None:
    record = failed_attempt(caplog, retry_at=1_700_000_001.5)
    assert record.levelno == logging.WARNING
    assert record.__dict__["retry_at"] == "2023-11-14T22:13:21.500+00:00"
    assert "retry at 2023-11-14T22:13:21.500+00:00 (in 1.500s)" in record.getMessage()
    assert record.pathname.endswith("test_run_logs.py")  # the caller, not logs.py


def test_a_final_failure_is_an_error_whose_text_ends_with_the_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = failed_attempt(caplog, retry_at=None)
    assert record.levelno == logging.ERROR
    text = logging.Formatter(TEXT_FORMAT).format(record)
    head, trace = text.split("\n", 1)
    assert head.endswith(
        "ERROR workpool.worker run r1 failed for good on attempt 2: ValueError: declined "
        "(workflow=charge queue=default outcome=failed duration=0.250s)"
    )
    assert trace == TRACEBACK.rstrip("\n")


def test_a_failure_is_one_json_line_with_its_error(caplog: pytest.LogCaptureFixture) -> None:
    record = failed_attempt(caplog, retry_at=1_700_000_001.5)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    document = json.loads(line)
    assert {key: document[key] for key in ("level", "event", "outcome", "run_id", "attempt")} == {
        "level": "WARNING",
        "event": "completed",
        "outcome": "retrying",
        "run_id": "r1",
        "attempt": 2,
    }
    assert (document["error_type"], document["error_message"]) == ("ValueError", "declined")
    assert document["error_traceback"] == TRACEBACK
    assert document["retry_at"] == "2023-11-14T22:13:21.500+00:00"
    assert "Traceback" not in document["message"]


def test_an_unreadable_stored_error_is_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="workpool"):
        log_completed(logging.getLogger("workpool.worker"), RUN, "failed", 0.1, error="oops")
    [record] = caplog.records
    assert (record.levelno, record.__dict__["error_message"]) == (logging.ERROR, "oops")


def test_run_logger_adds_the_run_and_keeps_the_callers_extra(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = RunLogger("r1", "charge", "payments", 3)
    with caplog.at_level(logging.INFO, logger="workpool"):
        logger.info("charged %d cents", 42, extra={"customer": "ada", "run_id": "spoofed"})
    [record] = caplog.records
    assert record.name == "workpool.run.charge"
    assert record.getMessage() == "run r1: charged 42 cents"
    assert {key: record.__dict__[key] for key in (*RUN, "customer")} == {
        "run_id": "r1",
        "workflow": "charge",
        "queue": "payments",
        "attempt": 3,
        "customer": "ada",
    }
    document = json.loads(JsonFormatter().format(record))
    assert (document["run_id"], document["workflow"], document["attempt"]) == ("r1", "charge", 3)
