"""How figures are written for people (the table, the chart's labels)."""

from __future__ import annotations

import math


def number(value: float) -> str:
    """A figure rounded for reading: thousands separated, about 3 significant digits."""
    if math.isnan(value):
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"
