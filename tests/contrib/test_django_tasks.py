"""workpool as a Django Tasks backend, in the real project of tests/django_project: tasks
enqueued from Django code, run by ``manage.py workpool_worker``, read back as TaskResults."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_project.settings")

import django

django.setup()

from django.core.exceptions import ImproperlyConfigured  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import override_settings  # noqa: E402

from tests.django_database import use_test_database  # noqa: E402
from tests.django_project.shop import tasks  # noqa: E402
from tests.polling import wait_until  # noqa: E402
from tests.postgres_server import DATABASE, PostgresServer  # noqa: E402
from workpool.contrib.django.backend import WorkpoolBackend  # noqa: E402
from workpool.contrib.django.compat import (  # noqa: E402
    InvalidTaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task,
    task_backends,
    task_enqueued,
)
from workpool.errors import RunCanceledError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "tests" / "django_project" / "manage.py"

pytestmark = pytest.mark.slow


def tasks_setting(url: str, **options: Any) -> dict[str, Any]:
    return {
        "default": {
            "BACKEND": "workpool.contrib.django.WorkpoolBackend",
            "QUEUES": ["default", "mail"],
            "OPTIONS": {"URL": url, "APP": "shop-tasks", **options},
        }
    }


@pytest.fixture
def django_tasks(backend_url: str) -> Iterator[WorkpoolBackend]:
    """The project's TASKS pointed at the store under test; its pool closed after."""
    with override_settings(TASKS=tasks_setting(backend_url)):
        backend = task_backends["default"]
        assert isinstance(backend, WorkpoolBackend)
        try:
            yield backend
        finally:
            backend.pool.close()


