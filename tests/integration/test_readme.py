"""Every ```python block of README.md runs as printed.

How a block runs is declared by HTML comments (invisible on GitHub) on the lines just
above its fence:

- ``<!-- file: shop.py -->``: the block is a whole file; a test of its own writes it
  out and runs it as its comments say (the first example: with ``workpool worker``).
- ``<!-- continues: NAME, ... -->``: the block builds on those blocks, which run first
  (with the blocks they continue), in the same namespace.
- ``<!-- example: NAME -->``: names the block. Otherwise a block is named by the anchor
  of its section (``defining-workflows``), with ``-2``, ``-3`` for a section's later
  blocks.
- ``<!-- not run: REASON -->``: only compiled. ``NOT_RUN`` below lists such blocks
  and why, so none is skipped without this file saying so.
- ``<!-- store: postgres -->``: the block runs with $WORKPOOL_URL naming a fresh schema
  of the test session's PostgreSQL database, and $DATABASE_URL naming that database (the
  application's own connection).

Every other block is executed in a fresh namespace, ``await`` allowed at top level (as
in ``python -m asyncio``), in a temporary directory with $WORKPOOL_URL naming a SQLite
file there. When the blocks it continues define ``pool`` with an app, a worker of that
pool serves its workflows' queues while the block runs, so the runs the block waits for
complete. And every name a block uses is defined by it or by the blocks it continues
(ruff's undefined-name check on each chain).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.postgres_server import PostgresServer
from workpool import Workpool

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

NOT_RUN: dict[str, str] = {
    "tracing": "it sets the process's tracer provider, which OpenTelemetry allows once per "
    "process; tests/tracing/traced_app.py does the same in the tests' worker processes",
}
"""Blocks marked ``not run``, each with the reason: keep this empty, or say why."""

FILES = {"shop.py", "django/mysite/settings.py", "django/orders/tasks.py", "django/checkout.py"}
"""Blocks marked ``file``: each has a test of its own (below; the Django project's in
tests/contrib/test_django_readme.py)."""

MARKER = re.compile(r"^<!--\s*(example|continues|file|not run|store):\s*(.*?)\s*-->$")
START_DEADLINE = 30.0
"""Seconds a worker process gets to log its start line."""


@dataclass(frozen=True)
class Block:
    """One ```python block of the README and what its markers declare."""

    name: str
    line: int
    """README line of the block's first line of code."""
    source: str
    continues: tuple[str, ...] = ()
    file: str | None = None
    not_run: str | None = None
    store: str | None = None
    """``postgres``: the block needs PostgreSQL (else it runs on SQLite)."""

    def compiled(self) -> Any:
        """The block compiled at its README line numbers, top-level ``await`` allowed."""
        return compile(
            "\n" * (self.line - 1) + self.source,
            str(README),
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )


def anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def markers(lines: list[str], fence: int) -> dict[str, str]:
    """The ``key: value`` comments on the lines just above line index ``fence``."""
    found: dict[str, str] = {}
    index = fence - 1
    while index >= 0 and lines[index].startswith("<!--"):
        match = MARKER.match(lines[index].strip())
        if match is None:
            raise ValueError(f"README.md:{index + 1}: unknown marker {lines[index]!r}")
        found[match.group(1)] = match.group(2)
        index -= 1
    return found


def parse(text: str) -> list[Block]:
    """The README's ```python blocks, named, with their markers."""
    lines = text.splitlines()
    blocks: list[Block] = []
    section, in_section, index = "", 0, 0
    while index < len(lines):
        line = lines[index]
        if re.match(r"#{1,6} ", line):
            section, in_section = anchor(line.lstrip("#")), 0
        if not line.startswith("```"):
            index += 1
            continue
        info = line[3:].strip()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        if info.lower().startswith("py") and info != "python":
            raise ValueError(f"README.md:{index + 1}: write ```python, not ```{info}")
        if info == "python":
            in_section += 1
            declared = markers(lines, index)
            default = section if in_section == 1 else f"{section}-{in_section}"
            continues = declared.get("continues", "")
            blocks.append(
                Block(
                    name=declared.get("example", default),
                    line=index + 2,
                    source="\n".join(lines[index + 1 : end]) + "\n",
                    continues=tuple(name.strip() for name in continues.split(",") if name),
                    file=declared.get("file"),
                    not_run=declared.get("not run"),
                    store=declared.get("store"),
                )
            )
        index = end + 1
    return blocks


BLOCKS = parse(README.read_text())
BY_NAME = {block.name: block for block in BLOCKS}
RUN = [block.name for block in BLOCKS if block.file is None and block.not_run is None]


def chain(block: Block) -> list[Block]:
    """The blocks ``block`` continues, transitively, in order, then ``block``."""
    ordered: list[Block] = []

    def visit(current: Block, path: tuple[str, ...]) -> None:
        for name in current.continues:
            assert name in BY_NAME, f"{current.name} continues {name!r}: no such block"
            assert name not in path, f"{current.name} continues itself: {path}"
            visit(BY_NAME[name], (*path, name))
        if current not in ordered:
            ordered.append(current)

    visit(block, (block.name,))
    return ordered


async def execute(block: Block, namespace: dict[str, Any]) -> None:
    """Run ``block`` in ``namespace``, as ``python -m asyncio`` runs what is typed in."""
    result = eval(block.compiled(), namespace)
    if inspect.iscoroutine(result):
        await result


@contextlib.asynccontextmanager
async def serving(namespace: dict[str, Any]) -> AsyncIterator[None]:
    """A worker of the namespace's ``pool`` on its workflows' queues, if it has an app."""
    pool = namespace.get("pool")
    if not isinstance(pool, Workpool) or not pool.app:
        yield
        return
    queues = sorted({record.queue for record in pool.registry_records()}) or ["default"]
    async with pool.worker(queues=queues, concurrency=4):
        yield


async def close_pools(namespace: dict[str, Any]) -> None:
    for value in namespace.values():
        if isinstance(value, Workpool):
            await value.aclose()
            value.close()


def test_every_block_is_run_or_says_why() -> None:
    assert len(BLOCKS) >= 10, "the README's python blocks were not found"
    assert len(BY_NAME) == len(BLOCKS), "two blocks have the same name: add <!-- example: -->"
    assert {b.name: b.not_run for b in BLOCKS if b.not_run is not None} == NOT_RUN
    assert {block.file for block in BLOCKS if block.file is not None} == FILES
    for block in BLOCKS:
        chain(block)  # every name it continues exists, and no block continues itself
        block.compiled()


@pytest.mark.parametrize("name", RUN)
async def test_block_runs_as_printed(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKPOOL_URL", f"sqlite:///{tmp_path}/workpool.db")
    *before, block = chain(BY_NAME[name])
    if any(part.store == "postgres" for part in (*before, block)):
        server: PostgresServer = request.getfixturevalue("postgres_server")
        schema = f"readme_{name.replace('-', '_')}"
        monkeypatch.setenv("WORKPOOL_URL", server.url(schema=schema))
        monkeypatch.setenv("DATABASE_URL", server.url())
    namespace: dict[str, Any] = {"__name__": f"readme_{name.replace('-', '_')}"}
    try:
        for earlier in before:
            await execute(earlier, namespace)
        async with serving(namespace):
            await execute(block, namespace)
    finally:
        await close_pools(namespace)


async def test_the_durable_example_runs_up_to_its_cooling_off_sleep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only defined: its steps and child runs run, then it sleeps holding no slot."""
    monkeypatch.setenv("WORKPOOL_URL", f"sqlite:///{tmp_path}/workpool.db")
    namespace: dict[str, Any] = {"__name__": "readme_fulfil"}
    try:
        for block in chain(BY_NAME["durable-workflows-steps-child-runs-sleeps"]):
            await execute(block, namespace)
        pool, order = namespace["pool"], namespace["Order"]
        async with serving(namespace):
            handle = await namespace["fulfil"].run(
                order(order_id="A-1", customer_id="C-7", amount_cents=4200)
            )
            # It suspends first while its child "ship" runs, then for the sleep.
            deadline = time.monotonic() + 20
            while True:
                run = await pool.get_run(handle.id)
                steps = {step.name: step for step in await pool.get_steps(handle.id)}
                if run.status == "suspended" and "cooling-off" in steps:
                    break
                assert time.monotonic() < deadline, run
                await asyncio.sleep(0.02)
    finally:
        await close_pools(namespace)
    assert list(steps) == ["reserve", "charge", "ship", "receipt", "cooling-off"]
    assert steps["ship"].output == "label for A-1"
    assert steps["cooling-off"].status == "waiting"


