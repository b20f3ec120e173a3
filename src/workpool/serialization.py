"""JSON at the edges: validate and encode inputs, encode outputs, decode stored text.

Nothing is ever pickled. Values are turned into JSON by pydantic: a type annotation,
when present, drives validation and encoding; otherwise any value pydantic can make
JSON of (dicts, lists, models, dataclasses, datetimes...) is accepted.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError, to_jsonable_python

from workpool.errors import PayloadError

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
"""Largest input, output or context, in bytes of JSON, unless the pool sets another."""

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""Built once: ``json.dumps`` with options builds a new encoder per call (~3 us)."""


def to_json(value: Any, *, what: str, adapter: TypeAdapter[Any] | None = None) -> str:
    """Encode ``value`` as compact JSON text; PayloadError names the offending type."""
    try:
        if adapter is not None:
            plain = adapter.dump_python(value, mode="json")
        else:
            plain = to_jsonable_python(value)
        text = _ENCODER.encode(plain)
    except (PydanticSerializationError, TypeError, ValueError) as error:
        raise PayloadError(
            f"{what} of type {type(value).__name__} cannot be stored as JSON ({error}); "
            "pass JSON-compatible values (dict, list, str, numbers, pydantic models)"
        ) from error
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise PayloadError(
                f"{what} holds a lone surrogate ({error.object[error.start]!r}), which UTF-8 "
                "cannot store: pass valid Unicode text (decode bytes with errors='replace')"
            ) from None
    return text


def check_size(text: str, *, what: str, limit: int) -> str:
    """Return ``text`` unchanged if it fits ``limit`` bytes, else raise PayloadError."""
    if len(text) * 4 <= limit:  # no UTF-8 character takes more than 4 bytes
        return text
    size = len(text.encode("utf-8"))
    if size > limit:
        raise PayloadError(
            f"{what} is {size} bytes of JSON, over the limit of {limit} bytes; "
            "store large data elsewhere and pass a reference, or raise max_payload_bytes"
        )
    return text


def from_json(text: str | None) -> Any:
    """Decode stored JSON text (None stays None)."""
    return None if text is None else json.loads(text)


def error_json(error: BaseException, *, with_traceback: bool = True) -> str:
    """The stored form of an exception: ``{"type", "message", "traceback"}``."""
    trace = "".join(traceback.format_exception(error)) if with_traceback else None
    return json.dumps({"type": type(error).__name__, "message": str(error), "traceback": trace})
