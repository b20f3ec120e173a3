"""Values a run published (``ctx.set_event``) from the command line: ``workpool runs
show`` lists them and ``workpool runs get-event RUN_ID KEY`` prints one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import workpool
from workpool import RunContext, Workpool


async def test_published_values_are_shown_and_read_from_the_command_line(
    backend_url: str,
) -> None:
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
            assert await handle.result(timeout=10) == "ok"
            assert await silent.result(timeout=10) == "ok"
        assert await pool.get_events(handle.id) == {
            "status": {"step": 2, "note": "done"},
            "total": 12.5,
        }
        assert await pool.get_events(silent.id) == {}

        read = workpool(backend_url, "runs", "get-event", handle.id, "status")
        assert (read.returncode, read.stderr) == (0, "")
        assert json.loads(read.stdout) == {"step": 2, "note": "done"}
        total = workpool(backend_url, "runs", "get-event", handle.id, "total")
        assert (total.returncode, total.stdout) == (0, "12.5\n")

        missing = workpool(backend_url, "runs", "get-event", handle.id, "never")
        assert (missing.returncode, missing.stdout) == (1, "")
        assert missing.stderr == (
            f"workpool: run {handle.id} published no value under 'never' (it succeeded; "
            "it published 'status', 'total')\n"
        )

        shown = workpool(backend_url, "runs", "show", handle.id)
        assert shown.returncode == 0, shown.stderr
        events = shown.stdout.split("\nevents\n", 1)[1]
        assert '  status: {"step": 2, "note": "done"}\n' in events
        assert "  total: 12.5\n" in events
        as_json = json.loads(workpool(backend_url, "runs", "show", handle.id, "--json").stdout)
        assert as_json["events"] == {"status": {"step": 2, "note": "done"}, "total": 12.5}
        nothing = workpool(backend_url, "runs", "show", silent.id)
        assert "\nevents\n" not in nothing.stdout
    finally:
        await pool.aclose()


def test_get_event_of_an_unknown_run_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "runs", "get-event", "nope", "k")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("workpool: no run with id 'nope' exists")
