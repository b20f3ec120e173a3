"""Cron triggers of a workflow: expressions evaluated in a time zone, DST included."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from pydantic_core import to_jsonable_python

from workpool.errors import ConfigurationError

Overlap = Literal["skip", "buffer_one", "allow_all"]
"""What a trigger does at a tick while its own previous run is still active (not ended):
``"skip"`` the tick, start at most one more run (``"buffer_one"``: it waits until it may
start), or start a run at every tick (``"allow_all"``)."""

OVERLAPS: tuple[Overlap, ...] = get_args(Overlap)


@dataclass(frozen=True, slots=True)
class Cron:
    """Start a run of the workflow at every tick of ``expression`` in ``timezone``.

    ``expression`` has 5 fields (minute hour day month weekday), or 6 with seconds last.
    ``input`` is the run's input, validated when the workflow is defined; it may be any
    value the workflow accepts (a dict, a list, a model...). A trigger hashes by its
    expression and time zone only, so one with a dict or list input is hashable.

    Daylight saving time: a tick in the hour skipped in spring fires at the moment the
    clocks jump (02:30 becomes 03:00 in Europe/Paris); in autumn, a tick at a fixed hour
    fires once, at the first of the repeated wall times, while an expression whose hour
    field has a ``*`` (hourly, every 15 minutes...) fires in both repeated hours.

    Overlap: ``overlap`` says what a tick does while this trigger's own previous run is
    still active (queued, waiting at its workflow's ``max_concurrency``, running,
    retrying or suspended): ``"skip"`` (the default) skips the tick and records it;
    ``"buffer_one"`` starts one more run, which waits as the workflow's
    ``max_concurrency`` makes it wait, and skips while that one has not started;
    ``"allow_all"`` starts a run at every tick. Runs of the workflow's other triggers,
    or started otherwise, never make a tick skip: a started tick waits at the
    workflow's ``max_concurrency`` like any run.

    ``name`` identifies the trigger (in its runs' idempotency keys, skipped ticks and
    logs); without one, its id is ``"<expression> <timezone>"``, e.g. ``"0 3 * * * UTC"``.
    """

    expression: str
    timezone: str = "UTC"
    input: Any = field(default=None, hash=False)  # compared, not hashed: a dict is fine
    name: str | None = field(default=None, kw_only=True)
    overlap: Overlap = field(default="skip", kw_only=True)

    def __post_init__(self) -> None:
        if self.overlap not in OVERLAPS:
            raise ConfigurationError(
                f"invalid overlap {self.overlap!r} for cron {self.expression!r}: use one of "
                + ", ".join(repr(choice) for choice in OVERLAPS)
            )
        if self.name is not None and (type(self.name) is not str or not self.name.strip()):
            raise ConfigurationError(
                f"invalid name {self.name!r} for cron {self.expression!r}: give a non-empty "
                "string, or no name (the trigger is then named by its expression and time zone)"
            )
        if not croniter.is_valid(self.expression) or len(self.expression.split()) > 6:
            raise ConfigurationError(
                f"invalid cron expression {self.expression!r}: use 5 fields (minute hour "
                "day month weekday), e.g. '*/5 * * * *', or 6 with seconds last"
            )
        check_steps(self.expression)
        self.zone()
        try:
            self.next_after(time.time())
        except CroniterBadDateError:
            raise ConfigurationError(
                f"cron expression {self.expression!r} never fires (no such date, e.g. "
                "February 30th): check its day and month fields"
            ) from None

    def zone(self) -> ZoneInfo:
        """The time zone, or ConfigurationError naming it."""
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise ConfigurationError(
                f"unknown time zone {self.timezone!r} for cron {self.expression!r}: use an "
                "IANA name such as 'UTC' or 'Europe/Paris'"
            ) from None

    def next_after(self, moment: float) -> float:
        """The first tick strictly after ``moment`` (seconds since the epoch)."""
        zone = self.zone()
        ticks = croniter(self.expression, datetime.fromtimestamp(moment, zone))
        tick: datetime = ticks.get_next(datetime)
        while self._fixed_hour() and _second_of_repeated_wall_time(tick, zone):
            tick = ticks.get_next(datetime)
        return tick.timestamp()

    @property
    def default_id(self) -> str:
        """The trigger's id unless it is named: its expression and time zone."""
        return f"{self.expression} {self.timezone}"

    def to_json(self, trigger_id: str) -> dict[str, Any]:
        """The registry form (for reading; the runs' input is encoded by the workflow),
        with the id that ``trigger_ids`` gave it."""
        return {
            "id": trigger_id,
            "expression": self.expression,
            "timezone": self.timezone,
            "overlap": self.overlap,
            "input": to_jsonable_python(self.input),
        }

    def _fixed_hour(self) -> bool:
        return "*" not in self.expression.split()[1]


def trigger_ids(triggers: Sequence[Cron], workflow: str) -> tuple[str, ...]:
    """Each trigger's id within its workflow: its name, else its expression and time
    zone, with " #2", " #3"... after the first when several unnamed triggers share both
    (so their ids hold while their order does). ConfigurationError for a name used twice.
    """
    ids: list[str] = []
    for trigger in triggers:
        if trigger.name is not None:
            if trigger.name in ids:
                raise ConfigurationError(
                    f"workflow {workflow!r}: two cron triggers are named {trigger.name!r}; "
                    "give each trigger of a workflow its own name"
                )
            ids.append(trigger.name)
            continue
        trigger_id, copy = trigger.default_id, 1
        while trigger_id in ids:
            copy += 1
            trigger_id = f"{trigger.default_id} #{copy}"
        ids.append(trigger_id)
    return tuple(ids)


def _second_of_repeated_wall_time(tick: datetime, zone: ZoneInfo) -> bool:
    """Whether ``tick`` is the later of two moments with the same local time (autumn)."""
    wall = tick.replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0).utcoffset()
    second = wall.replace(tzinfo=zone, fold=1).utcoffset()
    return first != second and tick.utcoffset() == second


FIELDS = (
    ("minute", 59),
    ("hour", 23),
    ("day of month", 31),
    ("month", 12),
    ("day of week", 7),
    ("second", 59),
)
"""Each field of an expression, in order, and its largest value: no step may exceed it."""


def check_steps(expression: str) -> None:
    """ConfigurationError for a step (``*/N``, ``a-b/N``) outside 1 to its field's
    largest value: croniter takes ``*/60`` or ``*/99999999999999999999`` for a minute
    and fires once an hour, not what was written."""
    for text, (name, largest) in zip(expression.split(), FIELDS, strict=False):
        for item in text.split(","):
            step = item.partition("/")[2]
            whole = step.isascii() and step.isdigit() and len(step) <= 2
            if step and not (whole and 1 <= int(step) <= largest):
                raise ConfigurationError(
                    f"cron expression {expression!r}: the {name} step {step[:20]!r} must be a "
                    f"whole number from 1 to {largest} (every {name}: '*')"
                )
