"""Whole-number options are bounded at the API edge (issue 23, defect 7).

Every count or limit a user gives is a whole number (an int, never a bool, a float,
NaN or infinity) within a range, at most ``MAX_COUNT`` = 2**53 - 1, which SQLite and
Redis's Lua both hold exactly; anything else is a ConfigurationError naming the option
and the range, raised before anything is stored.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from workpool import ConfigurationError, Cron, RateLimit, RetryPolicy, Workpool
from workpool.validation import MAX_COUNT, check_count, parse_count, short_repr
from workpool.worker.metrics import WorkerMetrics

OUT_OF_RANGE = [2**53, 2**63, 2**64, 10**30, 10**5000, -(2**63), -1]
NOT_WHOLE = [math.nan, math.inf, -math.inf, 1.5, 2.0, True, False, "3", 3 + 0j]
BAD = [*OUT_OF_RANGE, *NOT_WHOLE]


def test_the_maximum_is_exact_in_a_double_and_a_sqlite_integer() -> None:
    assert MAX_COUNT == 2**53 - 1
    assert float(MAX_COUNT) == MAX_COUNT
    assert float(MAX_COUNT + 1) == float(MAX_COUNT + 2)
    assert MAX_COUNT < 2**63


@pytest.mark.parametrize("value", [0, 1, MAX_COUNT])
def test_a_count_in_range_passes(value: int) -> None:
    assert check_count(value, what="limit") == value


def test_an_int_enum_passes_as_its_plain_value() -> None:
    class Size(enum.IntEnum):
        SMALL = 3

    checked = check_count(Size.SMALL, what="limit")
    assert (checked, type(checked)) == (3, int)


@pytest.mark.parametrize("value", [*BAD, None], ids=short_repr)
def test_anything_else_is_refused_naming_the_option_and_the_range(value: object) -> None:
    with pytest.raises(ConfigurationError) as refused:
        check_count(value, what="max_widgets", minimum=0, none="no limit")
    message = str(refused.value)
    assert message.startswith(
        f"max_widgets must be a whole number from 0 to {MAX_COUNT}, or None (no limit), got "
    )
    assert len(message) < 200  # even for a 5000-digit number


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), (" 12 ", 12), (str(MAX_COUNT), MAX_COUNT), ("none", None), ("", None)],
)
def test_typed_counts_are_read(text: str, expected: int | None) -> None:
    assert parse_count(text, what="limit", none="no limit") == expected


@pytest.mark.parametrize(
    "text",
    [
        "99999999999999999999999",
        str(2**53),
        "9" * 5000,
        "-1",
        "1.5",
        "1e3",
        "nan",
        "inf",
        "²",
        "١٢",
        "1_000",
        "0x10",
        "true",
        "",
    ],
)
def test_typed_counts_out_of_range_or_not_whole_are_refused_in_one_line(text: str) -> None:
    with pytest.raises(
        ConfigurationError, match=f"limit must be a whole number from 1 to {MAX_COUNT}"
    ) as refused:
        parse_count(text, what="limit", minimum=1)
    assert "\n" not in str(refused.value)
    assert len(str(refused.value)) < 200


def define(pool: Workpool, **options: Any) -> None:
    @pool.workflow(**options)
    async def charge(ctx: Any, cents: int) -> int:
        return cents


OPTIONS: dict[str, tuple[Callable[[Workpool, Any], object], int]] = {
    "max_concurrency": (lambda pool, v: define(pool, max_concurrency=v), 1),
    "max_parallelism": (lambda pool, v: pool.queue("mail", max_parallelism=v), 0),
    "RetryPolicy.max_attempts": (
        lambda pool, v: RetryPolicy(max_attempts=v, initial_backoff=0),
        1,
    ),
    "RateLimit count": (lambda pool, v: RateLimit(v), 1),
    "concurrency": (lambda pool, v: pool.worker(concurrency=v), 1),
    "max_lease_losses": (lambda pool, v: pool.worker(max_lease_losses=v), 1),
    "max_runs": (lambda pool, v: pool.worker(max_runs=v), 1),
    "max_payload_bytes": (lambda pool, v: Workpool(pool.url, max_payload_bytes=v), 1),
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("value", BAD, ids=short_repr)
def test_every_count_option_is_bounded(tmp_path: Any, option: str, value: object) -> None:
    apply, minimum = OPTIONS[option]
    pool = Workpool(f"sqlite:///{tmp_path}/bounds.db", app="bounds")
    with pytest.raises(ConfigurationError, match=f"{option}.*from {minimum} to {MAX_COUNT}"):
        apply(pool, value)
    assert dict(pool.workflows) == {}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_every_count_option_takes_the_maximum(tmp_path: Any, option: str) -> None:
    apply, _ = OPTIONS[option]
    pool = Workpool(f"sqlite:///{tmp_path}/bounds.db", app="bounds")
    apply(pool, MAX_COUNT)


@pytest.mark.parametrize(
    "option",
    ["lease", "renew_every", "shutdown_grace", "housekeeping_every"],
)
@pytest.mark.parametrize("seconds", [math.nan, math.inf, 1e10, 3e11, timedelta(days=10**6)])
def test_worker_durations_are_finite_and_bounded(tmp_path: Any, option: str, seconds: Any) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/bounds.db", app="bounds")
    with pytest.raises(ConfigurationError, match=option):
        pool.worker(**{option: seconds})


@pytest.mark.parametrize(
    "expression",
    [
        "*/99999999999999999999 * * * *",
        "*/60 * * * *",
        "0 */24 * * *",
        "0 0 */32 * *",
        "0 0 1 */13 *",
        "0 0 * * */8",
        "0 0 31 2 *",
        "0 0 1 1 * 0 2099",
        "*/" + "9" * 40 + " * * * *",
    ],
)
def test_cron_fields_out_of_range_are_refused(expression: str) -> None:
    with pytest.raises(ConfigurationError, match="cron"):
        Cron(expression)


@pytest.mark.parametrize("port", [0, 65536, 2**63, True, 80.0, math.nan])
def test_a_metrics_port_is_a_tcp_port(port: Any) -> None:
    with pytest.raises(ConfigurationError, match="metrics port must be a whole number from 1"):
        WorkerMetrics(port)


@pytest.mark.parametrize("seconds", [0, -1, math.nan, math.inf, 1e300, True])
def test_a_metrics_refresh_is_a_finite_positive_time(seconds: Any) -> None:
    with pytest.raises(ConfigurationError, match="refresh_every"):
        WorkerMetrics(refresh_every=seconds)
