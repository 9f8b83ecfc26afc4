"""No import circle anywhere in the tree: the modules' imports run one way, as the layers do.

The graph is the one import-linter builds (grimp), over the packages its contracts cover (the
`root_packages` of pyproject.toml), imports under `if TYPE_CHECKING:` and inside functions
included: a circle hidden in a function is still two modules that cannot be understood apart.
A circle is reported as its modules with each import that closes it (file and line), so the
message says where to cut.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def _root_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages: list[str] = config["tool"]["importlinter"]["root_packages"]
    return packages


def circles(imports: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph: grimp.ImportGraph, circle: list[str]) -> str:
    members = set(circle)
    lines = [" - ".join(circle)]
    for importer in circle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer} -> {imported} (line {detail['line_number']})")
    return "\n".join(lines)


def test_circles_are_found_with_their_modules() -> None:
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(imports) == [["a", "b", "c"]]


def test_no_module_of_the_tree_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*_root_packages(), include_external_packages=False)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    found = circles(imports)
    assert not found, f"{len(found)} import circle(s):\n" + "\n".join(
        _describe(graph, c) for c in found
    )
