"""roscope flow next to TUM's own tool on the real Autoware recording (issue 10).

TUM-AVS/ros2_latency_analysis, branch `dataflow-analysis`, is the data-flow
paper's authors' tool: a notebook (`trace-analysis.ipynb`) over tracetools_analysis.
This script runs the notebook's steps (load, `TrContext`, `LatencyGraph`,
`build_dep_trees`, `e2e_paths_sorted_desc`, `aggregate_e2e_paths`,
`e2e_latency_breakdown`) on a trace, in the tool's own environment, and
`roscope flow` on the same trace with the same dependency rules (every callback
pair of a node, the newest publication on the topic: `--implicit all --fallback
pairs --no-exact-links`), then compares them message by message: for every flow
both find on the same path (matched by the output's and the input's `rcl_publish`
timestamps and the path's topics and callbacks), the end-to-end latency and its
communication (TUM: dds) / idle / computation (TUM: cpu) split.

Setup (none of it is part of `make setup`; nothing goes into roscope's .venv):

    # the tool and the two ROS 2 Python packages it imports, from source
    git -C MIRROR/TUM-AVS+ros2_latency_analysis archive dataflow-analysis | tar -x -C $TUM_ROOT/src/ros2_latency_analysis
    git -C MIRROR/ros-tracing+tracetools_analysis archive humble | tar -x -C $TUM_ROOT/src/tracetools_analysis
    git -C MIRROR/ros2+ros2_tracing archive humble | tar -x -C $TUM_ROOT/src/ros2_tracing
    # tracetools_read reads CTF through babeltrace 1's Python bindings (the tool's README asks for them)
    apt-get install python3-babeltrace
    python3 -m venv --system-site-packages $TUM_ROOT/venv
    $TUM_ROOT/venv/bin/pip install bidict graphviz matplotlib "numpy<2" "pandas==1.5.3" pyvis ruamel.yaml termcolor tqdm

The humble branch of tracetools_analysis is the one whose data model has the
columns the tool's `tr_types` expects (`rcl_publishers`, `rcl_publish_instances`).
Paths are taken from the environment: TUM_ROOT (default ~/tum-compare), TUM_SRC (default $TUM_ROOT/src), TUM_PYTHON
(default $TUM_ROOT/venv/bin/python), TUM_CACHE (default $TUM_ROOT/cache: the
tool's converted trace, as tracetools_analysis caches it, and its results).

Run (from the repository root, with roscope's .venv):

    .venv/bin/python bench/tum_compare.py [TRACE] [--db DB]

TRACE defaults to $TUM_ROOT/artifacts/aw_scenario/tracing/scenario-trace
(TUM-AVS/ros2_latency_analysis commit e4e3f151, artifacts/aw_scenario), DB to
/tmp/aws.duckdb (`roscope load TRACE -o DB`). Prints the comparison table and
writes bench/results/tum_compare.json. `tum_compare.py tum ...` is the half that
runs inside the tool's venv.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
TUM = os.environ.get("TUM_ROOT", os.path.expanduser("~/tum-compare"))
TRACE = os.path.join(TUM, "artifacts/aw_scenario/tracing/scenario-trace")
TUM_SRC = os.environ.get("TUM_SRC", os.path.join(TUM, "src"))
TUM_PYTHON = os.environ.get("TUM_PYTHON", os.path.join(TUM, "venv/bin/python"))
TUM_CACHE = os.environ.get("TUM_CACHE", os.path.join(TUM, "cache"))

OUTPUT = r"^/control/command/control_cmd$"
# The selections: (name, input topic regex).
SELECTIONS = [("tracking_objects", r"tracking/objects$"), ("pointcloud", r"pointcloud")]
# The notebook's default E2E_EXCL_PATH_PATTERNS, given to both tools.
EXCLUDE = [r"^/parameter_events", "hazard", "turn_indicator", "gear_cmd", "emergency_cmd", "emergency_state",
           "external_cmd", "/control/operation_mode"]
TOLERANCE_NS = 3000


# ---------------------------------------------------------------------------------------------
# TUM's side: runs inside the tool's venv, imports the notebook's modules
# ---------------------------------------------------------------------------------------------

def _tum_paths():
    sys.path[:0] = [os.path.join(TUM_SRC, "ros2_latency_analysis"), os.path.join(TUM_SRC, "ros2_tracing", "tracetools_read"),
                    os.path.join(TUM_SRC, "tracetools_analysis", "tracetools_analysis")]


def _ust(trace):
    ust = os.path.join(trace, "ust")
    return ust if os.path.isdir(ust) else trace


def _ns(seconds):
    return int(round(seconds * 1e9))


def tum_side(trace, out, outputs=None):
    """The notebook's cells 3, 5, 8, 14, 16, 17 and 20, with E2E_EXACT_PATH off, on `trace`
    (only the first `outputs` output messages of each publisher when given)."""
    _tum_paths()
    from message_tree import message_tree_algorithms as mta  # noqa: I001 (the tool's own modules)
    from latency_graph.latency_graph_structure import LatencyGraph
    from tracetools_analysis.conversion.ctf import convert
    from tracetools_analysis.loading import load_file
    from tracetools_analysis.processor.ros2 import Ros2Handler
    from tracing_interop.tr_types import TrCallbackInstance, TrContext, TrPublishInstance

    sys.setrecursionlimit(100000)
    timings = {}
    t = time.monotonic()
    converted = os.path.join(TUM_CACHE, "converted")
    if not os.path.isfile(converted):
        os.makedirs(TUM_CACHE, exist_ok=True)
        convert(_ust(trace), converted + ".tmp")
        os.replace(converted + ".tmp", converted)
    timings["convert_s"] = time.monotonic() - t
    t = time.monotonic()
    ctx = TrContext(Ros2Handler.process(load_file(converted)))
    timings["context_s"] = time.monotonic() - t
    t = time.monotonic()
    lat_graph = LatencyGraph(ctx)
    timings["latency_graph_s"] = time.monotonic() - t
    t = time.monotonic()
    end_topics = [tp for tp in ctx.topics if re.search(OUTPUT, tp.name)]
    searched = None
    if outputs is None:
        trees = mta.build_dep_trees(end_topics, lat_graph, ctx, EXCLUDE, 2, exact_path=None)
    else:  # build_dep_trees' own loop, over the first messages only
        msgs = [msg for tp in end_topics for pub in tp.publishers for msg in list(pub.instances)[:outputs]]
        trees = [mta.get_dep_tree(msg, lat_graph, ctx, EXCLUDE, 2, exact_path=None) for msg in msgs]
        searched = [_ns(msg.timestamp) for msg in msgs]
    timings["trees_s"] = time.monotonic() - t
    result = {"timings": timings, "outputs": sum(1 for tr in trees if tr is not None), "selections": {},
              "searched": searched}
    for name, pattern in SELECTIONS:
        t = time.monotonic()
        paths = [p for tree in trees if tree is not None for p in mta.e2e_paths_sorted_desc(tree, [pattern])]
        cohorts = mta.aggregate_e2e_paths(paths)
        keys = {}
        rows = []
        for key, members in cohorts.items():
            kid = keys.setdefault(key, len(keys))
            for p in members:
                parts = defaultdict(float)
                for item in mta.e2e_latency_breakdown(p):
                    parts[item.type] += item.duration
                # A loop: the same callback, or the same topic, twice on one path.
                places = [("run", i.callback_object) if isinstance(i, TrCallbackInstance) else ("pub", i.publisher_handle)
                          for i in p]
                inputs = [i for i in p if isinstance(i, TrPublishInstance)]
                runs = [i for i in p if isinstance(i, TrCallbackInstance)]
                rows.append([kid, _ns(p[-1].timestamp), _ns(inputs[0].timestamp), _ns(p[0].timestamp),
                             _ns(p[-1].timestamp - p[0].timestamp), _ns(parts["dds"]), _ns(parts["idle"]),
                             _ns(parts["cpu"]), int(len(set(places)) < len(places)),
                             hash(tuple(map(id, p))) & 0x7FFFFFFFFFFFFFFF,
                             len(runs), " ".join(f"{k[0][0]}{k[1]}" for k in places)])
        result["selections"][name] = {
            "paths": [k for k, _ in sorted(keys.items(), key=lambda kv: kv[1])],
            "columns": ["path", "out_ts", "in_ts", "start_ts", "latency_ns", "dds_ns", "idle_ns", "cpu_ns", "loop",
                        "identity", "runs", "places"],
            "rows": rows, "seconds": time.monotonic() - t}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, out)


# ---------------------------------------------------------------------------------------------
# roscope's side and the comparison: roscope's .venv
# ---------------------------------------------------------------------------------------------

# One row per flow: its output's and input's rcl_publish timestamps, its split, and its steps
# as TUM names them (a run by its callback's address, a publication by its publisher's rcl handle).
FLOW_SQL = """
WITH st0 AS (
  SELECT st.*, max(st.step) OVER w AS last, lag(st.is_run) OVER (w ORDER BY st.step) AS prev_run,
         lead(st.is_run) OVER (w ORDER BY st.step) AS next_run
  FROM data_flow_steps st WINDOW w AS (PARTITION BY st.flow_id)),