def test_every_name_a_block_uses_is_defined(tmp_path: Path) -> None:
    origins: dict[str, list[tuple[int, Block]]] = {}
    for block in BLOCKS:
        program, origin = "", []
        for part in chain(block):
            origin.append((program.count("\n") + 1, part))
            program += part.source
        (tmp_path / f"{block.name}.py").write_text(program)
        origins[f"{block.name}.py"] = origin
    result = subprocess.run(
        [
            *[sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache"],
            *["--select", "F821", "--output-format", "json", str(tmp_path)],
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    problems = []
    for diagnostic in json.loads(result.stdout or "[]"):
        row = diagnostic["location"]["row"]
        start, block = max(
            (item for item in origins[Path(diagnostic["filename"]).name] if item[0] <= row),
            key=lambda item: item[0],
        )
        problems.append(f"README.md:{block.line + row - start}: {diagnostic['message']}")
    assert result.returncode in (0, 1), result.stderr
    assert problems == []


def first_example_commands(source: str) -> tuple[list[str], list[str], str]:
    """What the first example's comments say to run: the worker command, the script
    command, and the call shown for sync code."""
    worker = re.search(r"workpool worker [^#\n]*", source)
    script = re.search(r"python shop\.py", source)
    sync_call = re.search(r"^# sync code [^:]*: (.+)$", source, re.MULTILINE)
    assert worker, "the first example no longer shows its worker command"
    assert script, "the first example no longer says to run python shop.py"
    assert sync_call, "the first example no longer shows the call for sync code"
    return shlex.split(worker.group()), shlex.split(script.group()), sync_call.group(1)


def test_the_first_example_runs_with_the_worker_it_shows(tmp_path: Path) -> None:
    (block,) = [block for block in BLOCKS if block.file == "shop.py"]
    assert "max_concurrency" in block.source, "the first example shows the default of 1"
    (tmp_path / "shop.py").write_text(block.source)
    worker, script, sync_call = first_example_commands(block.source)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("WORKPOOL_URL", None)  # the example names its own store
    stderr_path = tmp_path / "worker.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", *worker],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        start_line = wait_for_start_line(process, stderr_path)
        assert start_line.endswith(f"store sqlite:///{tmp_path / 'shop.db'}"), start_line
        for command in (
            [sys.executable, *script[1:]],
            [sys.executable, "-c", f"from shop import *\nprint({sync_call})"],
        ):
            ran = subprocess.run(
                command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
            )
            assert (ran.returncode, ran.stdout) == (0, "charged 4200\n"), ran
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, stderr_path.read_text()


def wait_for_start_line(process: subprocess.Popen[bytes], stderr_path: Path) -> str:
    """The worker's start line, once it is logged (or fail when the worker exits or the
    deadline passes)."""
    deadline = time.monotonic() + START_DEADLINE
    while True:
        for line in stderr_path.read_text().splitlines():
            if "started on queues" in line:
                return line
        assert process.poll() is None, f"the worker exited:\n{stderr_path.read_text()}"
        assert time.monotonic() < deadline, f"no start line:\n{stderr_path.read_text()}"
        time.sleep(0.05)
