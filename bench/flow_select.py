#!/usr/bin/env python3
"""`roscope flow --from . --to .` before and after exact percentiles by selection
(issue 29): wall time, CPU time and peak RSS of each (the child's own, wait4), in
the same run on the same database, and their statistics compared value by value.

The database is loaded once from the 10M-event ros2sim recording (bench/flow.py's,
tests/support/big_trace.py) unless one is given. `--before DIR` is the other roscope's
`python/` directory (e.g. ../before/python, or an export of the commit before);
both roscopes read the same database file (read-only).

The comparison: every value of `paths` and `components` in the two JSON outputs must
be equal, bit for bit, but each `std_ns`, which is DuckDB's own `stddev_samp` and
varies in its last digits from one run of the same query to the next (its threads
sum in whatever order they run); for those the largest relative difference is shown.

    .venv/bin/python -m bench.flow_select --before ../before/python [--db FILE] [--repeat 1] [--memory 64M]

Prints a table and writes bench/results/flow_select.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from bench.scale import measured
from tests.support.big_trace import ensure_trace

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")


def compare(a, b, where: str = "") -> tuple[list[str], float]:
    """(where `a` and `b` differ, the largest relative difference of their std_ns values)."""
    if isinstance(a, dict) and isinstance(b, dict):
        diffs, worst = ([] if a.keys() == b.keys() else [f"{where}: keys {sorted(a.keys() ^ b.keys())}"]), 0.0
        for k in a.keys() & b.keys():
            if k.endswith("std_ns") and isinstance(a[k], float) and isinstance(b[k], float):
                worst = max(worst, abs(a[k] - b[k]) / max(abs(b[k]), 1e-300))
                continue
            d, w = compare(a[k], b[k], f"{where}.{k}")
            diffs += d
            worst = max(worst, w)
        return diffs, worst
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"], 0.0
        diffs, worst = [], 0.0
        for i, (x, y) in enumerate(zip(a, b)):
            d, w = compare(x, y, f"{where}[{i}]")
            diffs += d
            worst = max(worst, w)
        return diffs, worst
    same = a == b and type(a) is type(b)
    return ([] if same else [f"{where}: {a!r} vs {b!r}"]), 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the other roscope's python/ directory")
    ap.add_argument("--db", help="a database written by `roscope load` (default: the 10M-event trace, loaded once)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--memory", help="`roscope flow --memory` for both (e.g. 64M: the largest paths' values then do "
                                     "not fit quantile_cont, as on 144M events under the default 128M)")
    args = ap.parse_args()
    memory = ["--memory", args.memory] if args.memory else []
    with tempfile.TemporaryDirectory(prefix="roscope-flow-select-") as tmp:
        db = args.db
        if db is None:
            db = os.path.join(tmp, "10M.duckdb")
            subprocess.run([sys.executable, "-m", "roscope", "load", ensure_trace(), "-o", db], check=True,
                           stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": os.path.join(REPO, "python")})
        pythons = {"before": os.path.abspath(args.before), "after": os.path.join(REPO, "python")}
        runs: dict[str, list[dict]] = {k: [] for k in pythons}
        outputs = {}
        for _ in range(args.repeat):
            for name, path in pythons.items():
                out = os.path.join(tmp, f"{name}.json")
                runs[name].append(measured([sys.executable, "-m", "roscope", "flow", db, "--from", ".", "--to", ".",
                                            "--json", *memory], stdout=out, env={**os.environ, "PYTHONPATH": path}))
                with open(out) as f:
                    outputs[name] = json.load(f)
    diffs, worst = compare({k: outputs["after"][k] for k in ("paths", "components")},
                           {k: outputs["before"][k] for k in ("paths", "components")})
    print(f"{db}: {len(outputs['after']['paths'])} paths, {outputs['after']['summary'].get('flows', '?')} flows")
    print(f"{'':<8} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9}")
    for name, rs in runs.items():
        for r in rs:
            print(f"{name:<8} {r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} {r['peak_rss_mib']:>9.1f}")
    print(f"statistics: {len(diffs)} values differ" + ("" if not diffs else ": " + "; ".join(diffs[:5]))
          + f"; std_ns largest relative difference {worst:.2e}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "flow_select.json"), "w") as f:
        json.dump({"db": db, "memory": args.memory, "runs": runs, "differences": diffs, "std_max_rel_diff": worst,
                   "warnings": {k: v.get("warnings") for k, v in outputs.items()}}, f, indent=1)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
