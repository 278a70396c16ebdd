"""What each optional part of roscope needs (the package's extras, pyproject.toml) and the one
message that says how to install it: a verb whose Python package is missing says which
`pip install 'roscope[EXTRA]'` brings it (issue 41). The core install (record, dump, load,
stats, flow, check, watch, info, doctor, ...) needs none of them (docs/install.md)."""
from __future__ import annotations

#: Top-level Python module -> (the extra that brings it, what roscope needs it for).
EXTRAS: dict[str, tuple[str, str]] = {
    "plotly": ("report", "roscope report's charts"),
    "graphviz": ("report", "roscope report's data-flow graph"),
    "clang": ("deps", "roscope deps (C++ sources parsed by libclang)"),
    "pyspark": ("spark", "roscope spark"),
    "pandas": ("pandas", "DataFrames from the Python API (Database.sql, Database.table)"),
    "pyarrow": ("arrow", "pyarrow Tables from the Python API (Database.arrow, Trace.batches, causal_links, a flow search's tables)"),
}


def install_hint(module: str) -> str | None:
    """'pip install "roscope[EXTRA]"' for a missing module of an extra, else None."""
    top = (module or "").split(".")[0]
    if top not in EXTRAS:
        return None
    return f"pip install 'roscope[{EXTRAS[top][0]}]'"


def missing_message(exc: BaseException, verb: str | None = None) -> str | None:
    """The user's message for an ImportError of an optional package (None for any other error):
    what needs it and the install command."""
    if not isinstance(exc, ImportError):
        return None
    name = getattr(exc, "name", None) or ""
    hint = install_hint(name)
    if hint is None:
        return None
    top = name.split(".")[0]
    who = f"roscope {verb}" if verb else EXTRAS[top][1]
    return f"{who} needs the Python package '{top}', which is not installed: {hint}"
