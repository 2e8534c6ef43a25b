"""The project's import graph, read from the source text (nothing is imported).

Every ``import`` and ``from ... import`` statement counts, wherever it stands: at module level,
inside a function (a lazy import) or in a ``try``.  Only imports under ``if TYPE_CHECKING:``
are left out, since they never run.  A name imported from a package that is itself a module
(``from ivm.operators import aggregates``) is an edge to that module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ivm", "sql_frontend", "datalog", "catalog", "spark_exec", "bench")
ENTRY_POINTS = ("__main__",)  # run by ``python -m``; never imported (checked by the tests)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the top-level packages, by dotted name."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Dotted names that ``node`` imports: ``from a import b`` names ``a.b`` (when ``b`` is a
    module; otherwise the caller falls back to ``a``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # a relative import
        here = name.split(".") if is_package else name.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, *([node.module] if node.module else [])])
    return [f"{base}.{a.name}" for a in node.names]


def _resolve(target: str, mods: dict[str, Path]) -> str | None:
    """The project module that importing ``target`` loads last (its longest module prefix)."""
    parts = target.split(".")
    while parts and ".".join(parts) not in mods:
        parts.pop()
    return ".".join(parts) if parts else None


def edges() -> dict[str, set[str]]:
    """Module → the project modules it imports (at any depth of its code)."""
    mods = modules()
    out: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        deps = {
            dep
            for node in _runtime_nodes(tree)
            for target in _targets(name, path.name == "__init__.py", node)
            if (dep := _resolve(target, mods)) is not None and dep != name
        }
        out[name] = deps
    return out


def package_of(module: str) -> str:
    return module.split(".")[0]


def is_entry_point(module: str) -> bool:
    return module.rsplit(".", 1)[-1] in ENTRY_POINTS


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node, or a self-loop."""
    g = nx.DiGraph()
    g.add_nodes_from(graph)
    g.add_edges_from((a, b) for a, deps in graph.items() for b in deps)
    return sorted(
        sorted(c)
        for c in nx.strongly_connected_components(g)
        if len(c) > 1 or any(g.has_edge(v, v) for v in c)
    )
