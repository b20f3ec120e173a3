"""The workflow that runs Django tasks on a worker: one run, one task call."""

from __future__ import annotations

from typing import Any

from django.db import close_old_connections

from workpool.app import Workpool
from workpool.contrib.django.compat import TaskContext, normalize_json
from workpool.contrib.django.results import WORKFLOW, TaskCall, task_at, task_result
from workpool.definitions import Workflow
from workpool.engine.context import RunContext


def define_runner(pool: Workpool, alias: str) -> Workflow[TaskCall, Any]:
    """Define on ``pool`` the workflow that runs the tasks of backend ``alias``.

    It is a plain ``def``, so each task runs in a thread of its own (an async task on
    an event loop of that thread, as ``Task.call`` does), where it may use Django's
    database connections: those the thread holds are closed before and after the task
    if they are unusable or past ``CONN_MAX_AGE``, as Django does around a request.
    No limit on how many run at once (the worker's ``--concurrency`` bounds them) and
    one attempt, as Django's Tasks API has no retries.
    """

    def django_task(ctx: RunContext, call: TaskCall) -> Any:
        close_old_connections()
        try:
            task = task_at(call["task"])
            args, kwargs = call["args"], call["kwargs"]
            if task.takes_context:
                result = task_result(pool.get_run_sync(ctx.run_id), alias)
                value = task.call(TaskContext(task_result=result), *args, **kwargs)
            else:
                value = task.call(*args, **kwargs)
            return normalize_json(value)
        finally:
            close_old_connections()

    register = pool.workflow(WORKFLOW, max_concurrency=None, retries=False)
    workflow: Workflow[TaskCall, Any] = register(django_task)
    return workflow
