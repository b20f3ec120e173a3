"""``workpool runs send-event``: an event from the command line reaches the run."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import workpool
from workpool import RunContext, Workpool


async def test_an_event_sent_from_the_command_line_is_taken_by_the_run(backend_url: str) -> None:
    pool = Workpool(backend_url, app="cli-tests")

    @pool.workflow()
    async def approval(ctx: RunContext, _: None) -> object:
        return await ctx.step.wait_for_event("decision", "decision")

    try:
        handle = await approval.run(None)
        command = ("runs", "send-event", handle.id, "decision", '{"ok": true}', "--event-id", "d1")
        sent = workpool(backend_url, *command)
        assert (sent.returncode, sent.stdout, sent.stderr) == (
            0,
            f"run {handle.id}: event 'decision' sent\n",
            "",
        )
        again = workpool(backend_url, *command)  # a retried delivery
        assert (again.returncode, again.stdout) == (
            0,
            f"run {handle.id}: event 'd1' was sent before; not sent again\n",
        )
        async with pool.worker(concurrency=1):
            assert await handle.result(timeout=10) == {"ok": True}
        finished = workpool(backend_url, "runs", "send-event", handle.id, "decision", "1")
        assert (finished.returncode, finished.stdout) == (1, "")
        assert finished.stderr.startswith(f"workpool: run {handle.id} has finished")
    finally:
        await pool.aclose()


def test_a_payload_that_is_not_json_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "runs", "send-event", "r", "k", "yes")
    assert (result.returncode, result.stdout) == (2, "")
    assert "Invalid value for 'PAYLOAD': 'yes' is not JSON" in result.stderr


def test_an_unknown_run_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    result = workpool(f"sqlite:///{tmp_path}/empty.db", "runs", "send-event", "nope", "k", "1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("workpool: no run with id 'nope' exists")
