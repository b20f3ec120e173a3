"""A task's call as a run stores it, and a run read back as Django's ``TaskResult``.

A Django task is one run of the backend's workflow (``WORKFLOW``), whose input names the
task by its module path with the call's arguments. The run's record is the result: its
status, times, output and error map onto ``TaskResult`` as ``STATUSES`` says.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from django.utils.module_loading import import_string
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict from 3.12 only

from workpool import errors
from workpool.contrib.django.compat import (
    InvalidTaskError,
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
)
from workpool.models import Run, RunError

WORKFLOW = "django_task"
"""The workflow that runs every Django task of a backend: one name, so any worker of the
backend runs any task, importing it by its path as it starts the run."""

STATUSES = {
    "scheduled": TaskResultStatus.READY,  # waits for run_after, or for a retry's backoff
    "queued": TaskResultStatus.READY,
    "paused": TaskResultStatus.READY,  # an operator paused it: it starts once resumed
    "running": TaskResultStatus.RUNNING,
    "needs_attention": TaskResultStatus.RUNNING,  # not ended: rerun or cancel it
    "suspended": TaskResultStatus.RUNNING,  # a Django task never suspends; for completeness
    "succeeded": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
    "canceled": TaskResultStatus.FAILED,  # Django has no canceled status
}


class TaskCall(TypedDict):
    """The input of a run of ``WORKFLOW``: which task, and its arguments."""

    task: str
    """The task's module path (``shop.tasks.send_welcome``): the worker imports it."""
    args: list[Any]
    kwargs: dict[str, Any]
    run_after: str | None
    """The task's ``run_after`` (ISO 8601), given back by ``get_result``'s task."""


def task_at(path: str) -> Task[Any, Any]:
    """The task that ``path`` names, or InvalidTaskError saying why it is not one."""
    try:
        found = import_string(path)
    except ImportError as error:
        raise InvalidTaskError(f"cannot import task {path!r}: {error}") from error
    if not isinstance(found, Task):
        raise InvalidTaskError(
            f"{path!r} is a {type(found).__name__}, not a Task: workpool's worker imports a "
            "task by its module path, so define it at module level under its function's "
            "name (@task on the def)"
        )
    return found


def task_result(run: Run, alias: str) -> TaskResult[Any]:
    """The TaskResult of ``run``, a run of ``WORKFLOW`` on backend ``alias``."""
    call: TaskCall = run.input
    run_after = call["run_after"]
    task = task_at(call["task"]).using(
        priority=run.priority,
        queue_name=run.queue,
        run_after=datetime.fromisoformat(run_after) if run_after else None,
        backend=alias,
    )
    result: TaskResult[Any] = TaskResult(
        task=task,
        id=run.id,
        status=STATUSES[run.status],
        enqueued_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        last_attempted_at=run.started_at,
        args=call["args"],
        kwargs=call["kwargs"],
        backend=alias,
        errors=errors_of(run),
        # workpool does not keep which worker made each attempt: one entry per attempt,
        # so that ``attempts`` (their number) reads right.
        worker_ids=[f"attempt {number}" for number in range(1, run.attempts + 1)],
    )
    if run.status == "succeeded":
        object.__setattr__(result, "_return_value", run.output)  # as Django's backends do
    return result


def errors_of(run: Run) -> list[TaskError]:
    """The run's error as Django's TaskError (workpool keeps the latest one only)."""
    if run.status == "canceled":
        reason = run.cancel_reason or "no reason given"
        return [
            TaskError(
                exception_class_path=f"{errors.__name__}.{errors.RunCanceledError.__name__}",
                traceback=f"run {run.id} was canceled: {reason}",
            )
        ]
    if run.error is None:
        return []
    text = run.error.traceback or f"{run.error.type}: {run.error.message}"
    return [TaskError(exception_class_path=exception_class_path(run.error), traceback=text)]


def exception_class_path(error: RunError) -> str:
    """Where the class of a stored error is defined (``shop.errors.OutOfStock``).

    The record keeps the class's name only; its traceback ends with the line that
    Python writes for the exception, ``module.Class: message`` (``Class`` alone for a
    builtin), found there by the message that follows it. An error stored without a
    traceback is workpool's own: its class if it has one (``RunTimeoutError``), else
    ``WorkpoolError`` (a lost worker's ``WorkerLostError`` is a name only).
    """
    suffix = f": {error.message}" if error.message else ""
    text = (error.traceback or "").rstrip("\n")
    end = text.rfind(error.type + suffix)
    tail = text[end + len(error.type) + len(suffix) :] if end >= 0 else None
    if tail is not None and (tail == "" or tail.startswith("\n")):
        start = text.rfind("\n", 0, end) + 1
        path = text[start : end + len(error.type)]
        dotted = all(part.isidentifier() for part in path.split("."))
        if dotted and (path == error.type or path.endswith("." + error.type)):
            return path if "." in path else f"builtins.{path}"
    for module in (errors, builtins):
        if isinstance(getattr(module, error.type, None), type):
            return f"{module.__name__}.{error.type}"
    if error.traceback is None:  # named by workpool, with no class (WorkerLostError)
        return f"{errors.__name__}.{errors.WorkpoolError.__name__}"
    return error.type
