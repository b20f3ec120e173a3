"""``workpool worker module:pool``: run a worker process until SIGTERM or SIGINT, or
``--processes N`` of them under a supervisor (``workpool.worker.supervisor``)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import signal
import sys
import threading
from datetime import timedelta
from pathlib import Path

import click

from workpool.app import Workpool
from workpool.cli.common import Seconds, WholeNumber
from workpool.errors import WorkpoolError
from workpool.logs import apply_level, configure_handler
from workpool.worker import Worker
from workpool.worker.supervisor import (
    EXIT_RECYCLE,
    EXIT_UNLOADABLE,
    SUPERVISOR_OPTION,
    Supervisor,
    SupervisorLink,
)

MAX_PROCESSES = 1024
"""Most worker processes one ``workpool worker --processes`` runs: more than a host
uses well (each process has its own event loop, connections and slots); a typo such
as 99999 would otherwise fork until the host gives out."""


def load_pool(target: str) -> Workpool:
    """Import ``module:attribute`` (from the current directory too) and return the pool."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise click.BadParameter(f"{target!r} is not of the form module:pool", param_hint="POOL")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise click.BadParameter(
            f"cannot import {module_name!r}: {error}\n{_where_modules_come_from()}"
        ) from error
    pools = sorted(name for name, value in vars(module).items() if isinstance(value, Workpool))
    found = f"the Workpool it defines: {', '.join(pools)}" if pools else "it defines no Workpool"
    if not hasattr(module, attribute):
        raise click.BadParameter(
            f"module {module_name!r} has no attribute {attribute!r}; {found}", param_hint="POOL"
        )
    pool = getattr(module, attribute)
    if not isinstance(pool, Workpool):
        raise click.BadParameter(
            f"{target!r} is a {type(pool).__name__}, not a Workpool; {found}", param_hint="POOL"
        )
    return pool


def _where_modules_come_from() -> str:
    """The hint for an import error: where the module was looked for."""
    path = os.environ.get("PYTHONPATH")
    return (
        f"The worker imports MODULE from the working directory ({Path.cwd()}) and from "
        f"PYTHONPATH ({path or 'not set'}) besides the installed packages: start it in "
        "your project's directory, or set PYTHONPATH to the directory that holds MODULE."
    )


@click.command()
@click.argument("pool_path", metavar="MODULE:POOL")
@click.option("--queues", default="default", show_default=True, help="Comma-separated queues.")
@click.option("--concurrency", default=10, show_default=True, type=WholeNumber(1))
@click.option("--lease-seconds", default=20.0, show_default=True, type=Seconds(1))
@click.option("--renew-seconds", default=2.0, show_default=True, type=Seconds(0.05))
@click.option("--shutdown-grace", default=30.0, show_default=True, type=Seconds(0))
@click.option(
    "--log-level",
    default=None,
    help="DEBUG, INFO, WARNING or ERROR (default: $WORKPOOL_LOG_LEVEL, else INFO).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON object per line, with run events' fields, for log tools.",
)
@click.option(
    "--metrics-port",
    type=WholeNumber(1, 65535),
    default=None,
    help="Serve Prometheus metrics over HTTP at /metrics on this port (default: none).",
)
@click.option(
    "--metrics-host",
    default="0.0.0.0",
    show_default=True,
    help="Address the metrics server binds (with --metrics-port).",
)
@click.option(
    "--metrics-refresh-seconds",
    default=15.0,
    show_default=True,
    type=Seconds(0.1),
    help="How often the queue gauges are read from the backend (with --metrics-port).",
)
@click.option(
    "--processes",
    default=1,
    show_default=True,
    type=WholeNumber(1, MAX_PROCESSES),
    help="Worker processes, each with --concurrency slots, under one supervisor that "
    "starts again one that dies (1: this process is the worker).",
)
@click.option(
    "--max-runs-per-process",
    type=WholeNumber(1),
    default=None,
    help="Replace a worker process by a fresh one once it has started this many runs "
    "(they finish first); implies a supervisor, even for one process (default: never).",
)
@click.option(
    "--claim-ahead/--no-claim-ahead",
    default=True,
    show_default=True,
    help="While a queue has a backlog, claim a few runs ahead of free slots (faster on "
    "short runs); --no-claim-ahead: strict priority order under gates and rate limits.",
)
@click.option(SUPERVISOR_OPTION, "supervisor_pipes", hidden=True, default=None)
def worker(
    pool_path: str,
    queues: str,
    concurrency: int,
    lease_seconds: float,
    renew_seconds: float,
    shutdown_grace: float,
    log_level: str | None,
    log_format: str,
    metrics_port: int | None,
    metrics_host: str,
    metrics_refresh_seconds: float,
    processes: int,
    max_runs_per_process: int | None,
    claim_ahead: bool,
    supervisor_pipes: str | None,
) -> None:
    """Run a worker for the pool MODULE:POOL until SIGTERM or SIGINT."""
    configure_handler(log_format)
    if supervisor_pipes is None and (processes > 1 or max_runs_per_process is not None):
        apply_level(log_level)
        sys.exit(_supervise(click.get_current_context(), processes, shutdown_grace))
    link = None if supervisor_pipes is None else SupervisorLink.parse(supervisor_pipes)
    try:
        pool = load_pool(pool_path)
    except click.BadParameter as error:
        if link is None:
            raise
        error.show()  # then tell the supervisor that no process can start
        sys.exit(EXIT_UNLOADABLE)
    apply_level(log_level)  # after the pool: the command line wins over its option
    try:
        process = pool.worker(
            queues=[queue.strip() for queue in queues.split(",") if queue.strip()],
            concurrency=concurrency,
            lease=timedelta(seconds=lease_seconds),
            renew_every=timedelta(seconds=renew_seconds),
            shutdown_grace=timedelta(seconds=shutdown_grace),
            max_runs=max_runs_per_process,
            claim_ahead=claim_ahead,
            recycle_on_abandoned_thread=link is not None,  # the supervisor starts another
        )
        if metrics_port is not None:
            from workpool.worker.metrics import WorkerMetrics

            process.metrics = WorkerMetrics(
                metrics_port, host=metrics_host, refresh_every=metrics_refresh_seconds
            )
        asyncio.run(_serve(pool, process, link))
    except WorkpoolError as error:
        click.echo(f"workpool: {error}", err=True)
        sys.exit(2)
    status = 0 if process.recycle_reason is None else EXIT_RECYCLE
    _exit_past_stuck_handlers(status)
    sys.exit(status)


