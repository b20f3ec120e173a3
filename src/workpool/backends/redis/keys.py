"""Every Redis key name of a workpool deployment, built from its prefix.

All keys start with the hash tag ``{<prefix>}``, so a Redis Cluster keeps them in one
slot and a Lua script may touch any of them. The Lua library ``lua/library/keys.lua``
builds the same names from that tag (passed as ``KEYS[1]``)::

    {p}:run:<run id>                       hash: one run, fields named as in RunRecord,
                                           plus lease_token and hooks (JSON text)
    {p}:queue:<queue>:ready                sorted set: queued run ids, score available_at
    {p}:queue:<queue>:scheduled            sorted set: scheduled run ids, score available_at
    {p}:queue:<queue>:leases               sorted set: running run ids, score lease expiry
    {p}:queue:<queue>:signal               list (at most one token): wakes idle workers
    {p}:workflow:<workflow>:cancelable     sorted set: the workflow's non-terminal runs
                                           without a cancel request, score created_at
    {p}:workflows                          set: every workflow name that has had a run
    {p}:idempotency:<len>:<workflow>:<key> string "<expires_at> <run id>", with a TTL;
                                           <len> is the workflow name's length in bytes
"""

from __future__ import annotations

from dataclasses import dataclass

from workpool.errors import ConfigurationError


def check_prefix(prefix: str) -> None:
    """Raise ConfigurationError unless ``prefix`` can serve as a hash tag."""
    if not prefix or "{" in prefix or "}" in prefix:
        raise ConfigurationError(
            f"invalid Redis key prefix {prefix!r}: use a non-empty name without braces"
        )


@dataclass(frozen=True, slots=True)
class Keys:
    """Key names under one prefix."""

    prefix: str

    @property
    def tag(self) -> str:
        """The hash tag every key starts with; passed to each script as ``KEYS[1]``."""
        return "{" + self.prefix + "}"

    def run(self, run_id: str) -> str:
        return f"{self.tag}:run:{run_id}"

    def ready(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:ready"

    def scheduled(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:scheduled"

    def leases(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:leases"

    def signal(self, queue: str) -> str:
        return f"{self.tag}:queue:{queue}:signal"

    def workflows(self) -> str:
        return f"{self.tag}:workflows"

    def workflow_cancelable(self, workflow: str) -> str:
        return f"{self.tag}:workflow:{workflow}:cancelable"

    def idempotency(self, workflow: str, key: str) -> str:
        length = len(workflow.encode())
        return f"{self.tag}:idempotency:{length}:{workflow}:{key}"
