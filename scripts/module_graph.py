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


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
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
