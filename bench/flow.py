#!/usr/bin/env python3
"""End-to-end path extraction benchmark on a synthesized 10M-event Autoware trace.

1. Generates (once, cached in bench/results/flow-10M) a >= 10M-event trace of the
   Autoware reference system with tools/ros2sim (4 processes, Rolling layouts).
2. `roscope load` it into a database (timed, peak RSS).
3. `roscope flow DB --from SENSORS --to COMMANDS` (timed in a child process, peak
   RSS; the Rust part's time per data flow is reported by roscope itself).
4. The reference: tests/support/flow_reference.py, Algorithm 1 in plain Python on the same
   database and rules, on the first N output messages; µs per data flow of both,
   and the check that both find the same flows for those outputs.

    .venv/bin/python -m bench.flow [--outputs 300] [--implicit auto|all] [--duration 31.5]

A shorter --duration (seconds of simulated time; 31.5 s gives > 10M events) makes a
smaller trace, cached apart (bench/results/flow-<duration>s), for quick comparisons
(tests/support/big_trace.py makes them; the tests read them too).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from bench.decode import RESULTS, bt2_count, run_measured
from tests.support.big_trace import DEFAULT_DURATION, FROM, TO, ensure_trace, trace_dir

BENCH = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outputs", type=int, default=300, help="output messages for the Python reference")
    ap.add_argument("--implicit", default="auto", choices=["auto", "all", "annotations"])
    ap.add_argument("--duration", type=float, default=DEFAULT_DURATION, help="seconds of simulated time (default 31.5)")
    a = ap.parse_args()
    trace = ensure_trace(a.duration)
    events = bt2_count(trace)["events"]
    db = trace_dir(a.duration) + ".duckdb"
    r_load = run_measured([sys.executable, "-m", "roscope", "load", trace, "-o", db, "--force"])
    assert r_load["rc"] == 0, r_load["stderr"]
    r_flow = run_measured([sys.executable, "-m", "roscope", "flow", db, "--from", FROM, "--to", TO,
                           "--implicit", a.implicit, "--json"])
    assert r_flow["rc"] == 0, r_flow["stderr"]
    fj = json.loads(r_flow["stdout"])
    s = fj["summary"]

    # The reference, on the first N outputs, and the same outputs through roscope.
    import roscope
    from roscope import flow as fl

    from tests.support import flow_reference

    d = roscope.open(db)
    pairs = flow_reference.implicit_pairs(d, a.implicit)
    t0 = time.perf_counter()
    outs, ref_flows = flow_reference.run(d, FROM, TO, pairs, a.outputs)
    t_ref = time.perf_counter() - t0
    # roscope again, on all outputs, keeping every flow's steps, for the comparison
    # (the results are views on this read-only connection).
    fl.data_flows(d, FROM, TO, implicit=a.implicit, all_steps=True)
    ours = d.con.execute(
        "SELECT f.flow_id, list(s.is_run ORDER BY s.step), list(s.id ORDER BY s.step) FROM data_flows f "
        "JOIN data_flow_steps s USING (flow_id) WHERE f.output_publication_id IN (SELECT unnest(?)) GROUP BY f.flow_id",
        [outs]).fetchall()
    ours_set = sorted(tuple(("r" if k else "p", i) for k, i in zip(ks, ids)) for _f, ks, ids in ours)
    ref_set = sorted(tuple(x) for x in ref_flows)
    same = ours_set == ref_set
    ref_us = 1e6 * t_ref / max(len(ref_flows), 1)
    res = {
        "trace": trace, "events": events,
        "load_s": r_load["wall"], "load_peak_mib": r_load["maxrss_kib"] / 1024,
        "flow_cli_s": r_flow["wall"], "flow_peak_mib": r_flow["maxrss_kib"] / 1024,
        "flows": s["flows"], "outputs": s["outputs"], "paths": s["paths"], "rust_seconds": s["compute_ns"] / 1e9,
        "us_per_flow": s["ns_per_flow"] / 1e3 if s["ns_per_flow"] else None,
        "reference_outputs": len(outs), "reference_flows": len(ref_flows), "reference_s": t_ref,
        "reference_us_per_flow": ref_us, "same_flows_as_reference": same,
    }
    res["ratio_vs_reference"] = ref_us / res["us_per_flow"] if res["us_per_flow"] else None
    res["ratio_vs_paper_8ms"] = 8000 / res["us_per_flow"] if res["us_per_flow"] else None
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "flow.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"{trace}: {events:,} events")
    print(f"  roscope load          {res['load_s']:8.2f} s   peak {res['load_peak_mib']:.0f} MiB")
    print(f"  roscope flow (CLI)    {res['flow_cli_s']:8.2f} s   peak {res['flow_peak_mib']:.0f} MiB")
    print(f"  data flows {res['flows']:,} from {res['outputs']:,} outputs on {res['paths']} paths: "
          f"{res['rust_seconds']:.3f} s in Rust = {res['us_per_flow']:.2f} µs per flow")
    print(f"  Python reference (Algorithm 1, {len(outs)} outputs, {len(ref_flows):,} flows): "
          f"{ref_us:.1f} µs per flow -> roscope is {res['ratio_vs_reference']:.0f}x faster; same flows: {same}")
    print(f"  vs TUM's published 8-60 ms per flow: {res['ratio_vs_paper_8ms']:.0f}x to {res['ratio_vs_paper_8ms'] * 7.5:.0f}x less")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