class Worker:
    """``manage.py workpool_worker`` of the test project, on the store under test."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.stderr_path = tmp_path / "worker.stderr"
        self.process: subprocess.Popen[bytes] | None = None

    def start(
        self, *options: str, command: tuple[str, ...] = (str(MANAGE), "workpool_worker")
    ) -> None:
        env = {
            **os.environ,
            "WORKPOOL_URL": self.url,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)  # manage.py names it
        if command[0] != str(MANAGE):
            env["DJANGO_SETTINGS_MODULE"] = "tests.django_project.settings"
        with self.stderr_path.open("ab") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, *command, *options],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


@pytest.fixture
def worker(backend_url: str, tmp_path: Path) -> Iterator[Worker]:
    started = Worker(backend_url, tmp_path)
    yield started
    if started.process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.stop()


async def finished(result: TaskResult[Any], worker: Worker) -> TaskResult[Any]:
    """``result`` refreshed until it finished (failing with the worker's log if not)."""

    async def done() -> bool:
        await result.arefresh()
        assert worker.process is None or worker.process.poll() is None, worker.log()
        return result.is_finished

    try:
        await wait_until(done, limit=30)
    except AssertionError as error:
        raise AssertionError(f"{result.status}: {worker.log()}") from error
    return result


async def test_a_task_enqueued_from_django_runs_on_the_worker_and_reports_its_value(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    result = await asyncio.to_thread(tasks.add.enqueue, 2, 3)  # the sync API, off the loop
    assert result.status == TaskResultStatus.READY
    assert result.backend == "default"
    with pytest.raises(ValueError, match="not finished"):
        _ = result.return_value
    worker.start("--concurrency", "4")

    done = await finished(result, worker)  # refreshed in place
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 5
    assert done.errors == []
    assert done.attempts == 1
    assert done.started_at is not None
    assert done.finished_at is not None
    assert done.enqueued_at is not None
    assert done.enqueued_at <= done.started_at <= done.finished_at

    again = await asyncio.to_thread(tasks.add.get_result, result.id)
    assert (again.status, again.return_value, again.args) == (done.status, 5, [2, 3])
    assert again.task.func is tasks.add.func

    # The async API, an async task, a task that takes its context, and JSON normalized
    # as Django does (a returned tuple reads back as a list).
    shouted = await tasks.shout.aenqueue("hi")
    welcomed = await tasks.send_welcome.aenqueue(address="ann@example.com")
    context = await tasks.whoami.aenqueue("me")
    assert (await finished(shouted, worker)).return_value == "HI"
    assert (await finished(welcomed, worker)).return_value == {
        "sent_to": "ann@example.com",
        "lines": ["hello", "welcome"],
    }
    assert welcomed.kwargs == {"address": "ann@example.com"}
    assert (await finished(context, worker)).return_value == {
        "label": "me",
        "id": context.id,
        "attempt": 1,
    }
    read = await tasks.send_welcome.aget_result(welcomed.id)
    assert (read.task.queue_name, read.task.priority) == ("mail", -20)
    run = await django_tasks.pool.get_run(welcomed.id)
    assert (run.queue, run.priority) == ("mail", -20)
    assert worker.stop() == 0, worker.log()


async def test_a_failing_task_reports_failed_with_its_error(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    worker.start()
    result = await tasks.explode.aenqueue("boom: the disk is full")

    await finished(result, worker)
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    (error,) = result.errors
    assert error.exception_class_path == "builtins.ValueError"
    assert error.exception_class is ValueError
    assert "boom: the disk is full" in error.traceback
    assert "in explode" in error.traceback
    assert result.attempts == 1


async def test_priority_orders_the_runs_of_a_queue(
    django_tasks: WorkpoolBackend, worker: Worker, tmp_path: Path
) -> None:
    log = tmp_path / "order.log"
    results = [
        await tasks.record.using(priority=priority).aenqueue(str(log), label)
        for label, priority in [("low", -100), ("normal", 0), ("urgent", 100), ("high", 50)]
    ]
    worker.start("--concurrency", "1", "--no-claim-ahead")
    for result in results:
        await finished(result, worker)
    assert log.read_text().split() == ["urgent", "high", "normal", "low"]


async def test_run_after_holds_the_task_until_then(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    worker.start()
    start = datetime.now(UTC) + timedelta(seconds=2)
    result = await tasks.add.using(run_after=start).aenqueue(1, 1)
    read = await tasks.add.aget_result(result.id)
    assert read.status == TaskResultStatus.READY
    assert read.task.run_after == start
    assert (await django_tasks.pool.get_run(result.id)).available_at == start

    await finished(result, worker)
    assert result.return_value == 2
    assert result.started_at is not None
    assert result.started_at >= start


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_an_unknown_result_id_does_not_exist(django_tasks: WorkpoolBackend) -> None:
    with pytest.raises(TaskResultDoesNotExist, match="no task result"):
        await tasks.add.aget_result("01J00000000000000000000000")
    with pytest.raises(TaskResultDoesNotExist, match="no task result"):
        await asyncio.to_thread(django_tasks.get_result, "no-such-run")


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_tasks_the_worker_could_not_find_are_refused_at_enqueue(
    django_tasks: WorkpoolBackend,
) -> None:
    renamed = task()(tasks.not_a_task)  # its path names the plain function, not a Task
    with pytest.raises(InvalidTaskError, match=r"shop\.tasks\.not_a_task.* not a Task"):
        renamed.enqueue()
    with pytest.raises(InvalidTaskError, match="Queue 'nowhere' is not valid"):
        tasks.add.using(queue_name="nowhere")
    with pytest.raises(InvalidTaskError, match="priority must be a whole number"):
        tasks.add.using(priority=101)
    with pytest.raises(InvalidTaskError, match="run_after must be an aware datetime"):
        tasks.add.using(run_after=datetime(2030, 1, 1))
    with pytest.raises(TypeError, match="Unsupported type"):
        tasks.add.enqueue(1, {2})  # type: ignore[arg-type]  # what the test is about


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_bad_options_are_refused_when_the_backend_is_made(backend_url: str) -> None:
    from django.core.exceptions import ImproperlyConfigured

    with (
        override_settings(TASKS=tasks_setting(backend_url, WORKERS=4)),
        pytest.raises(ImproperlyConfigured, match=r"unknown OPTIONS 'WORKERS'.*URL, APP, PREFIX"),
    ):
        task_backends["default"]


async def test_a_canceled_task_reports_failed_with_the_cancel(
    django_tasks: WorkpoolBackend,
) -> None:
    sent: list[TaskResult[Any]] = []

    def receive(sender: type[object], task_result: TaskResult[Any], **_: object) -> None:
        sent.append(task_result)

    task_enqueued.connect(receive)
    try:
        result = await tasks.add.aenqueue(1, 2)  # no worker: it stays queued
    finally:
        task_enqueued.disconnect(receive)
    assert sent == [result]
    await django_tasks.pool.cancel(result.id, reason="customer asked")
    await result.arefresh()
    assert result.status == TaskResultStatus.FAILED
    (error,) = result.errors
    assert error.exception_class is RunCanceledError
    assert "customer asked" in error.traceback


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_workpool_worker_runs_the_tasks_of_a_backend_by_its_alias(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    target = "workpool.contrib.django.worker:default"
    worker.start(command=("-m", "workpool", "worker", target))
    result = await tasks.add.aenqueue(20, 22)
    assert (await finished(result, worker)).return_value == 42
    assert worker.stop() == 0, worker.log()


@pytest.mark.parametrize("backend_name", ["sqlite"])
async def test_the_command_runs_several_processes_under_a_supervisor(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    worker.start("--processes", "2")  # each a fresh `python -m workpool worker ...`
    results = [await tasks.add.aenqueue(n, n) for n in range(4)]
    for n, result in enumerate(results):
        assert (await finished(result, worker)).return_value == 2 * n
    assert worker.stop() == 0, worker.log()


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_the_command_refuses_a_backend_that_is_not_workpools(
    django_tasks: WorkpoolBackend, worker: Worker
) -> None:
    worker.start("--backend", "nope")
    assert worker.process is not None
    assert worker.process.wait(timeout=30) == 1
    assert "CommandError: TASKS has no backend 'nope': it has default" in worker.log()


@pytest.mark.parametrize("backend_name", ["postgres"])
async def test_on_postgresql_an_enqueue_inside_atomic_commits_and_rolls_back_with_it(
    django_tasks: WorkpoolBackend, worker: Worker, postgres_server: PostgresServer
) -> None:
    use_test_database(postgres_server)

    def enqueue_then(commit: bool) -> str:
        with transaction.atomic():
            result = tasks.add.enqueue(20, 1 if commit else 2)
            transaction.set_rollback(not commit)
        connection.close()  # this thread's, before the thread is reused
        return result.id

    kept = await asyncio.to_thread(enqueue_then, True)
    dropped = await asyncio.to_thread(enqueue_then, False)
    with pytest.raises(TaskResultDoesNotExist):
        await tasks.add.aget_result(dropped)  # rolled back with the transaction
    worker.start()
    assert (await finished(await tasks.add.aget_result(kept), worker)).return_value == 21
    assert [run.id for run in (await django_tasks.pool.list_runs()).runs] == [kept]
    assert worker.stop() == 0, worker.log()


@pytest.mark.parametrize("backend_name", ["postgres"])
async def test_an_atomic_block_on_another_database_is_refused_with_what_to_set(
    backend_url: str, postgres_server: PostgresServer
) -> None:
    use_test_database(postgres_server)
    other_database = backend_url.replace(f"@/{DATABASE}?", "@/postgres?")

    def enqueue_in_atomic() -> None:
        try:
            with transaction.atomic():
                tasks.add.enqueue(1, 1)
        finally:
            connection.close()

    with override_settings(TASKS=tasks_setting(other_database)):
        try:
            with pytest.raises(ImproperlyConfigured, match=r'OPTIONS\["DATABASE"\]'):
                await asyncio.to_thread(enqueue_in_atomic)
        finally:
            backend = task_backends["default"]
            assert isinstance(backend, WorkpoolBackend)
            backend.pool.close()
    with override_settings(TASKS=tasks_setting(other_database, DATABASE=None)):
        try:
            await asyncio.to_thread(enqueue_in_atomic)  # stored on its own, at once
        finally:
            backend = task_backends["default"]
            assert isinstance(backend, WorkpoolBackend)
            backend.pool.close()
