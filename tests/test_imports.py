"""No import cycles in the traceview package: every import counts, at module level or inside a
function (a lazy import is still a dependency), under ``if TYPE_CHECKING:`` too. The graph is
read from the source (AST), so nothing is imported to build it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "traceview"


def modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package __init__), for every .py file under ``package``
    and every compiled module (its .c source: setup.py builds each as the module of its path)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.c")]):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _imported(node: ast.AST, package: str) -> Iterator[tuple[str, str | None]]:
    """(module, name imported from it or None) for an import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        if node.level:  # relative: from the package, up level - 1 packages
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            yield base, alias.name


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from a import b`` is an edge to the module
    ``a.b`` when that is a module, else to ``a``)."""
    known = modules(package)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        parent = name if is_package else name.rpartition(".")[0]
        edges: set[str] = set()
        if path.suffix == ".c":  # (a compiled module imports nothing of the package)
            graph[name] = edges
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for module, imported in _imported(node, parent):
                target = f"{module}.{imported}" if imported and f"{module}.{imported}" in known else resolve(module)
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "traceview.results" in graph and graph["traceview.analyzers.compare"], "the graph was not read"
    found = cycles(graph)
    details = "; ".join(" ↔ ".join(c) + " (" + ", ".join(f"{m} → {sorted(graph[m] & set(c))}" for m in c) + ")"
                        for c in found)
    assert not found, f"import cycles: {details}"


def test_results_depend_on_no_analyzer_or_renderer_format():
    """Analyzers produce the result types and renderers consume them: the results module reads
    neither (only the reports' words, the timeline schema and the table types)."""
    graph = import_graph(PACKAGE)
    allowed = {"traceview.text", "traceview.schema", "traceview.table"}
    assert graph["traceview.results"] <= allowed | {m for m in graph if not m.startswith("traceview.")}


def test_a_cycle_inside_a_function_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (package / "c.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import x\n")
    (package / "d.py").write_text("from pkg import a\n")
    graph = import_graph(package)
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


# The layers: the face (the command line, the console script, the package's facade) calls the
# library; the collectors (traceview.capture among them) and what `traceview run` injects into
# the profiled process use the library too. The library calls none of them back.
FACE = {"traceview", "traceview.__main__", "traceview.cli", "traceview.console"}
NOT_THE_LIBRARY = ("traceview.commands", "traceview.collectors", "traceview.inject")


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_library_imports_no_command_and_no_collector():
    graph = import_graph(PACKAGE)
    library = [m for m in graph if m not in FACE and not _within(m, NOT_THE_LIBRARY)]
    assert "traceview.api" in library and "traceview.parquet" in library and "traceview.capture" not in graph
    upward = {m: sorted(t for t in graph[m] if _within(t, ("traceview.commands", "traceview.collectors")))
              for m in library}
    assert not {m: t for m, t in upward.items() if t}, f"library modules importing commands or collectors: {upward}"
