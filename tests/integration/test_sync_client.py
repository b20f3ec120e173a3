"""The synchronous twins, called from plain threads with no event loop."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration.conftest import fast_worker
from tests.integration.processes import ROOT
from tests.polling import wait_until
from workpool import Finished, Pending, RunCanceledError, RunContext, Success, Workpool


async def test_sync_twins_work_without_an_event_loop(pool: Workpool) -> None:
    @pool.workflow()
    async def add_one(ctx: RunContext, value: int) -> int:
        return value + 1

    def plain_script() -> None:
        handle = add_one.run_sync(1)
        assert handle.result_sync(timeout=10) == 2
        assert handle.status_sync() == Finished(Success(output=2))
        by_name = pool.run_by_name_sync("add_one", 10)
        assert by_name.result_sync(timeout=10) == 11
        assert pool.get_run_sync(by_name.id).output == 11
        batch = pool.enqueue_many_sync([add_one.prepare(n) for n in range(3)])
        assert [h.result_sync(timeout=10) for h in batch] == [1, 2, 3]
        later = add_one.run_sync(5, run_after=timedelta(minutes=5))
        assert later.status_sync() == Pending(previous_attempts=0)
        later.cancel_sync("no")
        with pytest.raises(RunCanceledError):
            later.result_sync(timeout=5)
        assert pool.cancel_sync(later.id) == "finished"
        assert pool.cancel_all_sync() == 0

    async with fast_worker(pool):
        await asyncio.to_thread(plain_script)


CTRL_C_SCRIPT = """
import sys
from workpool import RunContext, Workpool

pool = Workpool(sys.argv[1], app="ctrl-c")

@pool.workflow()
async def never_served(ctx: RunContext, value: int) -> int:
    return value

handle = never_served.run_sync(1)  # no worker runs it: result_sync() blocks
print("waiting", flush=True)
try:
    handle.result_sync()
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize("interpreter_exit", ["after the handler", "by the interrupt"])
async def test_ctrl_c_in_result_sync_leaves_nothing_pending_at_exit(
    backend_url: str, interpreter_exit: str
) -> None:
    script = CTRL_C_SCRIPT
    if interpreter_exit == "by the interrupt":  # the KeyboardInterrupt ends the script
        script = script.replace("try:\n    handle", "if True:\n    handle").split("except")[0]
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-c", script, backend_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        assert await process.stdout.readline() == b"waiting\n"
        # Blocked in result_sync(): the portal's loop waits in epoll between its polls.
        wchan = Path(f"/proc/{process.pid}/wchan")
        await wait_until(lambda: wchan.read_text() in ("do_epoll_wait", "ep_poll"))
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
    stdout, stderr = out.decode(), err.decode()
    assert "Task was destroyed but it is pending" not in stderr, stderr
    if interpreter_exit == "after the handler":
        assert (process.returncode, stdout, stderr) == (0, "interrupted\n", "")
    else:
        assert process.returncode == -signal.SIGINT, stderr  # Python's exit on Ctrl-C
        assert stderr.rstrip().endswith("KeyboardInterrupt")
