"""The package's imports, read from its source with `ast` (issue 25): no import
cycle inside python/roscope, function-local imports included (an import under
`if TYPE_CHECKING:` is for the type checker only and does not count); a module
imports roscope's modules at its top, except where the CLI's start-up needs a
module later (`LAZY`); and no private name (`_x`) of one module is used in another.

The import graph: `import roscope.a.b` is an edge to roscope.a.b; `from roscope.a
import b` an edge to roscope.a.b when that is a module, else to roscope.a (a
name defined there); `roscope._core` (the Rust extension) is a module without
imports of its own.
"""
from __future__ import annotations

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(REPO, "python")
PACKAGE = "roscope"

#: Function-local imports of roscope's modules that stay, each for a reason.
LAZY = {
    # `roscope info` starts without DuckDB (tests/test_cli.py checks what it imports):
    # the package, and `info` for a database file, open the storage layer when called.
    ("roscope", "roscope.opening"),
    ("roscope.info", "roscope.opening"),
    # `roscope info` reads a pip-installed ROS 2's tracer warnings (ros2_pip: the recorder's
    # helpers, ~13 ms of imports) only from a manifest of such a recording.
    ("roscope.info", "roscope.ros2_pip"),
    # `roscope stats` of a short recording (roscope.stats_core) reads percentiles' names only:
    # the storage layer's memory module (files, tempfile, ctypes) loads with DuckDB's queries.
    ("roscope.percentiles", "roscope.memory"),
    # `roscope experiment run` loads the analyses (DuckDB, the core) only once a
    # trial's trace is measured.
    ("roscope.experiment.runner", "roscope.experiment.tracemetrics"),
    # pytest loads the plugin in every session of every project that has roscope installed:
    # recording, DuckDB and the analyses load only when a test uses its fixtures.
    ("roscope.pytest_plugin", "roscope.check.api"),
    ("roscope.pytest_plugin", "roscope.record.options"),
    ("roscope.pytest_plugin", "roscope.record.session"),
    ("roscope.pytest_plugin", "roscope.check.budgets"),
    ("roscope.pytest_plugin", "roscope.check.measure"),
    ("roscope.pytest_plugin", "roscope.check.output"),
}

#: Private names used across modules in code being restructured on another branch
#: (the coordinator removes them at merge).
PRIVATE_ELSEWHERE: set[str] = set()


