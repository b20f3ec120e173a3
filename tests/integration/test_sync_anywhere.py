"""The synchronous client wherever Django, Flask and gunicorn run it (issue 12).

- In a child made by ``os.fork()`` (gunicorn ``--preload``, multiprocessing, prefork
  servers) the ``*_sync`` methods work, and the parent's keep working.
- Called on a thread that runs an event loop, a ``*_sync`` method raises at once,
  naming what to await instead, rather than blocking the loop.
- ``asyncio.run(wf.run(x))`` over and over leaves no connection or thread behind.

Both backends: a real SQLite file and a private redis-server.
"""

from __future__ import annotations

import asyncio
import faulthandler
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.integration.conftest import fast_worker
from tests.integration.processes import ROOT, Workers
from workpool import (
    Batch,
    Finished,
    RunContext,
    RunFailedError,
    RunFilter,
    RunHandle,
    Success,
    Workflow,
    Workpool,
    WorkpoolError,
)

CHILD_DEADLINE = 20.0
"""Seconds a forked child gets to report; a hang fails the test instead of blocking it."""


# -- helpers -------------------------------------------------------------------------


def in_forked_child(call: Callable[[], object], deadline: float = CHILD_DEADLINE) -> str:
    """Fork; the child runs ``call`` and exits, reporting through a pipe.

    Returns the ``repr`` of what ``call`` returned; raises AssertionError with the
    child's traceback if it raised, or if it did not finish within ``deadline`` seconds
    (it is then killed). The child never returns into pytest: it ends with ``os._exit``.
    """
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        code, report = 1, "no report"
        try:
            os.close(read_end)
            # A hang reports where each thread of the child was, then ends the child.
            faulthandler.dump_traceback_later(max(deadline - 2, 1), exit=True, file=write_end)
            report = f"ok {call()!r}"
            code = 0
        except BaseException:
            report = f"error {traceback.format_exc()}"
        finally:
            with os.fdopen(write_end, "w") as out:
                out.write(report)
            os._exit(code)
    os.close(write_end)
    try:
        report = read_until_closed(read_end, time.monotonic() + deadline)
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"the forked child did not finish within {deadline} s") from None
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert not report.startswith("Timeout"), f"the forked child hung:\n{report}"
    assert report.startswith("ok "), f"the forked child failed:\n{report}"
    assert os.waitstatus_to_exitcode(status) == 0
    return report[len("ok ") :]


def read_until_closed(fd: int, deadline: float) -> str:
    """Everything written to the pipe until its writer closes it; TimeoutError after
    ``deadline`` (a ``time.monotonic()`` value)."""
    return read_until_closed_or(fd, None, deadline).decode()


def read_until_closed_or(fd: int, size: int | None, deadline: float) -> bytes:
    """What is written to the pipe until its writer closes it or ``size`` bytes came;
    TimeoutError after ``deadline`` (a ``time.monotonic()`` value)."""
    chunks = b""
    while size is None or len(chunks) < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        readable, _, _ = select.select([fd], [], [], remaining)
        if readable:
            chunk = os.read(fd, 65536 if size is None else size - len(chunks))
            if not chunk:
                break
            chunks += chunk
    return chunks


def wait_until(condition: Callable[[], bool], what: str, limit: float = 10.0) -> None:
    """Check ``condition`` until it holds; fail naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not reached within {limit} s"
        time.sleep(0.01)


def redis_clients(url: str) -> int:
    """Clients connected to the server, not counting the one asking."""
    client = redis.Redis.from_url(url)
    try:
        return int(client.info("clients")["connected_clients"]) - 1
    finally:
        client.close()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


class Resources:
    """What the process holds that a leak would grow: threads, file descriptors, and on
    Redis the server's connected clients."""

    def __init__(self, backend_url: str) -> None:
        self.redis_url = backend_url if backend_url.startswith("redis") else None

    def now(self) -> dict[str, int]:
        counts = {"threads": threading.active_count(), "descriptors": open_descriptors()}
        if self.redis_url is not None:
            counts["redis clients"] = redis_clients(self.redis_url)
        return counts

    def wait_back_to(self, baseline: dict[str, int], limit: float = 10.0) -> None:
        """Wait until no count is above ``baseline``."""
        wait_until(
            lambda: all(self.now()[name] <= count for name, count in baseline.items()),
            f"counts back to {baseline} (now {self.now()})",
            limit,
        )


@pytest.fixture
def add_one(pool: Workpool) -> Workflow[int, int]:
    @pool.workflow(max_concurrency=None)
    async def add_one(ctx: RunContext, value: int) -> int:
        return value + 1

    return add_one


