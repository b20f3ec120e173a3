"""Values a run published (``ctx.set_event``) from the command line: ``workpool runs
show`` lists them and ``workpool runs get-event RUN_ID KEY`` prints one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import workpool
from workpool import RunContext, Workpool


async def _finished_runs(backend_url: str) -> tuple[str, str]:
    """The ids of two finished runs: one published two keys (one of them twice), the
    other none."""
    pool = Workpool(backend_url, app="cli-tests")

    @pool.workflow()
    async def importer(ctx: RunContext, _: None) -> str:
        await ctx.set_event("status", {"step": 1})
        await ctx.set_event("status", {"step": 2, "note": "done"})
        await ctx.set_event("total", 12.5)
        return "ok"

    @pool.workflow()
    async def quiet(ctx: RunContext, _: None) -> str:
        return "ok"

    try:
        handle, silent = await importer.run(None), await quiet.run(None)
        async with pool.worker(concurrency=2):
            assert await handle.result(timeout=30) == "ok"
            assert await silent.result(timeout=30) == "ok"
        assert await pool.get_events(handle.id) == {
            "status": {"step": 2, "note": "done"},
            "total": 12.5,
        }
        assert await pool.get_events(silent.id) == {}
    finally:
        await pool.aclose()
    return handle.id, silent.id


async def test_get_event_prints_a_published_value_as_json(backend_url: str) -> None:
    run_id, _ = await _finished_runs(backend_url)

    read = workpool(backend_url, "runs", "get-event", run_id, "status")
    assert (read.returncode, read.stderr) == (0, "")
    assert json.loads(read.stdout) == {"step": 2, "note": "done"}
    missing = workpool(backend_url, "runs", "get-event", run_id, "never")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (
        f"workpool: run {run_id} published no value under 'never' (it succeeded; "
        "it published 'status', 'total')\n"
    )


async def test_runs_show_lists_the_published_values(backend_url: str) -> None:
    run_id, silent_id = await _finished_runs(backend_url)

    shown = workpool(backend_url, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    events = shown.stdout.split("\nevents\n", 1)[1]
    assert '  status: {"step": 2, "note": "done"}\n' in events
    assert "  total: 12.5\n" in events
    as_json = json.loads(workpool(backend_url, "runs", "show", run_id, "--json").stdout)
    assert as_json["events"] == {"status": {"step": 2, "note": "done"}, "total": 12.5}
    assert "\nevents\n" not in workpool(backend_url, "runs", "show", silent_id).stdout


def test_get_event_of_an_unknown_run_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "runs", "get-event", "nope", "k")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("workpool: no run with id 'nope' exists")
