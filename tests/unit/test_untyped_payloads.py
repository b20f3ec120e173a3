"""Values without a type: stored only if JSON holds them unchanged (issue 12)."""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
import uuid
from collections import OrderedDict, namedtuple
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from workpool import PayloadError
from workpool.serialization import to_json


class Order(BaseModel):
    order_id: str


@dataclasses.dataclass
class Point:
    x: int


class Color(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    SMALL = 1


Pair = namedtuple("Pair", "left right")  # a plain namedtuple on purpose


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**70),
        1.5,
        -0.0,
        1e308,
        "",
        "naïve ☃ 🎉",
        [],
        {},
        [1, "two", 3.0, None, False, [[]], {"k": {}}],
        {"items": [1, 2, {"nested": [True, None]}], "": "empty key is a key"},
        OrderedDict(b=1, a=2),  # a dict subclass comes back equal
    ],
)
def test_values_that_round_trip_unchanged_are_stored(value: Any) -> None:
    text = to_json(value, what="input of workflow 'charge'")
    assert json.loads(text) == value
    assert type(json.loads(text)) is type(value) or isinstance(value, dict)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"items": [1, 2, {3}]}, r"\$\.items\[2\] is a set; JSON has no sets: pass a list"),
        (frozenset({1}), r"\$ is a frozenset; JSON has no sets: pass a list"),
        ((1, 2), r"\$ is a tuple; JSON has no tuples, it would come back as a list: pass a list"),
        (Pair(1, 2), r"\$ is a tuple \(Pair\)"),
        ({"a": {1: "x"}}, r"\$\.a has the key 1 \(int\); JSON object keys are strings"),
        ({None: 1}, r"\$ has the key None \(NoneType\)"),
        ({"price": Decimal("1.10")}, r"\$\.price is a Decimal; .*str\(value\)"),
        ([datetime.now(UTC)], r"\$\[0\] is a datetime; .*isoformat\(\)"),
        (date(2026, 1, 1), r"\$ is a date; "),
        (timedelta(seconds=1), r"\$ is a timedelta; .*total_seconds\(\)"),
        (uuid.uuid4(), r"\$ is a UUID; .*str\(value\)"),
        (b"raw", r"\$ is bytes; JSON has no bytes"),
        ({"x": [float("nan")]}, r"\$\.x\[0\] is nan; JSON has no NaN or infinity"),
        (float("-inf"), r"\$ is -inf; JSON has no NaN or infinity"),
        (Color.RED, r"\$ is the enum member Color\.RED; .*\.value"),
        ([Size.SMALL], r"\$\[0\] is the enum member Size\.SMALL"),
        (Order(order_id="A-1"), r"\$ is a pydantic model Order; .*model_dump\(mode='json'\)"),
        ({"at": Point(1)}, r"\$\.at is a dataclass Point; .*dataclasses\.asdict"),
        ({"a b": [{"c": {1}}]}, r'\$\["a b"\]\[0\]\.c is a set'),
        (threading.Lock(), r"\$ of type lock cannot be stored as JSON"),
    ],
)
def test_values_json_would_change_are_refused_with_their_path(value: Any, message: str) -> None:
    with pytest.raises(PayloadError, match=r"^input of workflow 'charge': " + message):
        to_json(value, what="input of workflow 'charge'")


def test_the_exact_message_for_a_set() -> None:
    with pytest.raises(PayloadError) as raised:
        to_json({"items": [1, 2, {3}]}, what="input of workflow 'charge'")
    assert str(raised.value) == (
        "input of workflow 'charge': $.items[2] is a set; JSON has no sets: pass a list"
    )


def test_a_hint_to_annotate_is_added_where_an_annotation_would_help() -> None:
    with pytest.raises(PayloadError, match=r"pass a list \(or annotate the input\)$"):
        to_json({1, 2}, what="input of workflow 'tag'", annotate="annotate the input")


def test_a_value_that_refers_to_itself_is_refused() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(PayloadError, match="refers to itself"):
        to_json(loop, what="result of step 'x'")


def test_a_deeply_nested_value_is_refused() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(PayloadError, match="nested too deeply"):
        to_json(deep, what="output of workflow 'x'")


def test_typed_values_are_serialized_by_their_type_as_before() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(dict[str, Any])
    text = to_json({"when": datetime(2026, 1, 1, tzinfo=UTC)}, what="input", adapter=adapter)
    assert json.loads(text) == {"when": "2026-01-01T00:00:00Z"}
    assert json.loads(to_json({3, 1}, what="output", adapter=TypeAdapter(set[int]))) in (
        [1, 3],
        [3, 1],
    )