# -- after os.fork() -----------------------------------------------------------------


async def test_sync_methods_work_in_a_forked_child_and_the_parent_keeps_working(
    pool: Workpool, add_one: Workflow[int, int], workers: Workers
) -> None:
    """The worker is a process of its own, as beside a preloading web server: a thread of
    this process logging while it forks would leave the child a copy of the log file's
    buffer lock held by nobody (CPython re-creates logging's own locks in a child, not
    those of the files its handlers write), and its first log line would hang."""
    workers.start()

    def parent() -> None:
        # The parent's portal and connections exist before the fork.
        assert add_one.run_sync(1).result_sync(timeout=CHILD_DEADLINE) == 2

        def child() -> object:
            handle = add_one.run_sync(41)
            output = handle.result_sync(timeout=10)
            return (output, pool.get_run_sync(handle.id).status, handle.status_sync())

        report = in_forked_child(child)
        assert report == repr((42, "succeeded", Finished(Success(output=42))))
        # Twice: a second child forks from a parent whose portal a child also had.
        assert in_forked_child(lambda: add_one.run_sync(9).result_sync(timeout=10)) == "10"
        # The parent's own portal and connections still work.
        assert add_one.run_sync(2).result_sync(timeout=10) == 3
        assert len(pool.list_runs_sync(limit=10).runs) == 4

    await asyncio.to_thread(parent)


async def test_a_forked_child_and_its_parent_call_at_the_same_time(
    pool: Workpool, add_one: Workflow[int, int]
) -> None:
    """Were the child to reuse a connection of the parent, their replies would mix."""

    def child() -> object:
        handles = [add_one.run_sync(n) for n in range(20)]
        return [pool.get_run_sync(handle.id).input for handle in handles]

    def parent() -> None:
        first = add_one.run_sync(100)
        calls = 0
        outcome: list[object] = []

        def fork_and_wait() -> None:
            try:
                outcome.append(in_forked_child(child))
            except BaseException as error:  # handed to the test's thread below
                outcome.append(error)

        forked = threading.Thread(target=fork_and_wait)
        forked.start()
        while forked.is_alive():
            assert pool.get_run_sync(first.id).input == 100
            calls += 1
        forked.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        assert outcome == [repr(list(range(20)))]
        assert calls > 0

    await asyncio.to_thread(parent)


def test_the_parent_closes_its_pool_while_a_forked_child_writes(
    loop_pool: Workpool, backend_url: str
) -> None:
    """The parent's close neither takes the child's writes with it (SQLite: the child
    shares no lock bookkeeping with the connection it inherited, so the parent's last
    close does not delete the write-ahead log under it) nor leaves the parent's sockets
    open through the child's copies (Redis: the server sees its clients leave)."""

    @loop_pool.workflow(max_concurrency=None)
    async def echo(ctx: RunContext, value: int) -> int:
        return value

    resources = Resources(backend_url)
    asyncio.run(loop_pool.list_workflows())
    baseline = resources.now()
    echo.run_sync(1)
    forked_read, forked_write = os.pipe()
    go_on_read, go_on_write = os.pipe()

    def child() -> object:
        echo.run_sync(2)  # the child's own connections, before the parent closes
        os.write(forked_write, b"!")
        assert os.read(go_on_read, 1) == b"!"
        handles = [echo.run_sync(value) for value in range(100, 150)]
        return [loop_pool.get_run_sync(handle.id).input for handle in handles[-1:]]

    outcome: list[object] = []

    def fork_and_wait() -> None:
        try:
            outcome.append(in_forked_child(child))
        except BaseException as error:  # handed to the test's thread below
            outcome.append(error)

    forked = threading.Thread(target=fork_and_wait)
    forked.start()
    try:
        assert read_until_closed_or(forked_read, 1, time.monotonic() + CHILD_DEADLINE) == b"!"
        loop_pool.close()
        assert "workpool-sync" not in {thread.name for thread in threading.enumerate()}
        if "redis clients" in baseline:  # the other counts include the fork's pipes
            resources.wait_back_to({"redis clients": baseline["redis clients"] + 1})
    finally:
        os.write(go_on_write, b"!")
        forked.join()
        for descriptor in (forked_read, forked_write, go_on_read, go_on_write):
            os.close(descriptor)
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    assert outcome == ["[149]"]
    reader = Workpool(backend_url)
    try:
        assert len(reader.list_runs_sync(limit=500).runs) == 52
    finally:
        reader.close()


