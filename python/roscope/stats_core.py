"""`roscope stats` of a trace of up to `CORE_BYTES`, without a database.

Such a trace is built whole in the core, which computes the parts that `roscope.stats`
reads with SQL (crates/model/src/stats.rs: the same joins, NULLs and groups as the views
of `roscope.database`, and DuckDB's arithmetic for means and percentiles), and
`roscope.stats`'s own functions assemble them, in less memory and time than a load into
DuckDB (bench/startup.py and bench/README.md "Statistics in the core" measure both).

    CORE_BYTES              the traces' bytes up to which this path is taken
    applies(inputs) -> bool whether `roscope stats` of these inputs can take this path:
                            trace directories (not a database, a dataset or another
                            file: their own checks and messages are `opening`'s) of at
                            most CORE_BYTES in all
    parts(inputs, heuristics=True, sync=True, place=None) -> dict | None
                            the parts of `commands.stats.document` (with --window's
                            callbacks and topics of that window), or None when the
                            traces hold kernel scheduling data (its tables are made in
                            DuckDB, with their own warnings): the caller loads them then
    compute(paths, heuristics=True, sync=True, place=None) -> (parts, [(trace path, domain)])
                            the same for any traces, their kernel data not read
"""
from __future__ import annotations

import os

from roscope import _core
from roscope import progress as progress_shown
from roscope import stats as st
from roscope.manifest import attached, find_perf, is_dataset, record_ids
from roscope.trace import check_paths, trace_bytes

#: Traces of at most this many bytes in all (about 3M events) have their statistics
#: computed in the core, built whole: its peak memory grows with the trace (~70 bytes an
#: event) while a load into DuckDB streams under a memory cap, and up to here it is the
#: smaller one: 86 against 151 MB on the 30 MB Autoware trace, 213 against 225 MB on a
#: 109 MB one, at a third and two fifths of the CPU (bench/README.md "Statistics in the core").
CORE_BYTES = 128 << 20


def applies(inputs) -> bool:
    """Whether `roscope stats INPUTS [--window WINDOW]` takes this path (module docstring)."""
    paths = list(inputs)
    if not paths or not all(os.path.isdir(p) and not is_dataset(p) for p in paths):
        return False
    return trace_bytes(paths, CORE_BYTES) <= CORE_BYTES


def parts(inputs, *, heuristics: bool = True, sync: bool = True, place=None) -> dict | None:
    """The keyword arguments of `commands.stats.document` for the traces under `inputs`
    (`place`: a --window placed on the trace, as `compute` takes it), or None when they
    hold kernel data. Raises what loading them raises."""
    paths = check_paths(list(inputs))
    doc, traces = compute(paths, heuristics=heuristics, sync=sync, place=place)
    if any(d == "kernel" for _p, d in traces) or find_perf(paths, [t for t, _d in traces]):
        return None
    return doc


def compute(paths: list[str], *, heuristics: bool = True, sync: bool = True,
            place=None) -> tuple[dict, list[tuple[str, str]]]:
    """(the keyword arguments of `commands.stats.document` for the traces under `paths`,
    each trace's (path, domain)), built and computed by the core; kernel data, if any,
    is not read. `place(first, last) -> (start, end)`: a --window placed on the trace's
    span (`commands._common.window_place`, as `roscope stats --window` places it on a
    database's): the callbacks and topics of that window, the summary, services and nodes
    of the whole trace."""
    meter = _core.Meter()
    progress_shown.current().phase("reading the trace", unit="MB", meter=meter, found="events", scale=1e6)
    p, stats, warnings, losses, placed = _core.model_statistics(
        list(paths), heuristics, record_ids(paths) or None, sync, meter=meter, attach=attached(paths), place=place)
    progress_shown.current().phase("statistics")
    span = p["span"][1] - p["span"][0]
    callbacks, topics = st.core_rows(p, span, None if placed is None else placed[1] - placed[0])
    return {
        "summary": st.summary_of(p["span"], p["counts"], p["links_by_method"], dict(stats)),
        "callbacks": callbacks,
        "topics": topics,
        "services": p["services"],
        "nodes": st.node_rows(p["nodes"], span),
        "warnings": list(warnings),
        "losses": [tuple(x) for x in losses],
        "window": None if placed is None else tuple(placed),
    }, p["traces"]
