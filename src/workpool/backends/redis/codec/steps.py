"""Steps: a step is stored as one JSON object whose times are decimal strings (Lua's
cjson would round numbers when it rewrites a step) and whose JSON texts are strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast, get_args

from workpool.backends.base import StepKind, StepRecord, StepStatus
from workpool.backends.redis.codec.times import seconds
from workpool.errors import CorruptRecordError

STEP_KINDS: frozenset[str] = frozenset(get_args(StepKind))
STEP_STATUSES: frozenset[str] = frozenset(get_args(StepStatus))


def encode_step(step: StepRecord) -> str:
    """The JSON text a step is stored as (its name is the field it is stored under)."""
    item: dict[str, Any] = {
        "kind": step.kind,
        "status": step.status,
        "attempts": step.attempts,
        "started_at": seconds(step.started_at),
    }
    if step.position is not None:
        item["position"] = step.position
    for name in ("output", "error", "child_run_id", "args_hash"):
        if getattr(step, name) is not None:
            item[name] = getattr(step, name)
    for name in ("wake_at", "finished_at"):
        if getattr(step, name) is not None:
            item[name] = seconds(getattr(step, name))
    return json.dumps(item, ensure_ascii=False)


class _StepFields:
    """Reads one stored step, naming the run and step in every CorruptRecordError."""

    def __init__(self, run_id: str, name: str, text: str) -> None:
        self._where = f"run {run_id}, step {name!r}"
        try:
            fields = json.loads(text)
        except ValueError:
            raise self.corrupt(f"not JSON: {text!r}") from None
        if not isinstance(fields, dict):
            raise self.corrupt(f"not a JSON object: {text!r}")
        self._fields: dict[str, Any] = fields

    def corrupt(self, problem: str) -> CorruptRecordError:
        return CorruptRecordError(f"{self._where}: stored step is {problem}")

    def choice(self, name: str, allowed: frozenset[str]) -> str:
        value = self._fields.get(name)
        if not isinstance(value, str) or value not in allowed:
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def optional_integer(self, name: str) -> int | None:
        return None if self._fields.get(name) is None else self.integer(name)

    def integer(self, name: str) -> int:
        value = self._fields.get(name)
        # cjson writes back whole numbers it decoded as integers, but accept 2.0 too.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._fields.get(name)
        if value is not None and not isinstance(value, str):
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def optional_time(self, name: str) -> float | None:
        text = self.optional_text(name)
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise self.corrupt(f"invalid: {name} {text!r} is not a number") from None

    def time(self, name: str) -> float:
        value = self.optional_time(name)
        if value is None:
            raise self.corrupt(f"missing {name}")
        return value


def decode_step(run_id: str, name: str, text: str) -> StepRecord:
    """A StepRecord from its stored JSON text, or CorruptRecordError."""
    read = _StepFields(run_id, name, text)
    return StepRecord(
        name=name,
        kind=cast(StepKind, read.choice("kind", STEP_KINDS)),
        status=cast(StepStatus, read.choice("status", STEP_STATUSES)),
        attempts=read.integer("attempts"),
        started_at=read.time("started_at"),
        output=read.optional_text("output"),
        error=read.optional_text("error"),
        child_run_id=read.optional_text("child_run_id"),
        wake_at=read.optional_time("wake_at"),
        finished_at=read.optional_time("finished_at"),
        position=read.optional_integer("position"),
        args_hash=read.optional_text("args_hash"),
    )


def decode_steps(run_id: str, stored: Mapping[str, str]) -> list[StepRecord]:
    """Every step of a steps hash (HGETALL), oldest ``started_at`` first, then by name."""
    steps = [decode_step(run_id, name, text) for name, text in stored.items()]
    steps.sort(key=lambda step: (step.started_at, step.name))
    return steps
