#!/usr/bin/env python3
"""`roscope watch` with measurements from inside (bench/watch_soak.py --probe; docs/watch.md,
"Soak"): runs `roscope ARGS...` in this process and, every PROBE_S seconds (default 60), writes
a JSON line into the file PROBE_OUT with what holds its memory:

- `rss_kib`, and the resident KiB of its largest mappings (/proc/self/smaps: `[heap]`, anonymous
  mappings, libraries);
- glibc's malloc (`mallinfo2`, KiB): `arena` (memory malloc holds, every arena), `uordblks` (in
  use), `fordblks` (free but kept), `hblkhd` (mmapped blocks): in use flat while held grows is
  memory kept free in the arenas (fragmentation), not a leak;
- Python: allocated blocks (`sys.getallocatedblocks`) and gc objects by type (the 15 most);
- the watch's own state: flows kept per path, records held by the flows' input (runs,
  publications, links) and by the ROS 1 message matching, windows waiting for the windows'
  thread (`jobs`), chunks read, windows shown, misses; the rows the windows' store holds per
  table (an older roscope's: DuckDB's memory, `duckdb_memory()`, and its instance tables' rows);
- the process's threads (/proc/self/task) and how many were new since the last line;
- with PROBE_TRIM=1, `malloc_trim(0)` after each line and the RSS after it (changes the run).

    PROBE_OUT=probe.jsonl PYTHONPATH=python python3 bench/watch_probe.py watch --json ... -- CMD
"""
from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import sys
import threading
import time

OUT = os.environ["PROBE_OUT"]
EVERY = float(os.environ.get("PROBE_S", "60"))
TRIM = os.environ.get("PROBE_TRIM") == "1"
_MI = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in _MI]


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _mappings() -> dict[str, int]:
    """Resident KiB by mapping (file name, `[heap]`, `[anon]` for the anonymous ones), the 8 largest."""
    out: collections.Counter = collections.Counter()
    name = "[anon]"
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0]:
                name = os.path.basename(parts[5]) if len(parts) > 5 else "[anon]"
            elif parts[0] == "Rss:":
                out[name] += int(parts[1])
    return dict(out.most_common(8))


def _retry(get):
    """A value of the core's objects, which say 'already borrowed' while the loop's thread uses them."""
    for _ in range(200):
        try:
            return get()
        except RuntimeError:
            time.sleep(0.005)
    return None


def _state(w) -> dict:
    lv = w.live
    if lv is None:
        return {}
    s = {"flows": [len(f) for f in lv.flows.flows], "flow_input_held": _retry(lambda: lv.flows.input.held),
         "ros1_messages_held": _retry(lambda: lv.model.held_messages), "jobs": w._jobs.qsize(),
         "chunks": w._n or len(w.seen), "windows": w.windows, "misses": w.misses}
    with lv.lock:
        if hasattr(lv, "store"):   # the windows' records in the core (`_core.LiveStats`)
            s["store_rows"] = dict(lv.store.rows)
        else:   # an older roscope (a reference): in a DuckDB instance
            s["duckdb_memory"] = dict(lv.con.sql("SELECT tag, memory_usage_bytes FROM duckdb_memory() "
                                                 "WHERE memory_usage_bytes > 0").fetchall())
            s["duckdb_rows"] = {t: lv.con.sql(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]
                                for t in ("callback_runs", "publications", "takes", "executor_states")}
    return s


def _probe(watches: list, libc) -> None:
    t0 = time.monotonic()
    tasks = set(os.listdir("/proc/self/task"))
    with open(OUT, "w") as f:
        while True:
            time.sleep(EVERY)
            now = set(os.listdir("/proc/self/task"))
            mi = libc.mallinfo2()
            counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
            d = {"t": round(time.monotonic() - t0, 1), "rss_kib": _rss(), "mappings_kib": _mappings(),
                 "malloc_kib": {n: getattr(mi, n) >> 10 for n in ("arena", "uordblks", "fordblks", "hblkhd")},
                 "py_blocks": sys.getallocatedblocks(), "gc_objects": sum(counts.values()),
                 "gc_top": dict(counts.most_common(15)), "threads": len(now), "threads_new": len(now - tasks)}
            tasks = now
            try:
                d["watch"] = _state(watches[0]) if watches else {}
            except Exception as e:   # a probe that fails says so, and goes on
                d["watch"] = {"error": repr(e)}
            if TRIM:
                libc.malloc_trim(0)
                d["rss_kib_after_trim"] = _rss()
            f.write(json.dumps(d) + "\n")
            f.flush()


def main() -> None:
    import roscope.watch

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _Mallinfo2
    watches: list = []
    init = roscope.watch.Watch.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        watches.append(self)
    roscope.watch.Watch.__init__ = keep
    threading.Thread(target=_probe, args=(watches, libc), name="watch-probe", daemon=True).start()
    from roscope.cli import main as roscope_main

    sys.argv = ["roscope", *sys.argv[1:]]
    raise SystemExit(roscope_main())


if __name__ == "__main__":
    main()
