#!/usr/bin/env python3
"""Shows that a change of roscope kept its outputs: runs two versions of the
package side by side on the same inputs, in the same run, and compares
`roscope dump` (every byte), `roscope stats --json`, `roscope executor --json` and `roscope flow --json`.

    scripts/compare_outputs.py --before /path/to/old/checkout/python [--traces DIR]

The old version is any checkout whose `python/` holds a built `roscope`
package (copy its `_core*.so` there, or build it with maturin). Differences
that a change documents on purpose (renamed keys, new keys, new units) are
applied to the old output first by `RENAMES` below, so what remains is a real
difference; each is printed, and the exit status is 1 if any remains.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TRACES = os.path.join(os.path.dirname(REPO), "shared", "traces")

TRACES = [
    "ros2/caret-end-to-end-cyclonedds",
    "ros2/caret-intra-process-galactic",
    "ros2/caret-talker-listener-galactic",
    "ros2/pingpong-rolling-2021",
    "ros1/nodes-pipeline-melodic",
    "ros2/autoware-carla-galactic",
]
FLOWS = [
    ("ros2/caret-end-to-end-cyclonedds", "^/topic1$", "^/topic3$"),
    ("ros2/caret-end-to-end-cyclonedds", "^/topic[12]$", "^/(drive|topic4)$"),
    ("ros2/caret-end-to-end-cyclonedds", ".", "."),
    ("ros2/caret-intra-process-galactic", "^/topic1$", "^/topic2$"),
    ("ros2/pingpong-rolling-2021", "^/ping$", "^/pong$"),
    ("ros2/caret-talker-listener-galactic", ".", "."),
]

# Issue 9 unified statistic names across verbs: flow's quantiles were q25/q50/q75
# (ns, no suffix), counts were `n`; every statistic is now `<name>_ns` with p25/p50/p75,
# and counts are `count`.
FLOW_STAT_RENAMES = {"min": "min_ns", "mean": "mean_ns", "std": "std_ns", "q25": "p25_ns", "q50": "p50_ns",
                     "q75": "p75_ns", "p99": "p99_ns", "max": "max_ns", "n": "count"}
VOLATILE = {"seconds", "us_per_flow", "compute_ns", "ns_per_flow"}


def run(python_path: str | None, args: list[str]) -> tuple[int, bytes, bytes]:
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path
    else:
        env.pop("PYTHONPATH", None)
    p = subprocess.run([sys.executable, "-m", "roscope", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, cwd="/")
    return p.returncode, p.stdout, p.stderr


def stats_order(obj):
    """Nodes tied on busy time came in no fixed order before (now by name): compare them in one order."""
    obj["nodes"] = sorted(obj["nodes"], key=lambda n: (-(n["busy_ns"] or 0), str(n["node"]), n["pid"]))
    return obj


def rename_flow_stats(obj):
    """The old flow JSON's statistic dicts, with the new names."""
    if isinstance(obj, dict):
        if "q50" in obj and "mean" in obj:
            return {FLOW_STAT_RENAMES.get(k, k): v for k, v in obj.items()}
        return {k: rename_flow_stats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rename_flow_stats(v) for v in obj]
    return obj


def drop_timings(obj):
    """Wall-clock figures (seconds, µs per flow) differ from run to run: not outputs."""
    if isinstance(obj, dict):
        return {k: drop_timings(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [drop_timings(v) for v in obj]
    return obj


def diff(a, b, path="$", out=None, limit=20):
    """Differences between two JSON values; keys only in the new one are additions, not differences."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                out.append(f"{path}.{k}: gone")
            else:
                diff(a[k], b[k], f"{path}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out, limit)
    elif isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or abs(float(a) - float(b)) > 1e-9 * max(1.0, abs(float(a))):
            out.append(f"{path}: {a!r} -> {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")
    return out


def compare_json(before: str, label: str, args: list[str], normalize) -> bool:
    rb, ob, eb = run(before, args)
    ra, oa, ea = run(None, args)
    if rb != 0 or ra != 0:
        print(f"  {label}: exit {rb} before, {ra} after\n{eb.decode()[-400:]}{ea.decode()[-400:]}")
        return False
    old, new = drop_timings(normalize(json.loads(ob))), drop_timings(json.loads(oa))
    if args[0] == "stats":
        old, new = stats_order(old), stats_order(new)
    d = diff(old, new)
    print(f"  {label}: {'same' if not d else 'DIFFERENT'}")
    for line in d:
        print(f"      {line}")
    return not d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the old version's python/ directory")
    ap.add_argument("--traces", default=DEFAULT_TRACES)
    a = ap.parse_args()
    ok = True
    for t in TRACES:
        path = os.path.join(a.traces, t)
        if not os.path.isdir(path):
            print(f"{t}: not found, skipped")
            continue
        print(t)
        rb, ob, _ = run(a.before, ["dump", path])
        ra, oa, _ = run(None, ["dump", path])
        same = rb == ra == 0 and ob == oa
        print(f"  dump: {'same' if same else 'DIFFERENT'} ({len(oa.splitlines()):,} events, "
              f"sha256 {hashlib.sha256(oa).hexdigest()[:16]})")
        ok &= same
        ok &= compare_json(a.before, "stats --json", ["stats", "--json", path], lambda x: x)
        ok &= compare_json(a.before, "executor --json", ["executor", "--json", path], rename_flow_stats)
        for ft, fr, to in FLOWS:
            if ft == t:
                ok &= compare_json(a.before, f"flow --json --from {fr} --to {to}",
                                   ["flow", "--json", path, "--from", fr, "--to", to], rename_flow_stats)
    print("outputs unchanged" if ok else "outputs differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
