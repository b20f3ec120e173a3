"""Logging: the level of workpool's loggers, run events, and a JSON line format.

Every logger is under ``workpool`` (``workpool.client``, ``workpool.worker``,
``workpool.run.<workflow>`` ...) and uses the standard ``logging`` module. Run events
(enqueued, started, completed) are records whose ``extra`` fields (``event``,
``run_id``, ``workflow``, ``queue`` and per event ``lag``, ``attempt``, ``duration``,
``outcome``, and for a failed attempt ``retry_at``, ``error_type``, ``error_message``,
``error_traceback``) a log tool can read: ``JsonFormatter`` writes each record as one
JSON line. Events are INFO, but a failed attempt is a WARNING (retried) or an ERROR
(failed for good). ``ctx.logger`` is a ``RunLogger``: its records carry their run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

from workpool.tracing import current_ids

LEVEL_VARIABLE = "WORKPOOL_LOG_LEVEL"
DEFAULT_LEVEL = "INFO"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""The worker command's ``text`` lines (a traceback follows on the next lines)."""
EVENT_FIELDS = (
    "event",
    "run_id",
    "workflow",
    "queue",
    "attempt",
    "lag",
    "duration",
    "outcome",
    "retry_at",
    "error_type",
    "error_message",
    "error_traceback",
)
OUTCOME_LEVELS = {"retrying": logging.WARNING, "failed": logging.ERROR}
"""The level of a ``completed`` event by outcome; the others are INFO."""

logger = logging.getLogger("workpool")


def resolve_level(explicit: str | None = None) -> str:
    """The level to use: ``explicit``, else ``$WORKPOOL_LOG_LEVEL``, else INFO.

    An unknown value logs a warning naming it and the valid ones, and gives INFO.
    """
    chosen = explicit if explicit is not None else os.environ.get(LEVEL_VARIABLE)
    if chosen is None:
        return DEFAULT_LEVEL
    if chosen.strip().upper() in LEVELS:
        return chosen.strip().upper()
    source = "log_level" if explicit is not None else f"${LEVEL_VARIABLE}"
    logger.warning(
        "%s=%r is not a log level (use one of %s); using %s",
        source,
        chosen,
        ", ".join(LEVELS),
        DEFAULT_LEVEL,
    )
    return DEFAULT_LEVEL


def apply_level(explicit: str | None = None) -> None:
    """Set the level of workpool's loggers (see ``resolve_level``)."""
    logger.setLevel(resolve_level(explicit))


def log_completed(
    target: logging.Logger,
    run: Mapping[str, Any],
    outcome: str,
    duration: float,
    *,
    error: str | None = None,
    retry_at: float | None = None,
    now: float | None = None,
) -> None:
    """Log the ``completed`` event of one attempt: one record, at its outcome's level.

    ``run`` holds the ``run_id``, ``workflow``, ``queue`` and ``attempt``; ``error`` is
    the attempt's stored error (JSON ``{"type", "message", "traceback"}``), written as
    the ``error_*`` fields; ``retry_at`` (epoch seconds) when the next attempt may
    start. The traceback is the record's ``exc_text``, so every formatter prints it
    after the line as it would an exception's (the exception object itself is gone).
    """
    level = OUTCOME_LEVELS.get(outcome, logging.INFO)
    if not target.isEnabledFor(level):
        return
    fields = {"event": "completed", **run, "duration": round(duration, 6), "outcome": outcome}
    message = "run %s completed: workflow=%s attempt=%d outcome=%s duration=%.3fs"
    args: tuple[Any, ...] = (run["run_id"], run["workflow"], run["attempt"], outcome, duration)
    traceback = None
    if level > logging.INFO:
        kind, text, traceback = _stored_error(error)
        fields.update(error_type=kind, error_message=text, error_traceback=traceback)
        details = (kind, text, run["workflow"], run["queue"], outcome, duration)
        message = "%s: %s (workflow=%s queue=%s outcome=%s duration=%.3fs)"
        if retry_at is None:
            message = "run %s failed for good on attempt %d: " + message
            args = (run["run_id"], run["attempt"], *details)
        else:
            fields["retry_at"] = when = _iso(retry_at)
            wait = f" (in {max(0.0, retry_at - now):.3f}s)" if now is not None else ""
            message = "run %s attempt %d failed, retry at %s%s: " + message
            args = (run["run_id"], run["attempt"], when, wait, *details)
    path, line, function, _ = target.findCaller(stacklevel=2)
    record = target.makeRecord(
        target.name, level, path, line, message, args, None, function, fields
    )
    if traceback:
        record.exc_text = traceback.rstrip("\n")
    target.handle(record)


def _stored_error(stored: str | None) -> tuple[str, str, str | None]:
    """Type, message and traceback of a stored error (its text as the message if it is
    not the JSON workpool writes)."""
    try:
        error = json.loads(stored or "")
        traceback = error.get("traceback")
        return str(error["type"]), str(error["message"]), traceback and str(traceback)
    except (ValueError, TypeError, KeyError, AttributeError):
        return "UnknownError", stored or "", None


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=UTC).isoformat(timespec="milliseconds")


class RunLogger(logging.LoggerAdapter[logging.Logger]):
    """``ctx.logger``: the workflow's logger (``workpool.run.<workflow>``) whose records
    carry their run's ``run_id``, ``workflow``, ``queue`` and ``attempt`` (JSON lines
    write them; a caller's own ``extra`` is kept) and whose messages start with
    ``run <id>: `` so text lines name their run."""

    def __init__(self, run_id: str, workflow: str, queue: str, attempt: int) -> None:
        fields = {"run_id": run_id, "workflow": workflow, "queue": queue, "attempt": attempt}
        super().__init__(logging.getLogger(f"workpool.run.{workflow}"), fields)
        self._prefix = f"run {run_id}: "

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(kwargs.get("extra") or {}), **(self.extra or {})}
        return f"{self._prefix}{msg}", kwargs


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, run event fields and,
    while an OpenTelemetry span is active where it is logged, ``trace_id`` and
    ``span_id`` (hex, as trace viewers show them)."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in EVENT_FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                document[field] = value
        ids = current_ids()
        if ids is not None:
            document["trace_id"], document["span_id"] = ids
        if record.exc_info:
            document["error"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


def configure_handler(log_format: str) -> None:
    """Log to stderr as ``text`` or ``json`` lines (the worker command's root handler)."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)  # other libraries; workpool's loggers have their own