-- TUM's run times: the start as epoch seconds rounded to the microsecond (pandas'
-- Timestamp.timestamp()), the duration truncated to the microsecond (Timedelta.total_seconds()):
-- ds, de = how far its start and end move (epoch = roscope's clock + $1)
st AS (
  SELECT st0.*, q.ds, q.ds + q.dq - r.duration_ns AS de
  FROM st0
  LEFT JOIN callback_runs r ON st0.is_run = 1 AND r.run_id = st0.id
  LEFT JOIN LATERAL (SELECT ((r.start_ts + $1 + 500) // 1000) * 1000 - $1 - r.start_ts AS ds,
                            (r.duration_ns // 1000) * 1000 AS dq) q ON st0.is_run = 1),
s AS (
  SELECT st.flow_id,
         string_agg(CASE WHEN st.is_run = 1 THEN 'r' || CAST(c.handle AS VARCHAR)
                         ELSE 'p' || CAST(pu.handle AS VARCHAR) END, ' ' ORDER BY st.step) AS places,
         -- rcl_publish - the publication time roscope uses (the earliest layer, rclcpp_publish):
         -- TUM ends a computation and starts a communication at rcl_publish
         sum(CASE WHEN st.is_run = 0 AND st.step > 0 THEN coalesce(pb.rcl_ts, pb.ts) - pi.publish_ts ELSE 0 END) AS gap_end,
         sum(CASE WHEN st.is_run = 0 AND st.step < st.last THEN coalesce(pb.rcl_ts, pb.ts) - pi.publish_ts ELSE 0 END)
           AS gap_start,
         sum(CASE WHEN st.is_run = 1 AND st.prev_run = 0 THEN st.ds ELSE 0 END) AS q_comm,
         sum(CASE WHEN st.is_run = 1 AND st.prev_run = 1 THEN st.ds ELSE 0 END)
           - sum(CASE WHEN st.is_run = 1 AND st.next_run = 1 THEN st.de ELSE 0 END) AS q_idle,
         sum(CASE WHEN st.is_run = 1 THEN -st.ds ELSE 0 END)
           + sum(CASE WHEN st.is_run = 1 AND st.next_run = 1 THEN st.de ELSE 0 END) AS q_comp
  FROM st
  LEFT JOIN callback_runs r ON st.is_run = 1 AND r.run_id = st.id
  LEFT JOIN callbacks c ON c.callback_id = r.callback_id
  LEFT JOIN publications pb ON st.is_run = 0 AND pb.publication_id = st.id
  LEFT JOIN publications_info pi ON st.is_run = 0 AND pi.publication_id = st.id
  LEFT JOIN publishers pu ON pu.publisher_id = pb.publisher_id
  GROUP BY st.flow_id)
SELECT f.flow_id, f.path_id, coalesce(o.rcl_ts, o.ts), coalesce(i.rcl_ts, i.ts), f.start_ts, f.end_ts, f.latency_ns,
       f.communication_ns, f.idle_ns, f.computation_ns, s.places, s.gap_start, s.gap_end, s.q_comm, s.q_idle, s.q_comp
FROM data_flows f
JOIN s ON s.flow_id = f.flow_id
JOIN publications o ON o.publication_id = f.output_publication_id
LEFT JOIN publications i ON i.publication_id = f.input_publication_id
ORDER BY f.flow_id
"""


def roscope_side(db_path, pattern, offset):
    """roscope's flows for one selection, with TUM's dependency rules, one per path (`--all-paths`)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    import roscope
    from roscope.flow import data_flows

    db = roscope.open(db_path)
    t = time.monotonic()
    res = data_flows(db, pattern, OUTPUT, implicit="all", fallback="pairs", exact_links=False, all_paths=True,
                     exclude=EXCLUDE, all_steps=True, max_flows_per_output=None, max_flows=None)
    seconds = time.monotonic() - t
    rows = db.con.execute(FLOW_SQL, [offset]).fetchall()
    paths = dict(db.con.execute("SELECT path_id, path FROM paths").fetchall())
    pub_ts = defaultdict(list)  # per publisher handle, in time order
    for h, t in db.con.execute("SELECT pu.handle, coalesce(pb.rcl_ts, pb.ts) AS t FROM publications pb"
                               " JOIN publishers pu USING (publisher_id) ORDER BY t").fetchall():
        pub_ts[f"p{h}"].append(t)
    return {"flows": res["flows"], "seconds": seconds, "rows": rows, "paths": paths, "warnings": res["warnings"],
            "pub_ts": pub_ts, "summary": {k: res[k] for k in ("flows", "paths", "outputs", "excluded") if k in res}}


def clock_offset(trace):
    """The trace clock's offset from the epoch, in ns (CTF metadata `clock { offset_s; offset; }`):
    tracetools_read gives epoch times, roscope the clock's own."""
    for root, _, files in os.walk(trace):
        if "metadata" in files:
            with open(os.path.join(root, "metadata"), "rb") as f:
                text = f.read()
            clock = text[text.index(b"clock {"):]
            clock = clock[:clock.index(b"}")]
            freq = re.search(rb"\bfreq\s*=\s*(\d+)", clock)
            offset_s = re.search(rb"\boffset_s\s*=\s*(-?\d+)", clock)
            offset = re.search(rb"\boffset\s*=\s*(-?\d+)", clock)
            hz = int(freq.group(1)) if freq else 10**9
            return (int(offset_s.group(1)) * 10**9 if offset_s else 0) + (int(offset.group(1)) * 10**9 // hz if offset else 0)
    raise SystemExit(f"no CTF metadata under {trace}")


def _snap(sorted_ts, t, limit=1000):
    """The publication time in `sorted_ts` (one publisher's) nearest to `t` (TUM's times went
    through float epoch seconds: steps of 238 ns), if within `limit` ns."""
    i = bisect.bisect_left(sorted_ts, t)
    best = min((sorted_ts[j] for j in (i - 1, i) if 0 <= j < len(sorted_ts)), key=lambda x: abs(x - t), default=None)
    return best if best is not None and abs(best - t) <= limit else None


def compare(tum_sel, ros, offset, searched=None):
    """Match flows by (output rcl ts, input rcl ts, steps) and compare latency and split
    (only roscope's flows into the output messages TUM searched, when it searched some)."""
    def to_roscope(publisher, t):  # TUM's epoch time (through float seconds) -> roscope's publication time
        return _snap(ros["pub_ts"].get(publisher, ()), t - offset)

    cols = tum_sel["columns"]
    ix = {c: i for i, c in enumerate(cols)}
    if searched is not None:
        out_pubs = {r[ix["places"]].split()[-1] for r in tum_sel["rows"]}
        searched = {to_roscope(p, t) for t in searched for p in out_pubs} - {None}
        ros = dict(ros, rows=[r for r in ros["rows"] if r[2] in searched])
    tum_rows = tum_sel["rows"]
    identities = Counter(r[ix["identity"]] for r in tum_rows)
    duplicates = sum(n - 1 for n in identities.values() if n > 1)
    loops = sum(r[ix["loop"]] for r in tum_rows)
    tum_by_key = {}
    for r in tum_rows:
        if r[ix["loop"]]:
            continue
        places = r[ix["places"]].split()
        pubs = [p for p in places if p[0] == "p"]
        tum_by_key.setdefault((r[ix["places"]], to_roscope(pubs[-1], r[ix["out_ts"]]), to_roscope(pubs[0], r[ix["in_ts"]])), r)
    ros_keys = Counter((r[10], r[2], r[3]) for r in ros["rows"])
    ros_dups = sum(n - 1 for n in ros_keys.values() if n > 1)
    ros_loops = sum(1 for r in ros["rows"] if len(set(r[10].split())) < len(r[10].split()))
    parts = ("latency", "communication", "idle", "computation")
    diffs = {p: [] for p in parts}
    same_pub = {p: [] for p in parts}  # roscope's parts moved to TUM's publication time (rcl_publish)
    tum_time = {p: [] for p in parts}  # ... and to TUM's microsecond run times
    matched = set()
    for r in ros["rows"]:
        t = tum_by_key.get((r[10], r[2], r[3]))
        if t is None:
            continue
        matched.add((r[10], r[2], r[3]))
        theirs = (t[ix["latency_ns"]], t[ix["dds_ns"]], t[ix["idle_ns"]], t[ix["cpu_ns"]])
        gap_start, gap_end = r[11], r[12]
        moved = (r[6] + gap_end - gap_start, r[7] - gap_start, r[8], r[9] + gap_end)
        quantized = (moved[0] + r[13] + r[14] + r[15], moved[1] + r[13], moved[2] + r[14], moved[3] + r[15])
        for p, ours, mv, qu, th in zip(parts, r[6:10], moved, quantized, theirs):
            diffs[p].append(abs(ours - th))
            same_pub[p].append(abs(mv - th))
            tum_time[p].append(abs(qu - th))
    # A path as both tools can name it: its callbacks (by address) and publishers (by handle), in order.
    tum_paths = {t[ix["places"]] for t in tum_by_key.values()}
    ros_paths = {r[10] for r in ros["rows"]}
    out = {
        "tum_rows": len(tum_rows), "tum_paths": len(tum_sel["paths"]), "tum_duplicate_rows": duplicates,
        "tum_loop_rows": loops, "tum_loop_paths": len({r[ix["path"]] for r in tum_rows if r[ix["loop"]]}),
        "tum_distinct_flows": len(tum_by_key),
        "roscope_flows": len(ros["rows"]), "roscope_paths": len(ros["paths"]), "roscope_duplicate_rows": ros_dups,
        "roscope_loop_rows": ros_loops, "roscope_seconds": ros["seconds"],
        "paths_in_common": len(tum_paths & ros_paths), "messages_compared": len(matched),
        "tum_only_flows": len(set(tum_by_key) - matched), "roscope_only_flows": len(ros_keys) - len(matched),
        "tum_distinct_paths": len(tum_paths), "roscope_distinct_paths": len(ros_paths),
    }
    for tag, table in (("", diffs), ("same_pub_", same_pub), ("tum_time_", tum_time)):
        for part, d in table.items():
            out[f"{tag}{part}_max_diff_ns"] = max(d) if d else None
            out[f"{tag}{part}_mean_diff_ns"] = sum(d) / len(d) if d else None
            out[f"{tag}{part}_within_3us"] = sum(1 for x in d if x <= TOLERANCE_NS)
    return out


def run_tum(trace, out, outputs=None):
    """TUM's half, in the tool's venv; a clear reason when it cannot run."""
    missing = [p for p in (TUM_PYTHON, os.path.join(TUM_SRC, "ros2_latency_analysis", "message_tree"),
                           os.path.join(TUM_SRC, "tracetools_analysis"), os.path.join(TUM_SRC, "ros2_tracing"))
               if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"TUM's tool is not set up (see this script's docstring): missing {', '.join(missing)}")
    t = time.monotonic()
    cmd = [TUM_PYTHON, os.path.abspath(__file__), "tum", trace, out]
    if outputs is not None:
        cmd += ["--outputs", str(outputs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"TUM's tool failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return time.monotonic() - t


def _us(ns):
    return "-" if ns is None else f"{ns / 1e3:.2f}"


def report(results):
    print(f"TUM: {results['tum']['outputs']} output messages (first {results['tum']['outputs_limit'] or 'all'});"
          " its times (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in results["tum"]["timings"].items()))
    head = ["selection", "TUM rows", "dup", "loop rows", "TUM paths", "roscope flows", "paths", "common paths",
            "compared", "max |d| us", "mean |d| us", "within 3 us"]
    print(" | ".join(head))
    for name, c in results["selections"].items():
        if "error" in c:
            print(f"{name} | {c['error']}")
            continue
        print(" | ".join(str(x) for x in (
            name, c["tum_rows"], c["tum_duplicate_rows"], c["tum_loop_rows"], c["tum_paths"], c["roscope_flows"],
            c["roscope_paths"], c["paths_in_common"], c["messages_compared"], _us(c["latency_max_diff_ns"]),
            _us(c["latency_mean_diff_ns"]), f"{c['latency_within_3us']}/{c['messages_compared']}")))
        n = c["messages_compared"]
        for part in ("latency", "communication", "idle", "computation"):
            print(f"    {part:<13} max |d| {_us(c[f'{part}_max_diff_ns'])} us (within 3 us: {c[f'{part}_within_3us']}/{n});"
                  f" publications at rcl_publish like TUM: {_us(c[f'same_pub_{part}_max_diff_ns'])} us"
                  f" ({c[f'same_pub_{part}_within_3us']}/{n}); and runs at TUM's microseconds:"
                  f" {_us(c[f'tum_time_{part}_max_diff_ns'])} us ({c[f'tum_time_{part}_within_3us']}/{n})")
        print(f"    roscope: {c['roscope_duplicate_rows']} duplicate rows, {c['roscope_loop_rows']} loop rows;"
              f" flows only TUM finds: {c['tum_only_flows']}, only roscope: {c['roscope_only_flows']}")


def compare_all(trace, db, tum_json=None, outputs=None):
    """Both tools on `trace` (roscope on its database `db`), compared per selection. TUM's
    flows come from `tum_json` when given, else from running its tool (on the first
    `outputs` output messages when given)."""
    results = {"trace": trace, "db": db, "output": OUTPUT, "exclude": EXCLUDE, "tolerance_ns": TOLERANCE_NS,
               "outputs_limit": outputs}
    if tum_json is None:
        tum_json = os.path.join(TUM_CACHE, "tum_flows.json" if outputs is None else f"tum_flows_{outputs}.json")
        results["tum_seconds"] = run_tum(trace, tum_json, outputs)
    with open(tum_json) as f:
        tum = json.load(f)
    results["tum"] = {"outputs": tum["outputs"], "timings": tum["timings"], "tum_json": tum_json,
                      "outputs_limit": None if tum.get("searched") is None else len(tum["searched"])}
    results["selections"] = {}
    results["clock_offset_ns"] = offset = clock_offset(trace)
    for name, pattern in SELECTIONS:
        ros = roscope_side(db, pattern, offset)
        c = compare(tum["selections"][name], ros, offset, tum.get("searched"))
        c["roscope_summary"] = ros["summary"]
        c.update({"from": pattern, "tum_seconds": tum["selections"][name]["seconds"]})
        results["selections"][name] = c
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    tum = sub.add_parser("tum", help="run TUM's tool (inside its venv) and write its flows as JSON")
    tum.add_argument("trace")
    tum.add_argument("out")
    tum.add_argument("--outputs", type=int, help="only the first N output messages")
    cmp_ = sub.add_parser("compare", help="run both and compare (the default)")
    cmp_.add_argument("trace", nargs="?", default=TRACE)
    cmp_.add_argument("--db", default="/tmp/aws.duckdb", help="the trace's database (roscope load TRACE -o DB)")
    cmp_.add_argument("--tum-json", help="TUM's flows written by an earlier `tum` run (default: run TUM's tool now)")
    cmp_.add_argument("--outputs", type=int, help="TUM's tool on the first N output messages only (its full run"
                      " took 28 minutes here, after a 6-minute conversion of the trace)")
    cmp_.add_argument("--out", default=os.path.join(HERE, "results", "tum_compare.json"))
    args = ap.parse_args(argv if argv is not None else (sys.argv[1:] if sys.argv[1:2] in (["tum"], ["compare"])
                                                         else ["compare", *sys.argv[1:]]))
    if args.cmd == "tum":
        tum_side(args.trace, args.out, args.outputs)
        return
    results = compare_all(args.trace, args.db, args.tum_json, args.outputs)
    report(results)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, default=str)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
