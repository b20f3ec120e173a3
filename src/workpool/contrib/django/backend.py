"""``WorkpoolBackend``: Django's Tasks API (``@task``, ``enqueue``, ``get_result``) over a
workpool store, so that ``workpool worker`` (``manage.py workpool_worker``) runs the tasks.

    TASKS = {"default": {"BACKEND": "workpool.contrib.django.WorkpoolBackend",
                         "QUEUES": ["default", "mail"],
                         "OPTIONS": {"URL": "postgresql://...", "APP": "shop-tasks"}}}

A task's call is one run of the backend's workflow (``results.WORKFLOW``): its queue is
the task's ``queue_name``, its priority the task's (both ranges are -100 to 100, higher
first: taken as they are), its start ``run_after``; the run's id is the result's id.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from workpool.app import Workpool
from workpool.contrib.django.compat import (
    BaseTaskBackend,
    InvalidTaskError,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    normalize_json,
    task_enqueued,
)
from workpool.contrib.django.results import WORKFLOW, TaskCall, task_at, task_result
from workpool.contrib.django.runner import define_runner
from workpool.definitions import Workflow
from workpool.errors import ConfigurationError, RunNotFoundError
from workpool.models import Run
from workpool.validation import check_name

OPTIONS = ("URL", "APP", "PREFIX", "DATABASE")
"""The keys of a backend's OPTIONS: the store's URL (default ``$WORKPOOL_URL``, else
``sqlite:///workpool.db``), the app name its workers register (default ``django``), the
store's prefix (default ``workpool``) and the Django database whose
``transaction.atomic()`` an enqueue joins (default ``"default"`` when the store is on
PostgreSQL, else None: never)."""

_pools: dict[tuple[str, str | None, str, str], tuple[Workpool, Workflow[TaskCall, Any]]] = {}
_pools_lock = threading.Lock()


class WorkpoolBackend(BaseTaskBackend):
    """A Django Tasks backend whose tasks are workpool runs."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]: unknown OPTIONS {', '.join(map(repr, unknown))}; "
                f"WorkpoolBackend takes {', '.join(OPTIONS)}"
            )
        try:
            self.pool, self._workflow = _pool_of(
                alias,
                self.options.get("URL"),
                self.options.get("APP", "django"),
                self.options.get("PREFIX", "workpool"),
            )
        except ConfigurationError as error:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]: {error}") from error
        on_postgres = urlsplit(self.pool.url).scheme in ("postgresql", "postgres")
        self._database: str | None = self.options.get(
            "DATABASE", "default" if on_postgres else None
        )

    def validate_task(self, task: Task[Any, Any]) -> None:
        """Django's checks, and a queue name workpool can store."""
        super().validate_task(task)
        try:
            check_name(task.queue_name, what="queue_name")
        except ConfigurationError as error:
            raise InvalidTaskError(str(error)) from error

    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any]:
        """Store the call as a run; returns its READY result."""
        call = self._call(task, args, kwargs)
        options = self._enqueue_options(task)
        joined = self._atomic_connection()
        try:
            if joined is None:
                handle = self._workflow.run_sync(call, **options)
            else:
                handle = self._workflow.run_sync(call, connection=joined, **options)
        except ConfigurationError as error:
            if joined is None:
                raise
            raise ImproperlyConfigured(
                f"TASKS[{self.alias!r}]: an enqueue inside transaction.atomic() joins the "
                f"transaction of database {self._database!r}, and could not: {error}. Set "
                'OPTIONS["DATABASE"] to the alias of the database the URL names, or to '
                "None to store each task on its own"
            ) from error
        return self._enqueued(task, handle.id, call)

    async def aenqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any]:
        """``enqueue`` on the running event loop (no thread), on its own: Django's
        transactions are synchronous, so there is none to join here."""
        call = self._call(task, args, kwargs)
        handle = await self._workflow.run(call, **self._enqueue_options(task))
        return self._enqueued(task, handle.id, call)

    def get_result(self, result_id: str) -> TaskResult[Any]:
        """The result of the task run ``result_id``, or TaskResultDoesNotExist."""
        try:
            run = self.pool.get_run_sync(result_id)
        except (RunNotFoundError, ConfigurationError) as error:
            raise self._no_result(result_id) from error
        return self._result_of(run)

    async def aget_result(self, result_id: str) -> TaskResult[Any]:
        """``get_result`` on the running event loop (no thread)."""
        try:
            run = await self.pool.get_run(result_id)
        except (RunNotFoundError, ConfigurationError) as error:
            raise self._no_result(result_id) from error
        return self._result_of(run)

    def _enqueue_options(self, task: Task[Any, Any]) -> dict[str, Any]:
        """The options of the run that stores a call of ``task``: the one place that
        decides how a task's enqueue is written."""
        return {"queue": task.queue_name, "priority": task.priority, "run_at": task.run_after}

    def _atomic_connection(self) -> Any:
        """Django's connection to ``DATABASE`` if it is inside ``transaction.atomic()``
        (the enqueue then joins its transaction), else None."""
        if self._database is None:
            return None
        from django.db import connections

        connection = connections[self._database]
        return connection if connection.in_atomic_block else None

    def _call(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskCall:
        """The run's input, once the task is one the worker can import by its path."""
        self.validate_task(task)
        found = task_at(task.module_path)
        if found.func is not task.func:
            raise InvalidTaskError(
                f"{task.module_path!r} names another task: workpool's worker imports a "
                "task by its module path, so define each at module level under its name"
            )
        run_after = task.run_after.isoformat() if task.run_after is not None else None
        return TaskCall(
            task=task.module_path,
            args=normalize_json(args),
            kwargs=normalize_json(kwargs),
            run_after=run_after,
        )

    def _enqueued(self, task: Task[Any, Any], run_id: str, call: TaskCall) -> TaskResult[Any]:
        result: TaskResult[Any] = TaskResult(
            task=task,
            id=run_id,
            status=TaskResultStatus.READY,
            enqueued_at=datetime.now(UTC),
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=call["args"],
            kwargs=call["kwargs"],
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def _result_of(self, run: Run) -> TaskResult[Any]:
        if run.workflow != WORKFLOW:
            raise self._no_result(run.id)
        return task_result(run, self.alias)

    def _no_result(self, result_id: str) -> TaskResultDoesNotExist:
        return TaskResultDoesNotExist(
            f"no task result {result_id!r} in the store of backend {self.alias!r}"
        )


def _pool_of(
    alias: str, url: str | None, app: str, prefix: str
) -> tuple[Workpool, Workflow[TaskCall, Any]]:
    """The pool of a backend's settings, shared by the backend's instances: Django makes
    one per thread, and a pool's connections serve every thread."""
    key = (alias, url, app, prefix)
    with _pools_lock:
        if key not in _pools:
            pool = Workpool(url, app=app, prefix=prefix)
            _pools[key] = (pool, define_runner(pool, alias))
        return _pools[key]
