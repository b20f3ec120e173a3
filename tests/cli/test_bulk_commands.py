"""`workpool runs retry|cancel|delete` with filter options, and `workpool runs failures`,
invoked as a user would against a real backend holding failed and pending runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

import pytest

from tests.cli.helpers import workpool
from tests.cli.test_inspect_commands import rows, succeeded
from workpool import RunContext, RunFailedError, Workpool


@dataclass(frozen=True)
class Store:
    url: str
    value_errors: list[str]
    """Failed runs of charge with a ValueError."""
    key_error: str
    """A failed run of charge with a KeyError."""
    pending: list[str]
    """Runs of charge scheduled in an hour."""


@pytest.fixture
async def store(backend_url: str) -> Store:
    pool = Workpool(backend_url, app="bulk-cli")

    @pool.workflow(max_concurrency=None, retries=False)
    async def charge(ctx: RunContext, amount: int) -> int:
        if amount < 0:
            raise ValueError("negative")
        if amount == 0:
            raise KeyError("zero")
        return amount

    try:
        failing = [await charge.run(-n) for n in range(1, 4)]
        missing = await charge.run(0)
        async with pool.worker(concurrency=4):
            for handle in [*failing, missing]:
                with pytest.raises(RunFailedError):
                    await handle.result(timeout=10)
        pending = [await charge.run(n, run_after=timedelta(hours=1)) for n in (1, 2)]
    finally:
        await pool.aclose()
    return Store(backend_url, [h.id for h in failing], missing.id, [h.id for h in pending])


def test_failures_groups_failed_runs_by_error_type(store: Store) -> None:
    table = rows(succeeded(workpool(store.url, "runs", "failures")))
    assert [row[:3] for row in table] == [
        ["charge", "KeyError", "1"],
        ["charge", "ValueError", "3"],
    ]

    groups = json.loads(succeeded(workpool(store.url, "runs", "failures", "--json")))["groups"]
    assert [(g["error_type"], g["count"]) for g in groups] == [("KeyError", 1), ("ValueError", 3)]
    assert groups[1]["example_run_id"] in store.value_errors


def test_retry_by_filter_counts_first_then_retries(store: Store) -> None:
    by_type = ["--workflow", "charge", "--status", "failed", "--error-type", "ValueError"]

    dry = succeeded(workpool(store.url, "runs", "retry", *by_type, "--dry-run"))
    assert dry == "3 runs would be retried\n"
    done = succeeded(workpool(store.url, "runs", "retry", *by_type, "--yes"))
    assert done == "3 runs retried\n"
    again = succeeded(workpool(store.url, "runs", "retry", *by_type, "--yes"))
    assert again == "no runs to retry\n"

    shown = json.loads(succeeded(workpool(store.url, "runs", "show", store.key_error, "--json")))
    assert shown["retried_as"] is None


def test_cancel_by_filter_asks_before_it_changes_anything(store: Store) -> None:
    refused = workpool(store.url, "runs", "cancel", "--workflow", "charge")  # no "y" on stdin
    assert refused.returncode == 1
    assert "2 runs match: cancel them?" in refused.stdout
    listed = succeeded(workpool(store.url, "runs", "list", "--status", "scheduled", "--json"))
    assert len(json.loads(listed)["runs"]) == 2

    done = workpool(store.url, "runs", "cancel", "--workflow", "charge", "--reason", "bad")
    assert done.returncode == 1  # still no answer
    canceled = succeeded(
        workpool(store.url, "runs", "cancel", "--workflow", "charge", "--reason", "bad", "--yes")
    )
    assert canceled == "2 runs canceled\n"
    for run_id in store.pending:
        shown = json.loads(succeeded(workpool(store.url, "runs", "show", run_id, "--json")))
        assert (shown["status"], shown["cancel_reason"]) == ("canceled", "bad")


def test_delete_by_filter_deletes_finished_runs_only(store: Store) -> None:
    dry = succeeded(workpool(store.url, "runs", "delete", "--workflow", "charge", "--dry-run"))
    assert dry == "4 runs would be deleted\n"
    assert succeeded(workpool(store.url, "runs", "delete", "--all", "--yes")) == "4 runs deleted\n"

    assert workpool(store.url, "runs", "show", store.key_error).returncode == 1
    assert succeeded(workpool(store.url, "runs", "failures")) == "no failed runs\n"
    left = json.loads(succeeded(workpool(store.url, "runs", "list", "--json")))["runs"]
    assert sorted(run["id"] for run in left) == sorted(store.pending)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["runs", "cancel"], "give a RUN_ID, or filter options"),
        (["runs", "delete"], "give filter options"),
        (["runs", "retry", "some-id", "--workflow", "charge"], "not both"),
        (["runs", "delete", "--status", "queued", "--yes"], "delete applies to"),
    ],
)
def test_a_bulk_action_without_a_clear_selection_is_refused(
    store: Store, arguments: list[str], says: str
) -> None:
    result = workpool(store.url, *arguments)
    assert result.returncode in (1, 2)
    assert says in result.stderr
