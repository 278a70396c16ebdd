"""python/roscope/_core.pyi names exactly what the built core exposes: every
function, class and method of `roscope._core`, and nothing it does not have.
(mypy's stubtest checks signatures too, where mypy is installed:
`python -m mypy.stubtest roscope._core`.)"""
from __future__ import annotations

import ast
import inspect
import os

import pytest

core = pytest.importorskip("roscope._core", reason="the roscope core is not built")

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "roscope", "_core.pyi")
def stub_names() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(open(STUB, encoding="utf-8").read())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return top, classes


def core_names() -> tuple[set[str], dict[str, set[str]]]:
    top = {n for n in dir(core) if not n.startswith("_") or n == "__version__"}
    classes = {}
    for n in top:
        obj = getattr(core, n)
        if inspect.isclass(obj):
            # Dunder names are Python's own, except the Arrow PyCapsule protocol's.
            classes[n] = {m for m in vars(obj) if not m.startswith("__") or m.startswith("__arrow")}
    return top, classes


def test_stub_names_what_the_core_exposes():
    s_top, s_classes = stub_names()
    c_top, c_classes = core_names()
    # The stub may add typing helpers (a Protocol); everything the core has is in it.
    assert c_top <= s_top, f"not in _core.pyi: {sorted(c_top - s_top)}"
    helpers = s_top - c_top
    assert helpers == {"ArrowStream"}, f"in _core.pyi but not in the core: {sorted(helpers)}"
    for cls, members in c_classes.items():
        declared = s_classes[cls] - {"__init__"}
        assert members == declared, f"{cls}: core has {sorted(members - declared)} not in the stub, " \
                                    f"stub has {sorted(declared - members)} not in the core"
