#!/usr/bin/env python3
"""The cost of `why`'s longest input waits (`sched.worst_waits`, also the report's "Why late"
section) against splitting every input wait of the trace (`sched.wait_sched` without a pick,
what worst_waits did before it picked the waits it shows), on the same database in the same
run; and whether the rows are those of the whole split's first ones.

    PYTHONPATH=python python3 bench/why_waits.py DATABASE_OR_TRACE [--top 10] [--repeat 3]

e.g. on `roscope load bench/results/flow-10M/traces -o /tmp/10M.duckdb` (bench/flow.py makes
the trace). Prints the medians (s) and their ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

import roscope
from roscope import sched


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    db = roscope.open(a.input)
    whole, picked = [], []
    for _ in range(a.repeat):
        t = time.monotonic()
        sched.wait_sched(db)
        first = db.records(f"""SELECT w.run_id, w.publication_id, w.queued_ns, w.wakeup_ns, w.rest_ns
                               FROM wait_sched w JOIN callbacks_info c USING (callback_id)
                               ORDER BY w.wait_ns DESC, w.run_id, w.publication_id LIMIT {int(a.top)}""")
        whole.append(time.monotonic() - t)
        t = time.monotonic()
        rows = sched.worst_waits(db, None, a.top)
        picked.append(time.monotonic() - t)
    same = [(r["run_id"], r["publication_id"], r["queued_ns"], r["wakeup_ns"], r["rest_ns"]) for r in rows] == \
        [(r["run_id"], r["publication_id"], r["queued_ns"], r["wakeup_ns"], r["rest_ns"]) for r in first]
    w, p = statistics.median(whole), statistics.median(picked)
    print(f"every wait split then the top {a.top}: {w:.2f} s; worst_waits: {p:.2f} s; ratio {p / w:.3f}; "
          f"same rows: {same}")


if __name__ == "__main__":
    main()
