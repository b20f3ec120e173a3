"""Shared limits as they stand: each limit's places held and runs waiting, with the
workflows it covers (``Workpool.limit_usage``, ``workpool limits``, the dashboard).

A shared limit's concurrency is a gate per key (``Limit.gate``); this module adds up the
gates of each limit that ``Backend.get_gates`` reads, and takes what each limit is from
the pool's own definitions, else from the registry (what the workers of every app
define).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workpool.backends.base import GateUsage
from workpool.models import RegisteredWorkflow
from workpool.options import Limit, parse_limit_gate

GATE_PREFIX = "limit:"
"""The start of every shared limit's gate id (``Limit.gate``)."""


@dataclass(frozen=True, slots=True)
class LimitUsage:
    """One shared limit now (``Workpool.limit_usage``)."""

    name: str
    max_concurrency: int | None
    """Runs admitted at once (per key, if keyed); None: it limits only the rate."""
    rate: tuple[int, float] | None
    """(count, per seconds): starts per period; None: no rate."""
    keyed: bool
    in_use: int
    """Runs holding a place now (queued to be claimed, or running), every key together."""
    waiting: int
    """Runs waiting at it now, every key together (a run under several limits waits at
    the first that was full when it was last examined)."""
    keys: int
    """Keys with runs in use or waiting (1 for an unkeyed limit in use)."""
    workflows: tuple[str, ...]
    """The registered workflows whose runs count against it, by name."""


def limit_usage(
    gates: Sequence[GateUsage],
    registered: Sequence[RegisteredWorkflow],
    declared: Mapping[str, Limit],
) -> list[LimitUsage]:
    """Every limit declared here, registered by a workflow or holding runs, by name."""
    described: dict[str, dict[str, Any]] = {}
    covered: dict[str, list[str]] = {}
    for workflow in registered:
        for item in workflow.limits or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                described.setdefault(item["name"], item)
                covered.setdefault(item["name"], []).append(workflow.name)
    for limit in declared.values():
        described[limit.name] = limit.to_json()
    used: dict[str, list[GateUsage]] = {}
    for gate in gates:
        parsed = parse_limit_gate(gate.gate)
        if parsed is not None:
            used.setdefault(parsed[0], []).append(gate)
    return [
        _usage(name, described.get(name, {}), used.get(name, []), covered.get(name, []))
        for name in sorted(described.keys() | used.keys())
    ]


def _usage(
    name: str, described: Mapping[str, Any], gates: Sequence[GateUsage], workflows: list[str]
) -> LimitUsage:
    rate = described.get("rate")
    limit = described.get("max_concurrency")
    return LimitUsage(
        name=name,
        max_concurrency=limit if isinstance(limit, int) else None,
        rate=(int(rate["count"]), float(rate["per"])) if isinstance(rate, dict) else None,
        keyed=bool(described.get("keyed", False)),
        in_use=sum(gate.admitted for gate in gates),
        waiting=sum(gate.waiting for gate in gates),
        keys=len(gates),
        workflows=tuple(sorted(set(workflows))),
    )