def _exit_past_stuck_handlers(status: int) -> None:
    """Exit now if sync handlers still run in threads after the shutdown grace.

    Their leases were handed back and every outcome written; only Python's join of
    executor threads at exit would keep the process alive until they return.
    """
    if any(
        thread.name.startswith("workpool-handler") and thread.is_alive()
        for thread in threading.enumerate()
    ):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


async def _serve(pool: Workpool, process: Worker, link: SupervisorLink | None) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, process.stop)
    reporter = None
    if link is not None:  # a process of --processes: it tells the supervisor it serves
        link.watch(process.stop)
        reporter = asyncio.create_task(_report_ready(process, link))
    try:
        await process.run()
    finally:
        if reporter is not None:
            reporter.cancel()
        if link is not None:
            link.unwatch()
        await pool.aclose()


async def _report_ready(process: Worker, link: SupervisorLink) -> None:
    await process.started.wait()
    link.report_ready()


SUPERVISOR_ONLY = ("processes", "supervisor_pipes")
"""The options its worker processes are not given (the supervisor adds its own pipes)."""


def _supervise(ctx: click.Context, processes: int, shutdown_grace: float) -> int:
    """Run ``processes`` worker processes with this command's options; an exit status."""
    metrics_port = ctx.params["metrics_port"]
    if metrics_port is not None and metrics_port + processes - 1 > 65535:
        raise click.BadParameter(
            f"process {processes} would serve metrics on port {metrics_port + processes - 1} "
            "(process i serves --metrics-port + i - 1); choose a lower port",
            param_hint="--metrics-port",
        )

    def command(index: int) -> list[str]:
        arguments = [sys.executable, "-m", "workpool", "worker", ctx.params["pool_path"]]
        for param in ctx.command.params:
            value = ctx.params.get(param.name or "")
            passed = isinstance(param, click.Option) and param.name not in SUPERVISOR_ONLY
            if not passed or value is None:
                continue
            if param.name == "metrics_port":
                value += index - 1
            if isinstance(param, click.Option) and param.is_flag:
                arguments.append(param.opts[0] if value else param.secondary_opts[0])
            else:
                arguments += [param.opts[0], str(value)]
        return arguments

    supervisor = Supervisor(command, processes, shutdown_grace=shutdown_grace)
    return asyncio.run(supervisor.run())
