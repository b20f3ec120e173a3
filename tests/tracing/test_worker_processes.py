"""Tracing across processes, on every backend: the test's span enqueues, real
``workpool worker`` processes execute and export their spans to a file; one trace from
the test's root span to the grandchild, also through a worker killed mid-run."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.processes import Workers
from tests.polling import wait_until
from tests.tracing import span_file, traced_app
from tests.tracing.trees import Recorded, ancestors, from_json, named, recorded, render
from workpool import Workpool

QUICK_LEASE = ("--lease-seconds", "1", "--renew-seconds", "0.2")
APP = "tests.tracing.traced_app:pool"


def exported(workers: Workers) -> list[Recorded]:
    return [from_json(document) for document in span_file.read(spans_path(workers))]


def spans_path(workers: Workers) -> Path:
    return Path(str(workers.log_path) + ".spans")


async def waits_for_approval(pool: Workpool, run_id: str) -> bool:
    run = await pool.get_run(run_id)
    return run.status == "suspended" and any(
        step.name == "approval" for step in await pool.get_steps(run_id)
    )


@pytest.mark.slow
async def test_one_trace_from_the_tests_span_to_the_grandchild_in_a_worker_process(
    workers: Workers, pool: Workpool, spans: InMemorySpanExporter
) -> None:
    workers.start(*QUICK_LEASE, app=APP)
    with trace.get_tracer("test").start_as_current_span("checkout") as root:
        [handle] = await pool.enqueue_many([traced_app.tree.order.prepare(42)])
    await wait_until(lambda: waits_for_approval(pool, handle.id), limit=60)
    await pool.send_event(handle.id, "approve", "ana")
    assert await pool.handle(handle.id).result(timeout=60) == "42 approved by ana"

    [sent] = [
        recorded(span)
        for span in spans.get_finished_spans()
        if span.kind.name == "PRODUCER" and span.name.startswith("send_event")
    ]
    mine = [recorded(span) for span in spans.get_finished_spans() if span.name != sent.name]
    theirs = exported(workers)
    every = mine + theirs
    tree = render(every)
    trace_id = f"{root.get_span_context().trace_id:032x}"
    assert {span.trace_id for span in every} == {trace_id}, tree
    assert {document["pid"] for document in span_file.read(spans_path(workers))} != {os.getpid()}
    executions = named(theirs, "process order")
    assert [span.attributes["workpool.attempt"] for span in executions] == [1, 2, 2, 2, 2], tree
    assert [span.links for span in executions] == [[], [], [], [], [sent.span_id]], tree
    [grandchild] = named(theirs, "process ledger")
    assert [span.name for span in reversed(ancestors(grandchild, every))] == [
        "checkout",
        "send order",
        "process order",
        "step charge",
        "send charge",
        "process charge",
        "step ledger",
        "send ledger",
    ], tree
    # No span left unended: every span's parent was exported, so it ended too.
    ids = {span.span_id for span in every}
    assert all(span.parent_id in ids for span in every if span is not root_of(every)), tree


@pytest.mark.slow
async def test_the_retry_after_a_killed_worker_joins_the_same_trace(
    workers: Workers, pool: Workpool, spans: InMemorySpanExporter
) -> None:
    doomed = workers.start(*QUICK_LEASE, app=APP)
    with trace.get_tracer("test").start_as_current_span("request") as root:
        [handle] = await pool.enqueue_many([traced_app.tree.stall.prepare(None)])
    await wait_until(lambda: started(workers, handle.id) >= 1, limit=60)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    workers.start(*QUICK_LEASE, app=APP)  # another worker, after the lease expired
    assert await pool.handle(handle.id).result(timeout=60) == "done"

    [send] = [recorded(span) for span in spans.get_finished_spans() if span.name == "send stall"]
    [execution] = named(exported(workers), "process stall")  # the killed one never ended
    assert execution.trace_id == f"{root.get_span_context().trace_id:032x}"
    assert execution.parent_id == send.span_id
    assert execution.attributes["workpool.attempt"] == 2
    assert execution.attributes["workpool.outcome"] == "succeeded"


def started(workers: Workers, run_id: str) -> int:
    return sum(1 for row in workers.lines("start") if row[0] == run_id)


def root_of(spans: list[Recorded]) -> Any:
    return next(span for span in spans if span.parent_id is None)
