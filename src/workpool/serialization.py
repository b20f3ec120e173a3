"""JSON at the edges: validate and encode inputs, encode outputs, decode stored text.

Nothing is ever pickled. A type annotation, when present, drives validation and
encoding (pydantic: models, datetimes, sets... come back as their type). A value
without one (an untyped workflow's input or output, a ``context``, a step's result, the
input of a workflow known by name only) is stored only if JSON holds it unchanged:
dicts with str keys, lists, str, int, finite floats, bool and None. Anything JSON would
change (a set or tuple into a list, an int key into a str, a datetime, Decimal, model
or dataclass into a str or dict) is a PayloadError giving the path of the value.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import traceback
import typing
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import Any
from uuid import UUID

from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from workpool.errors import ConfigurationError, PayloadError

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
"""Largest input, output or context, in bytes of JSON, unless the pool sets another."""

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""Built once: ``json.dumps`` with options builds a new encoder per call (~3 us)."""


def to_json(
    value: Any,
    *,
    what: str,
    adapter: TypeAdapter[Any] | None = None,
    annotate: str | None = None,
) -> str:
    """Encode ``value`` as compact JSON text, by its ``adapter`` if it has a type.

    Without one, ``value`` must be JSON as it is (see the module docstring); otherwise
    PayloadError says what and where, e.g. ``input of workflow 'charge': $.items[2] is a
    set; JSON has no sets: pass a list``, followed by ``(or <annotate>)`` when a type
    annotation would have made the value storable.
    """
    try:
        if adapter is not None:
            text = _ENCODER.encode(adapter.dump_python(value, mode="json"))
        else:
            check_plain(value, what=what, annotate=annotate)
            text = _ENCODER.encode(value)
    except (PydanticSerializationError, TypeError, ValueError) as error:
        raise PayloadError(
            f"{what} of type {type(value).__name__} cannot be stored as JSON ({error}); "
            "pass JSON-compatible values (dict, list, str, numbers, pydantic models)"
        ) from error
    except RecursionError:
        raise PayloadError(
            f"{what} is nested too deeply or refers to itself: pass a tree of plain values"
        ) from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise PayloadError(
                f"{what} holds a lone surrogate ({error.object[error.start]!r}), which UTF-8 "
                "cannot store: pass valid Unicode text (decode bytes with errors='replace')"
            ) from None
    return text


def check_plain(value: Any, *, what: str, annotate: str | None = None) -> None:
    """PayloadError unless JSON holds ``value`` unchanged (RecursionError if it is nested
    deeper than Python's recursion limit, or refers to itself)."""
    try:
        _check(value)
    except _RefusedError as refused:
        path = "$" + "".join(reversed(refused.path))
        hint = f" (or {annotate})" if annotate is not None and refused.typed_fix else ""
        raise PayloadError(f"{what}: {path} {refused.reason}{hint}") from None


