#!/usr/bin/env python3
"""Scale benchmark (issue 14): time and peak RSS of `roscope info`, `load`,
`stats` and `flow` at 1M, 10M and 100M events, with `babeltrace2 -o dummy` on
the same input in the same run as the reference for the throughput ratios.

Inputs are ros2sim recordings of the Autoware reference-system preset (Rolling
layouts, --scale 100), made with

    /usr/bin/python3 tools/ros2sim/ros2sim.py run --preset autoware_reference_system_mp \\
        --distro rolling --scale 100 --duration D --subbuf-size 4M --num-subbuf 8 --out bench/results/scale-D

for D = 3.15 (1M events) and 315 (132M events); the 10M input is bench/flow.py's
(bench/results/flow-10M, D = 31.5). The 100M input is the 315 s recording and the
10M one loaded together (two recordings of one host, one after the other: 144M events).
`flow` searches every topic to every topic over the whole trace (`--max-flows 0`).

Each command's output goes to /dev/null; peak RSS is the child's own (wait4).
Writes bench/results/scale.json.

    .venv/bin/python bench/scale.py [--sizes 1M,10M,100M] [--no-bt2-at 100M]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
ROSCOPE = [sys.executable, "-m", "roscope"]
INPUTS = {
    "1M": [os.path.join(RESULTS, "scale-3.15")],
    "10M": [os.path.join(RESULTS, "flow-10M")],
    "100M": [os.path.join(RESULTS, "scale-315"), os.path.join(RESULTS, "flow-10M")],
}


def inputs(size: str) -> list[str] | None:
    """The recordings of `size` (`INPUTS`), or None, said on stderr, when one is missing."""
    paths = INPUTS[size]
    missing = [p for p in paths if not os.path.isdir(p)]
    if missing:
        print(f"bench: {size}: missing {missing} (see bench/scale.py's docstring to make them)", file=sys.stderr)
        return None
    return paths


def measured(argv: list[str], stdout: str = os.devnull, env: dict | None = None, stderr: bool = False) -> dict:
    """Wall time, the child's peak RSS and CPU time; output to `stdout` (/dev/null),
    stderr kept (its last 3000 characters as "stderr" with `stderr`); `env`: the
    child's environment (None: this one's)."""
    with open(stdout, "wb") as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err.seek(0)
        tail = err.read()[-3000:].decode("utf-8", "replace")
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({rc}):\n{tail}")
    r = {"wall_s": round(wall, 3), "peak_rss_mib": round(ru.ru_maxrss / 1024, 1), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3)}
    if stderr:
        r["stderr"] = tail
    return r


def events(paths: list[str]) -> int:
    p = subprocess.run(ROSCOPE + ["info", *paths, "--json"], capture_output=True, text=True, check=True)
    return int(json.loads(p.stdout)["events"])


def bench(size: str, paths: list[str], bt2: bool, tmp: str) -> dict:
    db = os.path.join(tmp, f"scale-{size}.duckdb")
    row: dict = {"size": size, "inputs": paths, "events": events(paths)}
    if bt2:
        # babeltrace2 reads one trace set per run: all inputs together, as roscope does.
        row["babeltrace2 -o dummy"] = measured(["babeltrace2", "-o", "dummy", *paths])
    row["roscope info"] = measured(ROSCOPE + ["info", *paths])
    row["roscope load"] = measured(ROSCOPE + ["load", *paths, "-o", db, "--force"])
    row["roscope stats DB"] = measured(ROSCOPE + ["stats", db, "--json"])
    flow_json = os.path.join(tmp, "flow.json")
    # Every topic to every topic, without the cap on candidate flows (--max-flows, 10M by
    # default, stopped the search at 714,684 of the 10M input's 860,538 publications): the whole trace is searched.
    row["roscope flow DB"] = measured(ROSCOPE + ["flow", db, "--from", ".", "--to", ".", "--max-flows", "0", "--json"],
                                      flow_json)
    with open(flow_json) as f:
        summary = json.load(f)["summary"]
    # What the search did: flows, outputs searched, and how the model was cut.
    row["flow"] = {k: summary[k] for k in ("flows", "outputs", "outputs_total", "paths", "compute_ns", "slices")}
    if summary["outputs"] != summary["outputs_total"]:
        raise SystemExit(f"{size}: the flow search stopped before the end ({summary['outputs']} of {summary['outputs_total']} outputs)")
    os.remove(db)
    if bt2:
        ref = row["babeltrace2 -o dummy"]["wall_s"]
        row["ratio_info"] = round(ref / row["roscope info"]["wall_s"], 2)
        row["ratio_load"] = round(ref / row["roscope load"]["wall_s"], 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1M,10M,100M")
    ap.add_argument("--no-bt2-at", default="", help="sizes to run without babeltrace2 (it takes minutes at 100M)")
    a = ap.parse_args()
    skip = set(filter(None, a.no_bt2_at.split(",")))
    rows = []
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        for size in a.sizes.split(","):
            paths = inputs(size)
            if paths is None:
                continue
            row = bench(size, paths, size not in skip, tmp)
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = os.path.join(RESULTS, "scale.json")
    with open(out + ".tmp", "w") as f:
        json.dump(rows, f, indent=1)
    os.replace(out + ".tmp", out)
    print(f"{'size':>5} {'events':>11} {'cmd':<18} {'wall s':>8} {'peak MiB':>9}")
    for r in rows:
        for k, v in r.items():
            if isinstance(v, dict) and "wall_s" in v:
                print(f"{r['size']:>5} {r['events']:>11,} {k:<18} {v['wall_s']:>8.2f} {v['peak_rss_mib']:>9.1f}")
        for k in ("ratio_info", "ratio_load"):
            if k in r:
                print(f"{r['size']:>5} {k}: {r[k]}x babeltrace2 -o dummy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
