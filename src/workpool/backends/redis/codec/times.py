"""Times and durations as the scripts take them: exact decimal strings, whole milliseconds.

Times cross as decimal strings (``repr`` of a float) so nothing rounds them.
"""

from __future__ import annotations

import math


def seconds(value: float) -> str:
    """A time or duration as the exact decimal string the scripts expect."""
    return repr(float(value))


def milliseconds(duration: float) -> str:
    """A duration as the whole milliseconds of a key's real TTL (PX): rounded up, at
    least 1 (Redis refuses a zero or negative TTL)."""
    return str(max(1, math.ceil(duration * 1000)))