class _RefusedError(Exception):
    """A value JSON would change; ``path`` is collected innermost first as it unwinds."""

    def __init__(self, reason: str, *, typed_fix: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.typed_fix = typed_fix
        """Whether an annotation of the value's type would store it."""
        self.path: list[str] = []


_CHANGED_BY_JSON: tuple[tuple[type[Any] | tuple[type[Any], ...], str, str], ...] = (
    (set, "a set", "JSON has no sets: pass a list"),
    (frozenset, "a frozenset", "JSON has no sets: pass a list"),
    (tuple, "a tuple", "JSON has no tuples, it would come back as a list: pass a list"),
    (
        Decimal,
        "a Decimal",
        "JSON has no decimals, it would come back as a str or float: "
        "pass str(value) or float(value)",
    ),
    (
        datetime,
        "a datetime",
        "JSON has no dates, it would come back as a str: pass value.isoformat()",
    ),
    (date, "a date", "JSON has no dates, it would come back as a str: pass value.isoformat()"),
    (time, "a time", "JSON has no times, it would come back as a str: pass value.isoformat()"),
    (
        timedelta,
        "a timedelta",
        "JSON has no durations, it would come back as a str: pass value.total_seconds()",
    ),
    (UUID, "a UUID", "it would come back as a str: pass str(value)"),
    (
        (bytes, bytearray, memoryview),
        "bytes",
        "JSON has no bytes: pass text (decode the bytes, or base64-encode them)",
    ),
    (PurePath, "a path", "it would come back as a str: pass str(value)"),
    (
        BaseModel,
        "a pydantic model {name}",
        "it would come back as a dict: pass value.model_dump(mode='json')",
    ),
)
"""Values JSON changes: (their types, what to call them, why and what to pass instead)."""


def _check(value: Any) -> None:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return
    if kind is float:
        _check_float(value)
    elif kind is list:
        _check_list(value)
    elif kind is dict:
        _check_dict(value)
    else:
        _check_other(value)


def _check_float(value: float) -> None:
    if not math.isfinite(value):
        raise _RefusedError(
            f"is {value!r}; JSON has no NaN or infinity: pass a finite number or None",
            typed_fix=False,
        )


def _check_list(items: list[Any]) -> None:
    for index, item in enumerate(items):
        try:
            _check(item)
        except _RefusedError as refused:
            refused.path.append(f"[{index}]")
            raise


def _check_dict(mapping: dict[Any, Any]) -> None:
    for key, item in mapping.items():
        if not isinstance(key, str) or isinstance(key, Enum):
            raise _RefusedError(
                f"has the key {key!r} ({type(key).__name__}); JSON object keys are strings: "
                "use str keys"
            )
        try:
            _check(item)
        except _RefusedError as refused:
            refused.path.append(f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]")
            raise


def _check_other(value: Any) -> None:
    """Subclasses of the plain types (a dict subclass comes back equal), or a refusal."""
    if isinstance(value, Enum):
        member = f"{type(value).__name__}.{value.name}"
        raise _RefusedError(
            f"is the enum member {member}; it would come back as its value: pass {member}.value"
        )
    if isinstance(value, str | int):
        return
    if isinstance(value, float):
        _check_float(value)
    elif isinstance(value, list):
        _check_list(value)
    elif isinstance(value, dict):
        _check_dict(value)
    else:
        raise _changed_by_json(value)


def _changed_by_json(value: Any) -> _RefusedError:
    """Why ``value`` is refused; an annotation of its type is a fix unless it is unknown."""
    name = type(value).__name__
    for types, noun, reason in _CHANGED_BY_JSON:
        if isinstance(value, types):
            exact = types if isinstance(types, tuple) else (types,)
            if "{name}" in noun:
                noun = noun.format(name=name)
            elif type(value) not in exact:
                noun = f"{noun} ({name})"
            return _RefusedError(f"is {noun}; {reason}")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _RefusedError(
            f"is a dataclass {name}; it would come back as a dict: pass dataclasses.asdict(value)"
        )
    return _RefusedError(
        f"of type {name} cannot be stored as JSON: pass JSON values (dict with str keys, "
        "list, str, int, finite float, bool, None)",
        typed_fix=False,
    )


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


def handler_adapters(
    handler: Callable[..., Any], name: str
) -> tuple[TypeAdapter[Any] | None, TypeAdapter[Any] | None]:
    """The input and output adapters of a handler ``(ctx, input) -> output`` from its
    annotations (None where it has none)."""
    parameters = list(inspect.signature(handler).parameters.values())
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != 2:
        raise ConfigurationError(
            f"workflow {name!r}: the handler must take exactly two arguments (ctx, input), "
            f"it takes {len(positional)}"
        )
    try:
        hints = typing.get_type_hints(handler)
    except NameError as error:
        raise ConfigurationError(
            f"workflow {name!r}: cannot resolve the handler's type annotations ({error})"
        ) from error
    input_hint = hints.get(positional[1].name)
    output_hint = hints.get("return")
    return _adapter(input_hint), _adapter(output_hint)


def _adapter(hint: Any) -> TypeAdapter[Any] | None:
    if hint is None or hint is Any or hint is object or hint is type(None):
        return None
    return TypeAdapter(hint)
