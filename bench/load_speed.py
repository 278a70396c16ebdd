#!/usr/bin/env python3
"""`roscope load` speed and peak memory (issue 14) against `babeltrace2 -o dummy`
and `roscope info` on the same input in the same run.

Inputs are bench/scale.py's ros2sim recordings of the Autoware reference-system
preset: 1M events (bench/results/scale-3.15) and 10M events
(bench/results/flow-10M); see bench/scale.py's docstring to make them.

Each command runs `--repeat` times, one after the other; its best wall time is
reported (the machine may be shared: compare the ratios, not the seconds), with
every wall time, the peak RSS (the child's own, from wait4) and CPU time.
`--python` measures `roscope load` of another checkout too (e.g. a clone of an
older commit with its own .venv) in the same run, as "roscope load (other)".
Results go into bench/results/load_speed.json under `--label` (other labels
already there are kept).

    .venv/bin/python bench/load_speed.py [--sizes 1M,10M] [--repeat 2] [--label after] [--python OTHER/.venv/bin/python]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

# bench/ is the script's directory: scale.py's inputs, measured the same way.
from scale import RESULTS, inputs, measured

BENCH = os.path.dirname(os.path.abspath(__file__))


def repeated(argv: list[str], n: int, after=None) -> dict:
    """`argv` run `n` times: the best wall time, every wall time, the largest peak RSS."""
    runs = []
    for _ in range(n):
        runs.append(measured(argv))
        if after:
            after()
    best = min(runs, key=lambda r: r["wall_s"])
    return {"wall_s": best["wall_s"], "walls_s": [r["wall_s"] for r in runs],
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs), "cpu_s": best["cpu_s"]}


def events(python: str, paths: list[str]) -> int:
    p = subprocess.run([python, "-m", "roscope", "info", *paths, "--json"], capture_output=True, text=True, check=True)
    return int(json.loads(p.stdout)["events"])


def bench(size: str, paths: list[str], n: int, tmp: str, other: str | None) -> dict:
    roscope = [sys.executable, "-m", "roscope"]
    db = os.path.join(tmp, f"load-{size}.duckdb")

    def drop() -> None:
        if os.path.exists(db):
            os.remove(db)

    row: dict = {"size": size, "inputs": paths, "events": events(sys.executable, paths)}
    row["babeltrace2 -o dummy"] = repeated(["babeltrace2", "-o", "dummy", *paths], n)
    row["roscope info"] = repeated(roscope + ["info", *paths], n)
    row["roscope load"] = repeated(roscope + ["load", *paths, "-o", db], n, drop)
    if other:
        row["roscope load (other)"] = repeated([other, "-m", "roscope", "load", *paths, "-o", db], n, drop)
    ref = row["babeltrace2 -o dummy"]["wall_s"]
    for k in ("roscope info", "roscope load", "roscope load (other)"):
        if k in row:
            row[f"ratio {k}"] = round(ref / row[k]["wall_s"], 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1M,10M")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--label", default="current")
    ap.add_argument("--python", help="another checkout's Python whose `roscope load` runs as well")
    a = ap.parse_args()
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = None
    rev = subprocess.run(["git", "-C", BENCH, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    entry: dict = {"commit": rev, "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "load_average_at_start": load1, "cpus": os.cpu_count(), "other_python": a.python, "rows": []}
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        for size in a.sizes.split(","):
            paths = inputs(size)
            if paths is None:
                continue
            row = bench(size, paths, a.repeat, tmp, a.python)
            entry["rows"].append(row)
            print(json.dumps(row), flush=True)
    out = os.path.join(RESULTS, "load_speed.json")
    data = {}
    if os.path.exists(out):
        with open(out) as f:
            data = json.load(f)
    data[a.label] = entry
    with open(out + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(out + ".tmp", out)
    print(f"{'size':>5} {'cmd':<22} {'best wall s':>11} {'peak MiB':>9} {'x bt2':>6}")
    for r in entry["rows"]:
        for k, v in r.items():
            if isinstance(v, dict):
                ratio = r.get(f"ratio {k}", "")
                print(f"{r['size']:>5} {k:<22} {v['wall_s']:>11.2f} {v['peak_rss_mib']:>9.1f} {ratio:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