GUNICORN_LIKE = """
import os, sys
from workpool import RunContext, Workpool

pool = Workpool(sys.argv[1], app="forked")

@pool.workflow(max_concurrency=None)
async def noted(ctx: RunContext, value: int) -> int:
    return value

first = noted.run_sync(1)  # the parent (a preloading master) uses the pool, then forks
children = []
for value in (2, 3):
    pid = os.fork()
    if pid == 0:
        handle = noted.run_sync(value)
        assert pool.get_run_sync(handle.id).input == value
        sys.exit(0)  # a normal exit: the child's interpreter finalizes what it inherited
    children.append(pid)
for pid in children:
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
assert pool.get_run_sync(noted.run_sync(4).id).input == 4
assert len(pool.list_runs_sync().runs) == 4
pool.close()
print("ok")
"""


def test_forked_children_that_exit_normally_leave_the_parent_working(backend_url: str) -> None:
    """As gunicorn's workers do: the children's finalizers must not touch the parent's
    loop or connections."""
    ran = subprocess.run(
        [sys.executable, "-c", GUNICORN_LIKE, backend_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "ok\n", "")


# -- on a thread running an event loop --------------------------------------------------


def every_sync_call(pool: Workpool, workflow: Workflow[int, int]) -> dict[str, Callable[[], Any]]:
    """One call of each ``*_sync`` method, by the name its error should give."""
    handle: RunHandle[int] = pool.handle("no-such-run")
    batch = Batch(pool, "no-such-batch")
    return {
        "add_one.run": lambda: workflow.run_sync(1),
        "pool.enqueue_many": lambda: pool.enqueue_many_sync([workflow.prepare(1)]),
        "pool.run_by_name": lambda: pool.run_by_name_sync("add_one", 1),
        "pool.get_run": lambda: pool.get_run_sync("no-such-run"),
        "pool.get_steps": lambda: pool.get_steps_sync("no-such-run"),
        "pool.cancel": lambda: pool.cancel_sync("no-such-run"),
        "pool.cancel_all": lambda: pool.cancel_all_sync(),
        "pool.list_runs": lambda: pool.list_runs_sync(),
        "pool.stats": lambda: pool.stats_sync(),
        "pool.retry_run": lambda: pool.retry_run_sync("no-such-run"),
        "pool.list_workflows": lambda: pool.list_workflows_sync(),
        "pool.list_skipped_ticks": lambda: pool.list_skipped_ticks_sync(),
        "pool.get_queue": lambda: pool.get_queue_sync("default"),
        "pool.set_max_parallelism": lambda: pool.set_max_parallelism_sync("default", 3),
        "pool.pause": lambda: pool.pause_sync("default"),
        "pool.resume": lambda: pool.resume_sync("default"),
        "pool.send_event": lambda: pool.send_event_sync("no-such-run", "key", 1),
        "pool.get_event": lambda: pool.get_event_sync("no-such-run", "key"),
        "pool.get_events": lambda: pool.get_events_sync("no-such-run"),
        "handle.status": lambda: handle.status_sync(),
        "handle.result": lambda: handle.result_sync(timeout=1),
        "handle.cancel": lambda: handle.cancel_sync(),
        "handle.progress": lambda: handle.progress_sync(),
        "handle.send_event": lambda: handle.send_event_sync("key", 1),
        "handle.get_event": lambda: handle.get_event_sync("key", timeout=1),
        "pool.batch": lambda: pool.batch_sync([workflow.prepare(1)]),
        "pool.get_batch": lambda: pool.get_batch_sync("no-such-batch"),
        "pool.add_to_batch": lambda: pool.add_to_batch_sync("no-such-batch", []),
        "batch.status": lambda: batch.status_sync(),
        "batch.wait": lambda: batch.wait_sync(timeout=1),
        "batch.add": lambda: batch.add_sync([workflow.prepare(1)]),
        "batch.close": lambda: batch.close_sync(),
        "batch.cancel": lambda: batch.cancel_sync(),
        "pool.rerun": lambda: pool.rerun_sync("no-such-run", from_step="step"),
        "pool.pause_run": lambda: pool.pause_run_sync("no-such-run"),
        "pool.resume_run": lambda: pool.resume_run_sync("no-such-run"),
        "pool.run_now": lambda: pool.run_now_sync("no-such-run"),
        "pool.retry_runs": lambda: pool.retry_runs_sync(RunFilter(workflow="add_one")),
        "pool.cancel_runs": lambda: pool.cancel_runs_sync(RunFilter(workflow="add_one")),
        "pool.delete_runs": lambda: pool.delete_runs_sync(RunFilter(workflow="add_one")),
        "pool.failures": lambda: pool.failures_sync(),
        "pool.history": lambda: pool.history_sync(),
        "pool.limit_usage": lambda: pool.limit_usage_sync(),
    }


def sync_method_names() -> set[str]:
    """``owner.method`` for every ``*_sync`` method of the four public classes."""
    owners = {"pool": Workpool, "add_one": Workflow, "handle": RunHandle, "batch": Batch}
    return {
        f"{owner}.{name.removesuffix('_sync')}"
        for owner, cls in owners.items()
        for name in dir(cls)
        if name.endswith("_sync") and not name.startswith("_")
    }


async def test_every_sync_method_raises_at_once_on_a_running_loop(
    pool: Workpool, add_one: Workflow[int, int]
) -> None:
    calls = every_sync_call(pool, add_one)
    assert set(calls) == sync_method_names(), "a *_sync method is missing from this test"
    started = time.monotonic()
    for awaitable, call in calls.items():
        with pytest.raises(RuntimeError) as caught:
            call()
        assert isinstance(caught.value, WorkpoolError)
        sync = f"{awaitable}_sync()"
        assert str(caught.value).startswith(f"{sync} was called from a running event loop")
        assert f"use `await {awaitable}(...)`" in str(caught.value)
    assert time.monotonic() - started < 1.0
    assert (await pool.list_runs()).runs == []  # nothing was stored
    assert (await pool.get_queue("default")).paused is False


async def test_a_sync_call_in_an_async_handler_fails_the_run_at_once(pool: Workpool) -> None:
    """The worker's loop is not blocked (it froze a worker past its lease before)."""

    @pool.workflow()
    async def blocks_its_loop(ctx: RunContext, value: int) -> str:
        return pool.get_run_sync(ctx.run_id).status

    @pool.workflow()
    def plain(ctx: RunContext, value: int) -> str:  # a sync handler runs in a thread
        return pool.get_run_sync(ctx.run_id).status

    async with fast_worker(pool):
        handle = await blocks_its_loop.run(1)
        with pytest.raises(RunFailedError) as caught:
            await handle.result(timeout=10)
        assert caught.value.error.type == "SyncCallInEventLoopError"
        assert "use `await pool.get_run(...)`" in caught.value.error.message
        assert await (await plain.run(1)).result(timeout=10) == "running"


# -- asyncio.run in a loop -------------------------------------------------------------


@pytest.fixture
def loop_pool(backend_url: str) -> Iterator[Workpool]:
    """A pool used from plain (non-async) tests; its portal closed at the end."""
    instance = Workpool(backend_url, app="tests")
    yield instance
    instance.close()


def test_asyncio_run_two_hundred_times_leaves_no_connection_or_thread(
    loop_pool: Workpool, backend_url: str
) -> None:
    @loop_pool.workflow(max_concurrency=None)
    async def add_one(ctx: RunContext, value: int) -> int:
        return value + 1

    resources = Resources(backend_url)
    asyncio.run(add_one.run(0))  # imports and the store's creation, before counting
    baseline = resources.now()
    for value in range(200):
        asyncio.run(add_one.run(value))
    resources.wait_back_to(baseline)

    async def count_runs() -> int:
        return len((await loop_pool.list_runs(limit=500)).runs)

    assert asyncio.run(count_runs()) == 201


def test_an_asyncio_runner_closes_its_connections_with_its_loop(
    loop_pool: Workpool, backend_url: str
) -> None:
    resources = Resources(backend_url)
    asyncio.run(loop_pool.list_workflows())
    baseline = resources.now()
    with asyncio.Runner() as runner:
        runner.run(loop_pool.list_workflows())
        runner.run(loop_pool.get_queue("default"))
        during = resources.now()
        assert any(during[name] > count for name, count in baseline.items()), during
    resources.wait_back_to(baseline)


def test_pool_close_closes_the_portal_connections(loop_pool: Workpool, backend_url: str) -> None:
    resources = Resources(backend_url)
    asyncio.run(loop_pool.list_workflows())
    baseline = resources.now()
    assert loop_pool.list_workflows_sync() == []
    during = resources.now()
    assert any(during[name] > count for name, count in baseline.items()), during
    loop_pool.close()
    resources.wait_back_to(baseline)
    # A later sync call starts a new portal.
    assert loop_pool.get_queue_sync("default").paused is False
    loop_pool.close()
    resources.wait_back_to(baseline)
