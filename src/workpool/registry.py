"""Registry: the workflows and queues a pool defines, by name.

``@pool.workflow`` and ``pool.queue(...)`` fill it; the run builder, the engine and the
worker read it. It holds definitions only: no backend, no configuration (that is
``Settings``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from workpool.backends.base import WorkflowInfo
from workpool.definitions import Workflow
from workpool.errors import ConfigurationError, UnknownWorkflowError
from workpool.options import Limit, RateLimit
from workpool.serialization import to_json
from workpool.settings import Settings
from workpool.validation import check_count, check_name, check_priority_aging


class Registry:
    """The workflows of one pool, and the defaults of the queues it declared."""

    def __init__(self) -> None:
        self._workflows: dict[str, Workflow[Any, Any]] = {}
        self._queue_defaults: dict[str, int | None] = {}
        self._queue_rate_limits: dict[str, RateLimit] = {}
        self._queue_aging: dict[str, float] = {}
        self._limits: dict[str, Limit] = {}
        self._queue_limits: dict[str, tuple[Limit, ...]] = {}

    def __len__(self) -> int:
        return len(self._workflows)

    def check_free(self, name: str) -> None:
        """ConfigurationError if a workflow of that name is defined."""
        if name in self._workflows:
            raise ConfigurationError(f"a workflow named {name!r} is already defined")

    def add(self, workflow: Workflow[Any, Any]) -> None:
        """Define a workflow; ConfigurationError if its name is taken."""
        self.check_free(workflow.name)
        self._workflows[workflow.name] = workflow

    def declare_queue(
        self,
        name: str,
        max_parallelism: int | None,
        rate_limit: RateLimit | None,
        priority_aging: timedelta | float | None = None,
    ) -> None:
        """Record a queue's defaults (see ``Workpool.queue``)."""
        queue = check_name(name, what="queue name")
        aging = None
        if priority_aging is not None:
            aging = check_priority_aging(priority_aging, what=f"queue {queue!r}: priority_aging")
        self._queue_defaults[queue] = check_parallelism(max_parallelism)
        if aging is not None:
            self._queue_aging[queue] = aging
        else:
            self._queue_aging.pop(queue, None)
        if rate_limit is not None:
            if rate_limit.key is not None:
                raise ConfigurationError(
                    f"queue {queue!r}: a queue's rate_limit has no key (keys are computed "
                    "from a workflow's input); put a keyed RateLimit on the workflow"
                )
            self._queue_rate_limits[queue] = rate_limit

    def declare_limit(self, limit: Limit) -> Limit:
        """Define a shared limit; ConfigurationError if its name is taken."""
        check_name(limit.name, what="limit name")
        if limit.name in self._limits:
            raise ConfigurationError(f"a limit named {limit.name!r} is already defined")
        self._limits[limit.name] = limit
        return limit

    def resolve_limits(
        self, limits: Sequence[Limit | str] | Limit | str, what: str
    ) -> tuple[Limit, ...]:
        """The shared limits named (or given) by a workflow or queue, each once, in
        order; ConfigurationError for one not defined on this pool."""
        items: list[object] = [limits] if isinstance(limits, str | Limit) else list(limits)
        resolved: dict[str, Limit] = {}
        for item in items:
            limit = None
            if isinstance(item, Limit) and self._limits.get(item.name) is item:
                limit = item
            elif isinstance(item, str):
                limit = self._limits.get(item)
            if limit is None:
                known = ", ".join(sorted(self._limits)) or "none"
                raise ConfigurationError(
                    f"{what}: limits takes limits defined with pool.limit(...) or their "
                    f"names, got {item!r} (defined: {known})"
                )
            resolved[limit.name] = limit
        return tuple(resolved.values())

    def declare_queue_limits(self, queue: str, limits: tuple[Limit, ...]) -> None:
        """Record the shared limits every run of ``queue`` enqueued here counts against."""
        for limit in limits:
            if limit.key is not None:
                raise ConfigurationError(
                    f"queue {queue!r}: limit {limit.name!r} has a key, computed from a "
                    "workflow's input; give it to the workflows instead"
                )
        self._queue_limits[queue] = limits

    @property
    def limits(self) -> Mapping[str, Limit]:
        """The shared limits, by name."""
        return MappingProxyType(self._limits)

    def limits_of(self, workflow: Workflow[Any, Any] | None, queue: str) -> tuple[Limit, ...]:
        """The shared limits of a run of ``workflow`` in ``queue``: its workflow's, then
        its queue's, each once."""
        own = workflow.limits if workflow is not None else ()
        return own + tuple(limit for limit in self._queue_limits.get(queue, ()) if limit not in own)

    @property
    def workflows(self) -> Mapping[str, Workflow[Any, Any]]:
        """The workflows, by name."""
        return MappingProxyType(self._workflows)

    @property
    def queue_defaults(self) -> Mapping[str, int | None]:
        """The declared queues, and their default ``max_parallelism``."""
        return MappingProxyType(self._queue_defaults)

    @property
    def queue_rate_limits(self) -> Mapping[str, RateLimit]:
        """The declared queues' rate limits, by queue."""
        return MappingProxyType(self._queue_rate_limits)

    @property
    def queue_priority_aging(self) -> Mapping[str, float]:
        """The declared queues' ``priority_aging``, in seconds, by queue (absent: strict)."""
        return MappingProxyType(self._queue_aging)

    def get_workflow(self, name: str) -> Workflow[Any, Any]:
        """The workflow of that name, or UnknownWorkflowError."""
        try:
            return self._workflows[name]
        except KeyError:
            known = ", ".join(sorted(self._workflows)) or "none"
            raise UnknownWorkflowError(
                f"no workflow named {name!r} is defined on this pool (defined: {known})"
            ) from None

    def records(self, settings: Settings) -> list[WorkflowInfo]:
        """The definitions as registry records (stored by workers at start)."""
        if not settings.app:
            raise ConfigurationError(
                "starting a worker needs Workpool(app='<name>'): the application that "
                "defines these workflows, so that only its own workers remove its stale "
                "definitions from the registry"
            )
        records = []
        for workflow in self._workflows.values():
            retry = settings.resolve_retry(None, workflow.retries)
            records.append(
                WorkflowInfo(
                    name=workflow.name,
                    app=settings.app,
                    queue=workflow.queue,
                    max_concurrency=workflow.max_concurrency,
                    retry=json.dumps(retry.to_json()) if retry is not None else None,
                    cron=to_json(
                        [
                            trigger.to_json(trigger_id)
                            for trigger, trigger_id in zip(
                                workflow.cron, workflow.cron_ids, strict=True
                            )
                        ],
                        what=f"cron triggers of workflow {workflow.name!r}",
                    ),
                    updated_at=0.0,
                    rate_limits=json.dumps(
                        registered_rate_limits(
                            workflow.rate_limit, self._queue_rate_limits.get(workflow.queue)
                        )
                    ),
                    limits=json.dumps(
                        [limit.to_json() for limit in self.limits_of(workflow, workflow.queue)]
                    ),
                )
            )
        return records


def registered_rate_limits(
    own: RateLimit | None, of_queue: RateLimit | None
) -> list[dict[str, Any]]:
    """The rate limits a workflow's runs get, as the registry shows them (a key
    function is code: only whether there is one is recorded)."""
    return [
        {"scope": scope, "count": limit.count, "per": limit.seconds, "keyed": limit.key is not None}
        for scope, limit in (("workflow", own), ("queue", of_queue))
        if limit is not None
    ]


def check_parallelism(limit: int | None) -> int | None:
    """A queue's ``max_parallelism``, checked: a whole number from 0 (starts nothing)
    to MAX_COUNT, or None (no limit)."""
    if limit is None:
        return None
    return check_count(limit, what="max_parallelism", none="no limit")
