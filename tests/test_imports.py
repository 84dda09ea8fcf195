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


# The layers (docs/architecture.md), each module in exactly one: the face calls the library (api
# and below); the api reads traces (readers), analyses them (analyzers) and renders the results
# (renderers); analyzers produce results, renderers read them — with the timeline they carry and
# its model (schema, roles, normalize's queries) — and neither imports the other; results hold
# data and the words of the reports; readers build the model. The collectors and what
# `traceview run` injects into a profiled process use the library, which never calls them back.
LAYERS: dict[str, tuple[str, ...]] = {
    "face": ("traceview", "traceview.__main__", "traceview.cli", "traceview.console", "traceview.commands"),
    "api": ("traceview.api", "traceview.loader", "traceview.pool", "traceview.parquet", "traceview.sql"),
    "renderers": ("traceview.renderers",),
    "analyzers": ("traceview.analyzers",),
    "readers": ("traceview.readers",),
    "results": ("traceview.results",),
    "model": ("traceview.schema", "traceview.table", "traceview.arrays", "traceview.kinds", "traceview.categories",
              "traceview.roles", "traceview.role_passes", "traceview.normalize", "traceview.builder",
              "traceview.compiled", "traceview._passes", "traceview.capture_facts", "traceview.heap",
              "traceview.pandas_import", "traceview._pandas_without_pyarrow", "traceview.profile_schedule",
              "traceview.redact"),
    "words": ("traceview.text", "traceview.errors"),
    "collectors": ("traceview.collectors", "traceview.inject"),
}
# What each layer may import (besides itself).
MAY_IMPORT: dict[str, set[str]] = {
    "face": {"api", "renderers", "analyzers", "readers", "results", "model", "words", "collectors"},
    "api": {"renderers", "analyzers", "readers", "results", "model", "words"},
    "renderers": {"results", "model", "words"},
    "analyzers": {"results", "model", "words"},
    "readers": {"model", "words"},
    "results": {"model", "words"},
    "model": {"words"},
    "words": set(),
    "collectors": {"face", "api", "renderers", "analyzers", "readers", "results", "model", "words"},
}


def layer_of(module: str) -> str:
    """The layer a module belongs to: the one whose entry names it or the package it is in (the
    longest such entry)."""
    best, length = "", -1
    for layer, entries in LAYERS.items():
        for entry in entries:
            inside = module == entry or (entry != "traceview" and module.startswith(entry + "."))
            if inside and len(entry) > length:
                best, length = layer, len(entry)
    return best


def test_every_module_is_in_one_layer():
    graph = import_graph(PACKAGE)
    assert not [m for m in graph if not layer_of(m)], "modules in no layer (add them to LAYERS)"
    assert layer_of("traceview.analyzers.findings.table") == "analyzers" and layer_of("traceview") == "face"
    for layer, entries in LAYERS.items():  # (every entry names a module or package that exists)
        assert all(any(m == e or m.startswith(e + ".") for m in graph) for e in entries), layer


def test_each_layer_imports_only_the_layers_below_it():
    """The layer contract: no module imports a layer its own may not import; in particular the
    library never imports the command line or the collectors, renderers never import analyzers
    (what they show is in the results), analyzers never read files (the loader does)."""
    graph = import_graph(PACKAGE)
    crossing = sorted(f"{m} ({layer_of(m)}) → {t} ({layer_of(t)})" for m, targets in graph.items() for t in targets
                      if t.startswith("traceview") and layer_of(t) != layer_of(m)
                      and layer_of(t) not in MAY_IMPORT[layer_of(m)])
    assert not crossing, "imports across the layers:\n" + "\n".join(crossing)


def test_the_layer_contract_catches_a_crossing(tmp_path):
    """The check itself: an analyzer that imports a renderer is a crossing."""
    graph = {"traceview.analyzers.x": {"traceview.renderers.terminal"}, "traceview.renderers.terminal": set()}
    crossing = [(m, t) for m, targets in graph.items() for t in targets
                if layer_of(t) != layer_of(m) and layer_of(t) not in MAY_IMPORT[layer_of(m)]]
    assert crossing == [("traceview.analyzers.x", "traceview.renderers.terminal")]
