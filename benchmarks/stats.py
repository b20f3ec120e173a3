"""Figures: bars, metric specs, repetition values, medians, ranges and percentiles."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class Bar:
    """A target a figure must meet: ``>= value`` (higher is better) or ``<= value``."""

    op: Literal[">=", "<="]
    value: float

    def met(self, figure: float) -> bool:
        """Whether ``figure`` meets the target."""
        return figure >= self.value if self.op == ">=" else figure <= self.value

    def __str__(self) -> str:
        return f"{self.op} {self.value:,.6g}"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One figure a workload reports: its name, unit and the bar per backend, if any."""

    name: str
    unit: str
    bars: Mapping[str, Bar] = field(default_factory=dict)
    only: str | None = None
    """The one backend this metric exists on, if not every backend of its workload."""


@dataclass(frozen=True, slots=True)
class Measured:
    """What one repetition of a workload on one backend produced."""

    values: Mapping[str, float]
    """Metric name -> value."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Anything else worth keeping in the JSON (breakdowns, achieved rates)."""


@dataclass(slots=True)
class Figure:
    """A metric of a workload on a backend, over every repetition."""

    workload: str
    title: str
    backend: str
    spec: MetricSpec
    values: list[float] = field(default_factory=list)
    failed: bool = False
    """A repetition of this workload lost or failed runs, or crashed."""

    @property
    def bar(self) -> Bar | None:
        """The target for this backend, if any."""
        return self.spec.bars.get(self.backend)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else math.nan

    @property
    def low(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def high(self) -> float:
        return max(self.values) if self.values else math.nan

    @property
    def passed(self) -> bool | None:
        """True/False against the bar; None without a bar; False when a repetition failed."""
        if self.failed or not self.values:
            return False
        bar = self.bar
        return None if bar is None else bar.met(self.median)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100), linear between closest ranks (as numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    below = math.floor(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)
