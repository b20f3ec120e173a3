"""The recovery operations of ``RedisBackend`` (``contract/recovery.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from workpool.backends.base import BulkAction, BulkPage, FailureGroup, RunFilter
from workpool.backends.redis import codec
from workpool.backends.redis.connection import CommandLink
from workpool.backends.redis.keys import Keys
from workpool.backends.redis.reads import as_dict
from workpool.backends.redis.scripts import Scripts


class RedisRecovery:
    """Bulk actions (one script call per page) and failure groups (one HGETALL); a base
    of ``RedisBackend``, which sets the connection, keys and scripts they use."""

    _link: CommandLink
    _keys: Keys
    _scripts: Scripts

    async def act_on_runs(
        self,
        action: BulkAction,
        run_filter: RunFilter,
        cursor: str | None,
        limit: int,
        now: float,
        *,
        reason: str | None = None,
        new_ids: Sequence[str] = (),
    ) -> BulkPage:
        options: dict[str, object] = {
            "action": action,
            "statuses": list(run_filter.statuses),
            "limit": limit,
            "new_ids": list(new_ids),
        }
        given = {
            "cursor": cursor,
            "workflow": run_filter.workflow,
            "queue": run_filter.queue,
            "error_type": run_filter.error_type,
            "reason": reason,
        }
        options.update({key: value for key, value in given.items() if value is not None})
        for key in ("created_from", "created_before"):
            bound = getattr(run_filter, key)
            if bound is not None:
                options[key] = codec.seconds(bound)
        changed, next_cursor = await self._scripts.act_on_runs(
            codec.seconds(now), json.dumps(options)
        )
        return BulkPage(changed=changed, cursor=next_cursor)

    async def failure_groups(self) -> list[FailureGroup]:
        stored = await self._link.call("HGETALL", self._keys.failures(), repeatable=True)
        groups = []
        for group, value in as_dict(stored).items():
            workflow, error_type = json.loads(group)
            entry = json.loads(value)
            groups.append(
                FailureGroup(
                    workflow=workflow,
                    error_type=error_type,
                    count=int(entry["c"]),
                    first_seen=float(entry["f"]),
                    last_seen=float(entry["l"]),
                    example_run_id=entry.get("e"),
                )
            )
        return sorted(groups, key=lambda group: (group.workflow, group.error_type))
