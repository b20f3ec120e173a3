"""The restart policy of the process supervisor, how it names an exit, and how it
signals its children."""

from __future__ import annotations

import asyncio
import signal

from workpool.worker.supervisor import RestartPolicy, describe_exit, signal_child


def test_the_delay_doubles_from_one_second_to_thirty() -> None:
    policy = RestartPolicy()
    assert [policy.delay(deaths) for deaths in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_an_exit_is_named_by_its_status_or_its_signal() -> None:
    assert describe_exit(2) == "exited with status 2"
    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(-200) == "was killed by signal 200"


async def test_signalling_a_child_as_it_exits_keeps_its_exit_status() -> None:
    """A signal sent while a child exits must not reap it before asyncio's child watcher
    does, which would then report status 255 for it (asyncio's own send_signal polls
    the child first, before Python 3.13): at a deploy's SIGTERM, a worker process that
    had just been recycled counted as one that stopped badly, and the supervisor
    exited 1."""
    statuses = []
    for _ in range(100):
        child = await asyncio.create_subprocess_exec("sh", "-c", "exit 3")
        while child.returncode is None:  # signal it again and again while it ends
            signal_child(child, 0)
            await asyncio.sleep(0)
        statuses.append(await child.wait())
    assert set(statuses) == {3}
