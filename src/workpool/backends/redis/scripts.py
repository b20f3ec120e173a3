"""The Lua scripts: loaded once per backend, called by SHA, one typed wrapper each.

Each operation script is ``lua/<operation>.lua``; the files of ``lua/library/`` (key
names, index upkeep, terminal transitions) are prepended to every one of them, so each
call is still one self-contained script. Times travel as decimal strings (``repr`` of
a float) so neither Lua nor Redis rounds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workpool.errors import BackendUnavailableError

LIBRARY = ("keys", "waiting", "ending")
"""Library files, in dependency order."""

OPERATIONS = ("enqueue", "claim", "renew", "finish", "release", "cancel", "cancel_many")

ClaimedRow = list[Any]
"""[run id, token, attempt, workflow, queue, input, retry | None, created_at, available_at]"""


def read_lua(relative_path: str) -> str:
    """The text of a file under ``lua/``."""
    return resources.files(__package__).joinpath("lua", relative_path).read_text("utf-8")


def script_source(operation: str) -> str:
    """The full source sent to Redis for one operation: library, then the operation."""
    parts = [read_lua(f"library/{name}.lua") for name in LIBRARY]
    parts.append(read_lua(f"{operation}.lua"))
    return "\n".join(parts)


async def run_script(script: AsyncScript, tag: str, args: Sequence[str | int]) -> Any:
    """Call a script by SHA (loading it if the server lacks it); map network errors."""
    try:
        return await script(keys=[tag], args=args)
    except (RedisConnectionError, RedisTimeoutError) as error:
        raise BackendUnavailableError(f"lost contact with Redis: {error}") from error


class Scripts:
    """The registered scripts of one backend, bound to its key prefix tag."""

    def __init__(self, client: Redis, tag: str) -> None:
        self._client = client
        self._tag = tag
        self._enqueue = client.register_script(script_source("enqueue"))
        self._claim = client.register_script(script_source("claim"))
        self._renew = client.register_script(script_source("renew"))
        self._finish = client.register_script(script_source("finish"))
        self._release = client.register_script(script_source("release"))
        self._cancel = client.register_script(script_source("cancel"))
        self._cancel_many = client.register_script(script_source("cancel_many"))

    async def load(self) -> None:
        """Load every script on the server now (one pipelined round trip), so the first
        call of each is a plain EVALSHA. A later SCRIPT FLUSH or restart is survived
        anyway: a call that meets NOSCRIPT loads its script and retries."""
        scripts = [getattr(self, f"_{operation}") for operation in OPERATIONS]
        async with self._client.pipeline(transaction=False) as pipe:
            for script in scripts:
                pipe.script_load(script.script)
            await pipe.execute()

    async def enqueue(self, now: str, runs_json: str) -> list[tuple[str, bool]]:
        """(run id, created) per run, in order."""
        flat = await run_script(self._enqueue, self._tag, [now, runs_json])
        return [(str(flat[i]), bool(flat[i + 1])) for i in range(0, len(flat), 2)]

    async def claim(
        self,
        now: str,
        lease_expires_at: str,
        worker_id: str,
        limit: int,
        max_lease_losses: int,
        queues: Sequence[str],
    ) -> tuple[str | None, list[ClaimedRow]]:
        """(next wake time or None, claimed rows)."""
        args: list[str | int] = [now, lease_expires_at, worker_id, limit, max_lease_losses]
        args.extend(queues)
        reply = await run_script(self._claim, self._tag, args)
        return reply[0], list(reply[1:])

    async def renew(
        self, lease_expires_at: str, leases: Sequence[tuple[str, str]]
    ) -> tuple[list[str], list[str]]:
        """(lost run ids, cancel-requested run ids)."""
        args = [lease_expires_at, *(part for lease in leases for part in lease)]
        lost, cancel_requested = await run_script(self._renew, self._tag, args)
        return list(lost), list(cancel_requested)

    async def finish(self, now: str, finishes_json: str) -> list[bool]:
        """Whether each finish was applied."""
        applied = await run_script(self._finish, self._tag, [now, finishes_json])
        return [bool(flag) for flag in applied]

    async def release(self, now: str, leases: Sequence[tuple[str, str]]) -> int:
        """How many leases were held and released."""
        args = [now, *(part for lease in leases for part in lease)]
        return int(await run_script(self._release, self._tag, args))

    async def cancel(self, now: str, run_id: str, reason: str | None) -> str:
        """The CancelResult string."""
        args = [now, run_id] if reason is None else [now, run_id, reason]
        return str(await run_script(self._cancel, self._tag, args))

    async def cancel_many(self, now: str, options_json: str) -> int:
        """How many runs were canceled or cancel-requested."""
        return int(await run_script(self._cancel_many, self._tag, [now, options_json]))
