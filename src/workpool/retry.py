"""Pure retry arithmetic: whether to try again, and when."""

from __future__ import annotations

import random

from workpool.options import RetryPolicy


def should_retry(policy: RetryPolicy, attempt: int) -> bool:
    """Whether a run that failed on attempt number ``attempt`` (from 1) gets another."""
    return attempt < policy.max_attempts


def backoff_seconds(policy: RetryPolicy, attempt: int, rng: random.Random) -> float:
    """Seconds to wait after failed attempt ``attempt`` (from 1), jitter included."""
    base_delay = policy.backoff.total_seconds() * policy.base ** (attempt - 1)
    return base_delay * rng.uniform(0.5, 1.5)
