"""Print each workpool module's imports of other workpool modules (TYPE_CHECKING ones too).

Run: ``python scripts/module_graph.py [--cycles]``. Modules under ``workpool.backends`` are
folded into ``workpool.backends`` (their inside is the backends' own business). With
``--cycles``, prints the strongly connected groups of more than one module instead.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return fold(".".join(parts))


def fold(name: str) -> str:
    return "workpool.backends" if name.startswith("workpool.backends") else name


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {fold(name) for name in found if name.split(".")[0] == "workpool"}


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted((SOURCE / "workpool").rglob("*.py")):
        name = module_name(path)
        edges.setdefault(name, set()).update(imports_of(path) - {name})
    return edges


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or not."""
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (import cycles)."""
    reach = {node: reachable(edges, node) for node in edges}
    groups: list[list[str]] = []
    placed: set[str] = set()
    for node in sorted(edges):
        if node in placed:
            continue
        group = sorted(other for other in reach[node] if node in reach.get(other, ()))
        if len(group) > 1:
            groups.append(group)
            placed.update(group)
    return groups


def main() -> None:
    edges = graph()
    if "--cycles" in sys.argv:
        groups = cycles(edges)
        for group in groups:
            print(f"cycle of {len(group)}: {' '.join(group)}")
        print(f"{len(groups)} cycles")
        return
    for name, targets in sorted(edges.items()):
        short = sorted(target.removeprefix("workpool.") for target in targets)
        print(f"{name.removeprefix('workpool.') or 'workpool'} -> {', '.join(short) or '-'}")


if __name__ == "__main__":
    main()
