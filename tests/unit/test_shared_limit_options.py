"""Shared limits at the API edge: pool.limit, limits= on workflows and queues, and the
gates and limiters the run builder gives their runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from workpool import ConfigurationError, Limit, RateLimit, RunContext, Workpool
from workpool.backends.base import GateSpec, RateLimitSpec
from workpool.builder import build_new_run
from workpool.options import parse_limit_gate


@pytest.fixture
def pool(tmp_path: Path) -> Workpool:
    return Workpool(f"sqlite:///{tmp_path}/p.db")


async def handler(ctx: RunContext, order: dict[str, Any]) -> None: ...


def test_two_workflows_in_two_queues_share_one_gate_and_one_limiter(pool: Workpool) -> None:
    partner = pool.limit("partner", max_concurrency=5, rate=RateLimit(100, per=timedelta(1)))
    one = pool.workflow("one", limits=[partner])(handler)
    two = pool.workflow("two", queue="other", limits=["partner"])(handler)
    runs = [
        build_new_run(pool.registry, pool.settings, workflow.prepare({}), 0.0)
        for workflow in (one, two)
    ]
    gate = "limit:7:partner:"
    assert [run.gates for run in runs] == [(GateSpec(gate, 5),)] * 2
    assert [run.rate_limits for run in runs] == [(RateLimitSpec(gate, 100, 86400.0),)] * 2
    assert [run.max_concurrency for run in runs] == [1, 1]  # their own gates stay
    assert parse_limit_gate(gate) == ("partner", "")


def test_a_keyed_limit_has_a_gate_per_key_and_a_queue_limit_covers_its_runs(
    pool: Workpool,
) -> None:
    tenant = pool.limit("tenant", max_concurrency=2, key=lambda order: order["tenant"])
    database = pool.limit("db", max_concurrency=10)
    pool.queue("reports", limits=[database])
    report = pool.workflow("report", queue="reports", limits=[tenant])(handler)
    run = build_new_run(pool.registry, pool.settings, report.prepare({"tenant": "a:b"}), 0.0)
    assert run.gates == (GateSpec("limit:6:tenant:a:b", 2), GateSpec("limit:2:db:", 10))
    assert parse_limit_gate("limit:6:tenant:a:b") == ("tenant", "a:b")
    assert parse_limit_gate("3:one:") is None


def test_bad_limits_are_refused_where_they_are_declared(pool: Workpool) -> None:
    with pytest.raises(ConfigurationError, match="limits nothing"):
        pool.limit("empty")
    with pytest.raises(ConfigurationError, match="max_concurrency"):
        pool.limit("zero", max_concurrency=0)
    with pytest.raises(ConfigurationError, match="give the key to the limit"):
        pool.limit("keyed", rate=RateLimit(1, key=lambda value: value))
    pool.limit("partner", max_concurrency=1)
    with pytest.raises(ConfigurationError, match="already defined"):
        pool.limit("partner", max_concurrency=2)
    with pytest.raises(ConfigurationError, match=r"got 'nope' \(defined: partner\)"):
        pool.workflow("one", limits=["nope"])(handler)
    stranger = Limit("partner", max_concurrency=1)  # same name, not this pool's
    with pytest.raises(ConfigurationError, match=r"defined with pool\.limit"):
        pool.workflow("two", limits=[stranger])(handler)
    pool.limit("tenant", max_concurrency=1, key=lambda order: order["tenant"])
    with pytest.raises(ConfigurationError, match="has a key"):
        pool.queue("reports", limits=["tenant"])


async def test_a_run_waiting_at_a_shared_limit_says_so(pool: Workpool) -> None:
    partner = pool.limit("partner", max_concurrency=1)
    call = pool.workflow("call", queue="held", limits=[partner], max_concurrency=None)(handler)
    await call.run({})
    waiting = await call.run({})
    run = await pool.get_run(waiting.id)
    assert run.waiting == "waiting: shared limit 'partner' is at max_concurrency 1"
    await pool.aclose()
