"""Tasks of the test project, as a Django app defines them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workpool.contrib.django.compat import TaskContext, task


@task()
def add(a: int, b: int) -> int:
    return a + b


@task()
def explode(message: str) -> None:
    raise ValueError(message)


@task(queue_name="mail", priority=-20)
def send_welcome(address: str) -> dict[str, Any]:
    return {"sent_to": address, "lines": ("hello", "welcome")}  # a tuple, as JSON a list


@task(takes_context=True)
def whoami(context: TaskContext, label: str) -> dict[str, Any]:
    result = context.task_result
    return {"label": label, "id": result.id, "attempt": context.attempt}


@task()
async def shout(word: str) -> str:
    return word.upper()


@task()
def record(path: str, label: str) -> None:
    with Path(path).open("a") as log:
        log.write(label + "\n")


def not_a_task() -> None:
    """A plain function, for the test of a task that is not importable by its path."""
