"""The README's "Synchronous code" section lists exactly the ``*_sync`` methods that exist."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from workpool import Batch, RunHandle, Workflow, Workpool

README = Path(__file__).resolve().parents[2] / "README.md"

OWNERS: dict[str, type] = {
    "pool": Workpool,
    "wf": Workflow,
    "handle": RunHandle,
    "batch": Batch,
}
"""How the section names the object each method is called on."""


def sync_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Synchronous code\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_readme_lists_exactly_the_sync_methods() -> None:
    documented = set(re.findall(r"`(pool|wf|handle|batch)\.(\w+_sync)\(", sync_section()))
    existing = {
        (owner, name)
        for owner, cls in OWNERS.items()
        for name in dir(cls)
        if name.endswith("_sync") and not name.startswith("_")
    }
    assert sorted(existing - documented) == [], "undocumented: add them to the README"
    assert sorted(documented - existing) == [], "documented but not in the code"


def test_the_readme_documents_pool_handle_and_the_three_rules() -> None:
    section = sync_section()
    assert "`pool.handle(run_id)`" in section
    for rule in ("os.fork()", "SyncCallInEventLoopError", "asyncio.run("):
        assert rule in section, rule


def test_each_sync_method_takes_what_its_async_twin_takes() -> None:
    """(``Workflow.run_sync`` passes ``**options`` on to ``prepare``, which checks them.)"""
    for cls in (Workpool, RunHandle, Batch):
        for name in dir(cls):
            if not name.endswith("_sync") or name.startswith("_"):
                continue
            sync = inspect.signature(getattr(cls, name))
            twin = inspect.signature(getattr(cls, name.removesuffix("_sync")))
            assert sync.parameters == twin.parameters, name
            assert sync.return_annotation == twin.return_annotation, name
