"""Numbers out of range on the command line (issue 23, defect 7): a usage error whose
message is one line naming the option and its range, exit status 2, no traceback, and
nothing stored. Real ``workpool`` subprocesses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import workpool
from workpool import Workpool
from workpool.validation import MAX_COUNT

HUGE = "99999999999999999999999"
WORKER = ("worker", "tests.integration.process_app:pool")


def refused(result: subprocess.CompletedProcess[str], option: str, expected: str) -> None:
    """A usage error: status 2, one 'Error:' line naming the option and ``expected``."""
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"Error: Invalid value for '{option}': {expected}"), errors[0]
    assert result.stdout == ""


def store_with_a_limited_queue(url: str) -> None:
    pool = Workpool(url)
    pool.set_max_parallelism_sync("mail", 3)
    pool.close()


@pytest.mark.parametrize("typed", [HUGE, str(MAX_COUNT + 1), "1.5", "nan", "²"])
def test_a_queue_limit_out_of_range_is_refused_and_nothing_changes(
    backend_url: str, typed: str
) -> None:
    store_with_a_limited_queue(backend_url)
    result = workpool(backend_url, "queues", "set", "mail", typed)
    refused(result, "MAX_PARALLELISM", f"must be a whole number from 0 to {MAX_COUNT}, or 'none'")
    pool = Workpool(backend_url)
    try:
        assert pool.get_queue_sync("mail").max_parallelism == 3
    finally:
        pool.close()


def test_the_largest_queue_limit_is_stored(backend_url: str) -> None:
    store_with_a_limited_queue(backend_url)
    result = workpool(backend_url, "queues", "set", "mail", str(MAX_COUNT))
    assert (result.returncode, result.stderr) == (0, ""), result
    assert result.stdout == f"queue mail: max_parallelism={MAX_COUNT}, running\n"


@pytest.mark.parametrize(
    ("arguments", "option", "expected"),
    [
        ((*WORKER, "--concurrency", HUGE), "--concurrency", "must be a whole number from 1 to"),
        ((*WORKER, "--concurrency", "0"), "--concurrency", "must be a whole number from 1 to"),
        ((*WORKER, "--processes", "99999"), "--processes", "must be a whole number from 1 to 1024"),
        ((*WORKER, "--max-runs-per-process", HUGE), "--max-runs-per-process", "must be a whole"),
        ((*WORKER, "--metrics-port", "70000"), "--metrics-port", "must be a whole number from 1"),
        ((*WORKER, "--lease-seconds", "inf"), "--lease-seconds", "must be a number of seconds"),
        ((*WORKER, "--lease-seconds", "nan"), "--lease-seconds", "must be a number of seconds"),
        ((*WORKER, "--lease-seconds", "1e300"), "--lease-seconds", "must be a number of seconds"),
        ((*WORKER, "--renew-seconds", "nan"), "--renew-seconds", "must be a number of seconds"),
        ((*WORKER, "--shutdown-grace", "inf"), "--shutdown-grace", "must be a number of seconds"),
        (
            (*WORKER, "--metrics-refresh-seconds", "nan"),
            "--metrics-refresh-seconds",
            "must be a number of seconds",
        ),
        (("runs", "list", "--limit", HUGE), "--limit", "must be a whole number from 1 to 1000"),
        (("runs", "list", "--limit", "1.5"), "--limit", "must be a whole number from 1 to 1000"),
        (("stats", "--window", f"{HUGE}h"), "--window", f"'{HUGE}h' must be more than 0"),
        (("dashboard", "--port", HUGE), "--port", "must be a whole number from 0 to 65535"),
        (("dashboard", "--refresh-seconds", "nan"), "--refresh-seconds", "must be a number"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_numbers_out_of_range_are_usage_errors(
    tmp_path: Path, arguments: tuple[str, ...], option: str, expected: str
) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    store_with_a_limited_queue(url)
    refused(workpool(url, *arguments), option, expected)
