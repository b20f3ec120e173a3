"""Queue settings (``set_queue.lua``'s arguments, a settings hash) and the workflow
registry's records (``sync_registry.lua``, ``restore_registry.lua``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from types import EllipsisType

from workpool.backends.base import QueueSettings, WorkflowInfo
from workpool.backends.redis.codec.times import seconds
from workpool.errors import CorruptRecordError


def encode_queue_change(
    max_parallelism: int | EllipsisType | None, paused: bool | None
) -> tuple[str, str]:
    """The max_parallelism and paused arguments of ``set_queue.lua``: 'keep' leaves a
    setting unchanged, 'none' removes the limit; a limit must be a whole number >= 0."""
    if max_parallelism is ...:
        limit = "keep"
    elif max_parallelism is None:
        limit = "none"
    elif isinstance(max_parallelism, bool) or max_parallelism < 0:
        raise ValueError(
            f"max_parallelism must be a whole number >= 0 or None, not {max_parallelism!r}"
        )
    else:
        limit = str(int(max_parallelism))
    return limit, "keep" if paused is None else ("1" if paused else "0")


def decode_settings(queue: str, max_parallelism: str | None, paused: str | None) -> QueueSettings:
    """QueueSettings from a settings hash's two fields (both None: no settings)."""
    if max_parallelism is None:
        limit = None
    elif max_parallelism.isdigit():
        limit = int(max_parallelism)
    else:
        raise CorruptRecordError(
            f"queue {queue}: stored max_parallelism is not a whole number: {max_parallelism!r}"
        )
    return QueueSettings(name=queue, max_parallelism=limit, paused=paused == "1")


def encode_workflow(workflow: WorkflowInfo, now: float) -> str:
    """The registry record of a workflow, as sync_registry.lua stores it."""
    return json.dumps(
        {
            "app": workflow.app,
            "queue": workflow.queue,
            "max_concurrency": workflow.max_concurrency,
            "retry": workflow.retry,
            "cron": workflow.cron,
            "rate_limits": workflow.rate_limits,
            "limits": workflow.limits,
            "updated_at": seconds(now),
        },
        ensure_ascii=False,
    )


def encode_registry(app: str, workflows: Sequence[WorkflowInfo], now: float) -> list[str]:
    """Name, record pairs of ``app``'s workflows, flat, as ``sync_registry.lua`` and
    ``restore_registry.lua`` take them."""
    return [
        part
        for workflow in workflows
        for part in (workflow.name, encode_workflow(replace(workflow, app=app), now))
    ]


def decode_workflow(name: str, text: str) -> WorkflowInfo:
    """A WorkflowInfo from its registry record, or CorruptRecordError."""
    try:
        record = json.loads(text)
        limit = record["max_concurrency"]
        rate_limits = record.get("rate_limits")  # absent: registered by an earlier version
        limits = record.get("limits")
        for what, value in (("rate_limits", rate_limits), ("limits", limits)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{what} is {type(value).__name__}, not JSON text")
        return WorkflowInfo(
            name=name,
            app=str(record["app"]),
            queue=str(record["queue"]),
            max_concurrency=None if limit is None else int(limit),
            retry=record["retry"],
            cron=str(record["cron"]),
            updated_at=float(record["updated_at"]),
            rate_limits=rate_limits,
            limits=limits,
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CorruptRecordError(
            f"workflow {name!r}: its registry record is unreadable ({error}): {text!r}"
        ) from error