def modules() -> dict[str, str]:
    """{module name: source path} of every module of the package."""
    out = {}
    for d, subdirs, names in os.walk(os.path.join(PYTHON, PACKAGE)):
        subdirs[:] = [s for s in subdirs if s != "__pycache__"]
        for n in names:
            if n.endswith(".py"):
                path = os.path.join(d, n)
                name = os.path.relpath(path, PYTHON)[:-3].replace(os.sep, ".")
                out[name.removesuffix(".__init__")] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports(name: str, path: str, known: set[str]) -> list[tuple[str, bool, list[str]]]:
    """(imported module, whether inside a function, names taken from it) of each
    import of a roscope module in `name`'s source, those under TYPE_CHECKING left out."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out = []
    is_pkg = path.endswith("__init__.py")

    def visit(node: ast.AST, local: bool) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child, local)
            return
        if isinstance(node, ast.Import):
            out.extend((a.name, local, []) for a in node.names if a.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.split(".")[0] == PACKAGE:
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    out.append((sub, local, []) if sub in known else (base, local, [a.name]))
        for child in ast.iter_child_nodes(node):
            visit(child, local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods) | {f"{PACKAGE}._core"}
    return {m: {t for t, _local, _names in imports(m, p, known)} - {m} for m, p in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def test_the_graph_is_read_with_function_local_imports_and_without_type_checking_ones():
    # The measure itself: known edges of the tree are found, a function-local one
    # included; one only under TYPE_CHECKING is not.
    g = graph()
    assert "roscope.opening" in g["roscope"]  # inside roscope.open()
    assert "roscope.loading" in g["roscope.opening"]
    assert "roscope.errors" in g["roscope.database"]
    assert "roscope.database" not in g["roscope.stats"]  # `Database` for the annotations only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join("  " + " <-> ".join(c) for c in found)


def test_storage_is_below_the_analyses():
    """errors imports nothing of roscope; memory, database, loading, dataset and opening
    import each other lowest first and no analysis; nothing below `opening` imports it."""
    g = graph()
    order = ["roscope.errors", "roscope.memory", "roscope.database", "roscope.loading", "roscope.dataset",
             "roscope.opening"]
    assert g["roscope.errors"] == set()
    for i, m in enumerate(order):
        above = set(order[i + 1:])
        assert not g[m] & above, f"{m} imports {sorted(g[m] & above)}, above it"
    analyses = {m for m in g if m.startswith(("roscope.flow", "roscope.report", "roscope.experiment", "roscope.check"))} | {
        "roscope.stats", "roscope.stats_core", "roscope.executor", "roscope.sched", "roscope.response_time", "roscope.trend",
        "roscope.percentiles", "roscope.results", "roscope.dataset_queries", "roscope.spark", "roscope.deps"}
    for m in order + ["roscope.kernel"]:
        assert not g[m] & analyses, f"storage module {m} imports {sorted(g[m] & analyses)}"


def test_library_modules_import_roscope_at_the_top():
    """A function-local import hides a dependency (and once hid a cycle of ten
    modules): only the CLI's commands, and `LAZY`, import a roscope module inside
    a function."""
    mods = modules()
    known = set(mods) | {f"{PACKAGE}._core"}
    local = {(m, t) for m, p in mods.items() if not m.startswith("roscope.commands")
             for t, is_local, _ in imports(m, p, known) if is_local}
    late = sorted(local - LAZY)
    assert not late, "function-local imports in library modules:\n" + "\n".join(f"  {m} -> {t}" for m, t in late)
    assert LAZY <= local, f"LAZY names imports that are no longer there: {sorted(LAZY - local)}"


def _private_uses(name: str, path: str, known: set[str]) -> list[str]:
    """`from roscope.x import _y` and `x._y` (x a roscope module imported here) in one module."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    aliases: dict[str, str] = {}
    out = []
    own_pkg = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in known:
                    aliases[a.asname or a.name] = sub
                if a.name.startswith("_") and not a.name.startswith("__") and sub != f"{PACKAGE}._core" and not (
                        sub in known and sub.rsplit(".", 1)[0] == own_pkg):
                    out.append(f"{name}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            out.append(f"{name}: {node.value.id}.{node.attr} ({aliases[node.value.id]})")
    return out


def test_no_private_name_is_used_outside_its_module():
    """`trace._paths`, `results._columns_sql`, `db._connect`, `ds._read_error` were;
    a name another module needs is public. (A package's private module, like
    commands._common, is its own package's.)"""
    mods = modules()
    known = set(mods) | {f"{PACKAGE}._core"}
    found = [u for m, p in sorted(mods.items()) for u in _private_uses(m, p, known) if u not in PRIVATE_ELSEWHERE]
    assert not found, "private names used outside their module:\n" + "\n".join(f"  {u}" for u in found)


#: The package's layers, lowest first (README.md, Architecture, draws them): a
#: module imports modules of its own layer or of the layers below, never above.
#: A module is in the layer of the longest name here that it is or is inside.
LAYERS = [
    ("base", ["roscope._core", "roscope.version", "roscope.errors", "roscope.files", "roscope.manifest",
              "roscope.flavour", "roscope.text", "roscope.trace", "roscope.processes", "roscope.record",
              "roscope.progress", "roscope.ros2_pip", "roscope.recordings", "roscope.yamlfile", "roscope.numbers",
              "roscope.regex", "roscope.choices", "roscope.extras"]),
    ("storage", ["roscope.memory", "roscope.database", "roscope.kernel", "roscope.loading", "roscope.dataset",
                 "roscope.opening", "roscope"]),
    ("analysis helpers", ["roscope.percentiles", "roscope.results", "roscope.overlaps", "roscope.deps.matching",
                          "roscope.selector"]),
    ("analyses", ["roscope.flow", "roscope.stats", "roscope.stats_core", "roscope.executor", "roscope.response_time", "roscope.sched",
                  "roscope.trend", "roscope.dataset_queries", "roscope.deps", "roscope.info", "roscope.paths", "roscope.live",
                  "roscope.live_flows"]),
    ("reports and jobs", ["roscope.report", "roscope.experiment", "roscope.export", "roscope.spark", "roscope.check", "roscope.watch", "roscope.alerts",
                          "roscope.pytest_plugin"]),
    ("CLI", ["roscope.cli", "roscope.__main__", "roscope.commands"]),
]


def layer(module: str) -> int | None:
    best = None
    for i, (_name, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or (p != PACKAGE and module.startswith(p + "."))) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def test_each_module_imports_only_its_layer_and_those_below():
    g = graph()
    unplaced = sorted(m for m in g if layer(m) is None)
    assert not unplaced, f"modules in no layer of LAYERS (place them): {unplaced}"
    up = sorted((m, t) for m, ts in g.items() for t in ts if layer(t) > layer(m))
    assert not up, "imports of a higher layer:\n" + "\n".join(
        f"  {m} ({LAYERS[layer(m)][0]}) -> {t} ({LAYERS[layer(t)][0]})" for m, t in up)


def diagram() -> str:
    """README.md's drawing of the layers, top layer first, made from LAYERS: each
    module as its file (`stats.py`) or package (`flow/`), the Rust core last."""
    width, indent = 104, 18
    lines = []
    for name, prefixes in reversed(LAYERS):
        words = []
        for p in prefixes:
            if p == f"{PACKAGE}._core":
                continue
            rel = "__init__" if p == PACKAGE else p[len(PACKAGE) + 1:].replace(".", "/")
            words.append(f"{rel}/" if os.path.isdir(os.path.join(REPO, "python", PACKAGE, rel)) else f"{rel}.py")
        line = name.ljust(indent)
        for w in words:
            if len(line) + len(w) > width and line.strip() != name:
                lines.append(line.rstrip())
                line = " " * indent
            line += w + "  "
        lines.append(line.rstrip())
    lines.append("Rust core".ljust(indent) + "roscope._core (crates/roscope-py) <- flow <- model <- ctf")
    return "\n".join(lines)


def test_readme_draws_the_layers_as_they_are():
    """The drawing in README.md's Architecture section is LAYERS (print `diagram()`
    to renew it), so that a module placed here is drawn there."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "```\n" + diagram() + "\n```" in readme, "README.md's layers drawing should be:\n" + diagram()
