"""A web request enqueues a run: the server span that the OpenTelemetry ASGI
instrumentation makes for the request is the ancestor of every execution of the run,
its child and its grandchild (on every backend)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from tests.tracing.test_tracing import suspended_on_event
from tests.tracing.traced_app import define
from tests.tracing.trees import ancestors, recorded, render
from workpool import Workpool


def shop(pool: Workpool) -> Any:
    """A Starlette app whose POST /checkout/<amount> enqueues an order, instrumented as a
    user would (``OpenTelemetryMiddleware``)."""
    order = define(pool).order

    async def checkout(request: Request) -> JSONResponse:
        handle = await order.run(int(request.path_params["amount"]))
        return JSONResponse({"run_id": handle.id})

    return OpenTelemetryMiddleware(
        Starlette(routes=[Route("/checkout/{amount}", checkout, methods=["POST"])])
    )


async def post(
    app: Any, path: str, body: bytes = b"", headers: Sequence[tuple[bytes, bytes]] = ()
) -> tuple[int, bytes]:
    """One POST request of ``body`` through the ASGI app, as a server hands it over."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"shop.example"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    [start] = [message for message in sent if message["type"] == "http.response.start"]
    body = b"".join(message.get("body", b"") for message in sent if "body" in message)
    return start["status"], body


async def test_the_request_span_is_the_ancestor_of_every_execution(
    pool: Workpool, spans: InMemorySpanExporter
) -> None:
    status, body = await post(shop(pool), "/checkout/7")
    assert status == 200
    run_id = json.loads(body)["run_id"]
    async with fast_worker(pool):
        await wait_until(lambda: suspended_on_event(pool, run_id), limit=30)
        await pool.send_event(run_id, "approve", "ana")
        assert await pool.handle(run_id).result(timeout=30) == "7 approved by ana"
    every = [recorded(span) for span in spans.get_finished_spans()]
    [server] = [span for span in every if span.kind == "SERVER"]
    executions = [span for span in every if span.kind == "CONSUMER"]
    names = {span.name for span in executions}
    assert names == {"process order", "process charge", "process ledger"}, render(every)
    assert all(server in ancestors(span, every) for span in executions), render(every)
