"""Intra-node dependencies from C++ node sources (`roscope deps`, docs/deps.md).

`analyze(sources, build_dir=None, flags=None)` parses C++ ROS 1 (roscpp) and ROS 2
(rclcpp) node sources with libclang (the ``libclang`` Python package), finds every
callback a node registers (subscriptions, timers, services), the state each one
reads and writes -- member fields, static and global variables, variables that
lambdas capture by reference, and what a pointer captured or passed by value points
to -- transitively through the functions it calls, and the publishers it publishes
on. Callback B depends on callback A when A writes state that B reads before B
publishes (or before B writes state that a publishing callback reads). The result
is a JSON document (`write` writes it atomically; its format is in docs/deps.md).

`trace_edges(db, deps)` matches the document's callbacks to a trace's callbacks
(by demangled symbol, else by node and topic or period) and returns the
dependency edges as pairs of `callbacks.callback_id`, with a report of the match.

The package, by job:
- `libclang`: loading libclang, the C functions its bindings lack, parsing, demangling;
- `compiledb`: compile_commands.json and compiler flags;
- `cxx`: C++ types and names (what is state, what library methods do);
- `rosapi`: ROS registrations, lambda symbols, compile-time topics and periods;
- `paths`: state as paths;
- `unit`, `function` (with `statements`, `expressions`, `calls`, `lambdas`,
  `registrations`): per-function summaries of one translation unit;
- `closure`: summaries closed over the calls between files;
- `bookkeeping`: state every publishing callback touches (counters, logs), left out of edges;
- `document`: the dependency document (callbacks, edges) and `write`;
- `analysis`: `analyze`, the two phases over all sources; `workers`: one child
  process per source, on a large stack;
- `matching`: `load`, `match`, `trace_edges`, the warnings of `flow --deps` (no
  libclang: what `flow` imports).

The analysis modules are loaded on first use of their names (`analyze`, `write`,
`demangle` ...), so that `roscope flow` imports only `matching`.
"""
from __future__ import annotations

import importlib

from roscope.deps.matching import FORMAT, FORMAT_VERSION, load, match, trace_edges

#: Public names of the analysis modules, loaded when first used.
_LAZY = {"analyze": "analysis", "write": "document", "demangle": "libclang", "CompileDatabase": "compiledb",
         "SOURCE_EXT": "compiledb", "HEADER_EXT": "compiledb"}

__all__ = ["FORMAT", "FORMAT_VERSION", "load", "match", "trace_edges", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roscope.deps' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"roscope.deps.{module}"), name)
    globals()[name] = value
    return value
