#!/usr/bin/env python3
"""Where `roscope flow`'s memory goes, phase by phase (issue 14).

Runs `roscope flow ARGS...` in this process and samples its RSS (anonymous and
file-backed, /proc/self/status) every 0.1 s, keeping the peak of each phase: the
causal links and everything before the search, the data-flow search, the per-path
and per-component statistics, and the rest, with the wall time of each. After the search and after the
statistics it also reads what DuckDB's buffers hold (`duckdb_memory()`) (after the
search, roscope gives back what malloc holds free: `memory.give_back`). At each phase's peak it also says who
held the memory (`peak_breakdown_mib`): glibc malloc's bytes in use and free but kept
(`mallinfo2`: the Rust core, Python, numpy), pyarrow's pool, and DuckDB's buffers
(`duckdb_memory()`, read on a cursor of the same instance); the rest of the anonymous
memory is DuckDB's jemalloc outside its buffers, Python's own arenas and the stacks.

    .venv/bin/python bench/flow_phases.py DB --from . --to . --max-flows 0 --json

Prints one JSON object on stderr at the end (the flow's own output goes to stdout).
"""
from __future__ import annotations

import ctypes
import json
import sys
import threading
import time


def rss() -> tuple[int, int]:
    """(anonymous, file-backed) resident MiB of this process."""
    a = f = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                a = int(line.split()[1]) >> 10
            elif line.startswith("RssFile:"):
                f = int(line.split()[1]) >> 10
    return a, f


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


_LIBC = ctypes.CDLL("libc.so.6")
_LIBC.mallinfo2.restype = _Mallinfo2


def malloc_mib() -> tuple[int, int]:
    """glibc malloc: (MiB in use, including mmapped blocks; MiB free but kept)."""
    m = _LIBC.mallinfo2()
    return (m.uordblks + m.hblkhd) >> 20, m.fordblks >> 20


def main() -> int:
    from roscope import cli
    from roscope.flow import analysis as fa  # the steps `roscope flow` runs, in order

    phase = ["links"]
    peaks: dict[str, list[int]] = {}
    began = {"links": time.monotonic()}

    def enter(name: str) -> None:
        phase[0] = name
        began[name] = time.monotonic()
    notes: dict[str, object] = {}

    import pyarrow as pa
    from roscope.database import Database

    breakdown: dict[str, dict] = {}
    dbs: list = []  # the Database of the run, seen when it connects
    connect = Database.__init__

    def init(self, *a, **k):
        connect(self, *a, **k)
        dbs.append(self)
    Database.__init__ = init

    def duckdb_mib() -> int | None:
        try:
            cur = dbs[-1].con.cursor()
            try:
                return cur.execute("SELECT sum(memory_usage_bytes) >> 20 FROM duckdb_memory()").fetchall()[0][0]
            finally:
                cur.close()
        except Exception:  # no database yet, or a connection being renewed
            return None

    def sample() -> None:
        while True:
            a, f = rss()
            p = peaks.setdefault(phase[0], [0, 0, 0])
            if a + f > p[2]:
                p[:] = [a, f, a + f]
                used, kept = malloc_mib()
                breakdown[phase[0]] = {"malloc_used": used, "malloc_free_kept": kept,
                                       "pyarrow": pa.total_allocated_bytes() >> 20, "duckdb_buffers": duckdb_mib()}
            time.sleep(0.1)

    def buffers(db) -> dict:
        return dict(db.con.execute("SELECT tag, memory_usage_bytes >> 20 FROM duckdb_memory() "
                                   "WHERE memory_usage_bytes > 0").fetchall())

    threading.Thread(target=sample, daemon=True).start()
    search, components = fa.data_flows, fa.component_stats

    def data_flows(db, *a, **k):
        enter("search")
        res = search(db, *a, **k)
        notes["after_search"] = {"rss_anon_file_mib": rss(), "duckdb_mib": buffers(db)}
        enter("statistics")
        return res

    def component_stats(db):
        res = components(db)
        notes["after_statistics"] = {"rss_anon_file_mib": rss(), "duckdb_mib": buffers(db)}
        enter("rest")
        return res

    fa.data_flows, fa.component_stats = data_flows, component_stats
    t0 = time.monotonic()
    sys.argv = ["roscope", "flow", *sys.argv[1:]]
    rc = cli.main()
    time.sleep(0.2)
    ends = [*list(began.values())[1:], time.monotonic()]
    out = {"seconds": round(time.monotonic() - t0, 1), "exit": rc,
           "phase_seconds": {k: round(e - b, 1) for (k, b), e in zip(began.items(), ends)},
           "peaks_anon_file_total_mib": peaks, "peak_breakdown_mib": breakdown, **notes}
    print(json.dumps(out), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
