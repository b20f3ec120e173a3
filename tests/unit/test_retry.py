"""Retry arithmetic and RetryPolicy validation."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from workpool import ConfigurationError, RetryPolicy
from workpool.retry import backoff_seconds, should_retry


def test_max_attempts_counts_every_attempt() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert [should_retry(policy, attempt) for attempt in (1, 2, 3)] == [True, True, False]


@pytest.mark.parametrize(("attempt", "nominal"), [(1, 0.25), (2, 0.5), (3, 1.0), (4, 2.0)])
def test_backoff_grows_by_base_with_jitter_in_half_to_one_and_a_half(
    attempt: int, nominal: float
) -> None:
    policy = RetryPolicy()
    rng = random.Random(7)
    waits = [backoff_seconds(policy, attempt, rng) for _ in range(2000)]
    assert min(waits) >= nominal * 0.5
    assert max(waits) <= nominal * 1.5
    assert min(waits) < nominal * 0.6
    assert max(waits) > nominal * 1.4


def test_policy_round_trips_through_json() -> None:
    policy = RetryPolicy(max_attempts=4, initial_backoff=timedelta(seconds=1.5), base=3)
    assert RetryPolicy.from_json(policy.to_json()) == policy


@pytest.mark.parametrize(
    "arguments",
    [
        {"max_attempts": 0},
        {"initial_backoff": timedelta(seconds=-1)},
        {"base": 0.5},
    ],
)
def test_invalid_policies_are_refused(arguments: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**arguments)  # type: ignore[arg-type]
