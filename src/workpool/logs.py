"""Logging: the level of workpool's loggers, run events, and a JSON line format.

Every logger is under ``workpool`` (``workpool.client``, ``workpool.worker``,
``workpool.run.<workflow>`` ...) and uses the standard ``logging`` module. Run events
(enqueued, started, completed) are INFO records whose ``extra`` fields (``event``,
``run_id``, ``workflow``, ``queue`` and per event ``lag``, ``attempt``, ``duration``,
``outcome``) a log tool can read: ``JsonFormatter`` writes each record as one JSON line.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from typing import Any

LEVEL_VARIABLE = "WORKPOOL_LOG_LEVEL"
DEFAULT_LEVEL = "INFO"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
EVENT_FIELDS = ("event", "run_id", "workflow", "queue", "attempt", "lag", "duration", "outcome")

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


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and run event fields."""

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
        if record.exc_info:
            document["error"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


def configure_handler(log_format: str) -> None:
    """Log to stderr as ``text`` or ``json`` lines (the worker command's root handler)."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)  # other libraries; workpool's loggers have their own
