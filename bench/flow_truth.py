#!/usr/bin/env python3
"""Data flows against ground truth on recorded ROS 1 systems (issues 10 and 29).

Records examples/ros1_unannotated, examples/ros1_onebinary and examples/ros1_pipeline once each with
`roscope record` (--duration seconds) into bench/results/flow_truth/<system>/
(replacing an earlier recording there; --reuse measures the recordings already
there), then measures `roscope.flow.data_flows` against the nodes' own
ground-truth logs (tests/support/flow_truth.py: identities and latencies from the logs and
babeltrace2, independent of roscope): precision and recall of the (input message,
output message) pairs, pairs counted more than once, latency error; and, where
races make flows uncertain (examples/ros1_onebinary's 2-thread mapper), how many
were flagged (unc) and the precision of the others (prec/cert).

Rows: per system, data_flows' default and each implicit-dependency mode (auto, all,
none); examples/ros1_pipeline with its annotations removed from the loaded
database, and once with them (auto) as the reference; and, when data_flows has
`all_paths`, the data-flow paper's rule of one flow per candidate path (implicit
'all', all_paths=True).

    .venv/bin/python -m bench.flow_truth [--duration 5] [--reuse]

Prints the table and writes bench/results/flow_truth.json.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from tests.support import flow_truth as ft

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"



def recording(system: str, duration: float, reuse: bool) -> tuple[Path, Path]:
    base = RESULTS / "flow_truth" / system
    if reuse:
        if not (base / "trace").is_dir():
            raise SystemExit(f"flow_truth: --reuse: no recording in {base}")
        return base / "trace", base / "gt"
    if base.exists():
        shutil.rmtree(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    print(f"flow_truth: recording {system} for {duration:g} s ...", file=sys.stderr)
    return ft.record(system, base, duration)


def measure_system(system: str, trace: Path, gt: Path) -> tuple[dict, list[dict]]:
    import roscope
    from roscope import flow

    spec = ft.SYSTEMS[system]
    truth = ft.select(ft.ground_truth(trace, gt), spec["from"], spec["to"])
    db = roscope.open(str(trace))
    rows = []
    annotated = db.records("SELECT count(*) AS n FROM annotations")[0]["n"] > 0
    label = system
    if annotated:
        r = ft.measure(db, truth, implicit="auto")
        r["system"] = f"{system} (annotated)"
        rows.append(r)
        ft.without_annotations(db)
        label = f"{system} (annotations removed)"
    for mode in (None, *ft.MODES):
        r = ft.measure(db, truth, implicit=mode)
        r["system"] = label
        rows.append(r)
    deps = ft.dependency_file(system, trace.parent / "deps")
    r = ft.measure(db, truth, implicit="auto", deps=str(deps))
    r["system"] = label
    r["implicit"] = "auto+deps"
    rows.append(r)
    if r["flagged_pairs"]:  # races: the same without the uncertain flows (--uncertain drop)
        r = ft.measure(db, truth, implicit="auto", deps=str(deps), uncertain="drop")
        r["system"] = label
        r["implicit"] = "deps/drop"
        rows.append(r)
    for rule in getattr(flow, "FALLBACK_RULES", ())[1:]:
        r = ft.measure(db, truth, implicit="auto", fallback=rule)
        r["system"] = label
        r["implicit"] = f"auto/{rule}"
        rows.append(r)
    if ft.has_option("all_paths"):
        r = ft.measure(db, truth, implicit="all", all_paths=True)
        r["system"] = label
        r["implicit"] = "all+paths"
        rows.append(r)
    db.close()
    info = {"from": spec["from"], "to": spec["to"], "true_pairs": len(truth.pairs),
            "messages": len(truth.messages), "recording": str(trace.parent), "annotations_in_trace": annotated}
    return info, rows


def write_json(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds each system runs (default 5)")
    ap.add_argument("--reuse", action="store_true", help="measure the recordings of an earlier run")
    a = ap.parse_args()
    import roscope

    systems, rows = {}, []
    for system in ft.SYSTEMS:
        trace, gt = recording(system, a.duration, a.reuse)
        systems[system], r = measure_system(system, trace, gt)
        rows += r
    print(ft.table(rows))
    print("prec: true pairs / distinct pairs found; prec/fl: flows that are a true pair / flows; "
          "twice: pairs in more than one flow; extra: flows beyond the first of each pair; "
          "all+paths: implicit='all', one flow per candidate path (the data-flow paper); "
          "unc: pairs of flows flagged uncertain (races); prec/cert: precision over the other pairs; "
          "deps/drop: --deps with --uncertain drop")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "flow_truth.json"
    write_json(out, {"created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     "roscope_version": roscope.__version__, "duration_s": a.duration,
                     "systems": systems, "results": rows})
    print(f"flow_truth: results in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
