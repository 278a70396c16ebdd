#!/usr/bin/env python3
"""Shows that a change of roscope kept its outputs: runs two versions of the
package side by side on the same inputs, in the same run, and compares
`roscope dump` (every byte), `roscope stats --json`, `roscope executor --json`,
`roscope why --json` (with its slowest flows where a topic pair is known),
`roscope flow --json` (every response-time definition, over slices of the model,
one message's graph) and the report's data (every value of `roscope report`'s
page: its text exactly, its numbers up to floating rounding).

    scripts/compare_outputs.py --before /path/to/old/checkout/python [--after DIR]
        [--traces DIR] [--inputs DIR] [--no-generate] [--only NAME]

Inputs: the shared traces (`--traces`), and, made once with the old version's
tools and kept in `--inputs` (default /tmp/roscope-compare): three ros2sim runs
(tools/ros2sim, real LTTng) and a recording of the ROS 1 example
(examples/ros1_pipeline) made with `roscope record --kernel` (perf's scheduler
events, so that `why` has kernel data); `--no-generate` compares the shared
traces only. The old version is any checkout whose `python/` holds a built
`roscope` package (copy its `_core*.so` there, or build it with maturin); the
new one is `--after` (default: this checkout's python/). Differences that a
change documents on purpose (renamed keys, new keys, new units, a distro
named more precisely) are applied to the old output first (`rename_flow_stats`,
`old_flow` with `FLOW_NEW_KEYS` and `RESPONSE_NEW_KEYS`, `rename_flavour`), so what remains is a real
difference: a value that changed, a key gone, or a key only in the new output
that no change documents; each is printed, and the exit status is 1 if any remains.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(REPO), "shared", "traces"))
DEFAULT_INPUTS = os.path.join(tempfile.gettempdir(), "roscope-compare")

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
    # every topic to every topic: over slices (--slice), outputs searched again with what their slice
    # lacked answered from the database
    ("ros2/autoware-carla-galactic", ".", "."),
    ("ros2sim/autoware", "^/(FrontLidarDriver|RearLidarDriver|PointCloudMap|Lanelet2Map)$",
     "^/(VehicleInterface|VehicleDBWSystem)$"),
    ("ros2sim/partial-sync", "^/topic_(a|b)$", "^/topic_c$"),
    ("ros2sim/periodic-async", "^/topic_(a|b)$", "^/topic_c$"),
    ("ros1/pipeline-kernel", "^/(lidar|imu|camera)$", "^/plan$"),
]
#: The generated inputs: (name, how it is made).
GENERATED = [
    ("ros2sim/autoware", ["ros2sim", "autoware_reference_system", "rolling", "2"]),
    ("ros2sim/partial-sync", ["ros2sim", "mfa_fig6b_partial_sync", "rolling", "1.5"]),
    ("ros2sim/periodic-async", ["ros2sim", "mfa_fig6a_periodic_async", "jazzy", "1.5"]),
    ("ros1/pipeline-kernel", ["ros1"]),
]
#: One flow pair per input gets every variant (definitions, slices, one message's graph, the report).
FLOW_VARIANTS = [
    [], ["--definition", "dataflow"], ["--definition", "caret"], ["--definition", "caret", "--end", "callback_end"],
    ["--slice", "500"], ["--slice", "500", "--all-paths", "--implicit", "all"],
]

# Issue 9 unified statistic names across verbs: flow's quantiles were q25/q50/q75
# (ns, no suffix), counts were `n`; every statistic is now `<name>_ns` with p25/p50/p75,
# and counts are `count`.
FLOW_STAT_RENAMES = {"min": "min_ns", "mean": "mean_ns", "std": "std_ns", "q25": "p25_ns", "q50": "p50_ns",
                     "q75": "p75_ns", "p99": "p99_ns", "max": "max_ns", "n": "count"}
VOLATILE = {"seconds", "us_per_flow", "compute_ns", "ns_per_flow"}
# Issue 29 added races to the flow: its summary says the --uncertain mode, the flows kept
# uncertain and those dropped. The old version had no races: its output gets the values
# that mean so (keep, none, none), and a flow the new one flags or drops is a difference.
FLOW_NEW_KEYS = {"uncertain": "keep", "flows_uncertain": 0, "uncertain_dropped": 0}
# Issue 29 also leaves out of the response-time statistics the cases whose cycle may begin
# before the trace (the first output's; under --definition caret its best case too, as CARET
# does) and counts them per case in each response_times entry's `left_out`. The old version
# left none out: its entries get an empty `left_out`, and the statistics of an entry that
# now leaves cases out remain a difference (on purpose: one case fewer per definition).
RESPONSE_NEW_KEYS = {"left_out": {}}
# Issue 26 names the distro of a tracetools 8 trace by its minor version (flavour.py: 8.2 Jazzy,
# 8.6 Kilted, Rolling between and after), where "Jazzy or later" was said of them all: the old
# report's "ROS flavour" fact gets the new name when the new one is such a distro.
_FLAVOUR_FACT = '<div class="v">ROS 2 ({})</div><div class="k">ROS flavour</div>'
_FLAVOUR_8 = re.compile(re.escape(_FLAVOUR_FACT).replace(r"\{\}", r"(Jazzy|Kilted|Rolling \(20\d\d(?: on)?\))"))


# Issue 30 (honest presentation, executor table): keys only in the new output, taken out of it
# before comparing: stats' transport latency per topic; why's trace start, the seconds from it
# beside each absolute time, and why a section is empty; executor's callbacks per thread, and its executor
# objects with their callback groups (CARET's executor events; `[]` on a trace without them).
NEW_ONLY_KEYS = {"stats": {"transport_count", *(f"transport_{s}_ns" for s in ("min", "mean", "std", "p50", "p90",
                                                                            "p99", "max"))},
                 "why": {"trace_start_ts", "dropped", "start_s", "end_s", "publish_s"},
                 "executor": {"executors", "executor_objects"}}
# ... and stats' warnings about a trace without takes, transport links or callback events
# (roscope.stats.warnings); why without kernel data gives its flows' scheduling split as null
# (not measured), where zeros were given.
NEW_WARNINGS = ("the trace has no take events", "the trace has no callback events", "subscribed topic")
NEW_WARNING = re.compile(r"^the trace has [\d,]+ takes but no transport link")


# The report's executors section gained the callbacks per executor thread (issue 30), a fold, and, where the
# trace has CARET's executor events, the executors with their callback groups, another.
NEW_FOLD = re.compile(r'<details class="fold"><summary>(?:Callbacks per executor thread|Executors and callback groups) '
                      r'\(.*?</details>', re.S)


def new_only(verb: str, obj):
    """The new output without what issue 30 added (`NEW_ONLY_KEYS`, `NEW_WARNINGS`)."""
    keys = NEW_ONLY_KEYS.get(verb, set())

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in keys}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    obj = strip(obj)
    if verb == "stats" and isinstance(obj.get("warnings"), list):
        obj["warnings"] = [w for w in obj["warnings"] if not (str(w).startswith(NEW_WARNINGS) or NEW_WARNING.match(str(w))
                                                             or "no publication matched to a take" in str(w))]
    if verb == "why" and not obj.get("kernel"):
        for f in obj.get("flows") or []:
            for k in ("on_cpu_ns", "runnable_ns", "blocked_ns"):
                if f.get(k) is None:
                    f[k] = 0
    return obj


def rename_flavour(old_page: str, new_page: str) -> str:
    """The old report page with issue 26's distro name of a tracetools 8 trace (`_FLAVOUR_8`)."""
    m = _FLAVOUR_8.search(new_page)
    return old_page.replace(_FLAVOUR_FACT.format("Jazzy or later"), m.group(0)) if m else old_page


def run(python_path: str, args: list[str]) -> tuple[int, bytes, bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = python_path
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


def old_flow(obj):
    """The old `flow --json`, with the new names (`rename_flow_stats`), the summary's new keys
    (`FLOW_NEW_KEYS`) and the response times' (`RESPONSE_NEW_KEYS`) at the values that mean
    the old behaviour."""
    obj = rename_flow_stats(obj)
    summary = obj.get("summary") if isinstance(obj, dict) else None
    if isinstance(summary, dict) and "flows" in summary:
        obj["summary"] = {**summary, **{k: v for k, v in FLOW_NEW_KEYS.items() if k not in summary}}
    if isinstance(obj, dict) and isinstance(obj.get("response_times"), list):
        obj["response_times"] = [{**r, **{k: v for k, v in RESPONSE_NEW_KEYS.items() if k not in r}}
                                 if isinstance(r, dict) else r for r in obj["response_times"]]
    return obj


def drop_timings(obj):
    """Wall-clock figures (seconds, µs per flow) differ from run to run: not outputs."""
    if isinstance(obj, dict):
        return {k: drop_timings(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [drop_timings(v) for v in obj]
    return obj


def diff(a, b, path="$", out=None, limit=20):
    """Differences between two JSON values (the old one normalized first): a key only in
    the new one is one too, since the documented new keys were added to the old one."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                out.append(f"{path}.{k}: gone")
            else:
                diff(a[k], b[k], f"{path}.{k}", out, limit)
        out.extend(f"{path}.{k}: new, not documented here" for k in b if k not in a)
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


def compare_json(before: str, after: str, label: str, args: list[str], normalize=lambda x: x) -> bool:
    rb, ob, eb = run(before, args)
    ra, oa, ea = run(after, args)
    if rb != 0 or ra != 0:
        print(f"  {label}: exit {rb} before, {ra} after\n{eb.decode()[-400:]}{ea.decode()[-400:]}")
        return False
    # What issue 30 added is left out of both sides: a "before" that has it (any build since) compares as equal.
    old, new = drop_timings(new_only(args[0], normalize(json.loads(ob)))), drop_timings(new_only(args[0], json.loads(oa)))
    if args[0] == "stats":
        old, new = stats_order(old), stats_order(new)
    d = diff(old, new)
    print(f"  {label}: {'same' if not d else 'DIFFERENT'}")
    for line in d:
        print(f"      {line}")
    return not d


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def report_diff(a: str, b: str, limit: int = 20) -> list[str]:
    """Differences between two report pages: their text (numbers taken out) exactly,
    their numbers up to floating rounding (DuckDB sums in a different order from run
    to run: a standard deviation's last digits move)."""
    ta, tb = _NUMBER.split(a), _NUMBER.split(b)
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    out = []
    if ta != tb:
        k = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
        out.append(f"text differs near {(ta[k] if k < len(ta) else '')[:80]!r} / {(tb[k] if k < len(tb) else '')[:80]!r}")
        return out
    for i, (x, y) in enumerate(zip(na, nb)):
        if x != y and abs(float(x) - float(y)) > 1e-9 * max(1.0, abs(float(x))):
            out.append(f"value {i}: {x} -> {y} (near {ta[i][-60:]!r})")
            if len(out) >= limit:
                break
    return out


def compare_report(before: str, after: str, label: str, path: str, pair: tuple[str, str] | None, tmp: str) -> bool:
    pages = []
    for version in (before, after):
        out = os.path.join(tmp, "report.html")
        args = ["report", path, "-o", out, "--force"] + (["--from", pair[0], "--to", pair[1]] if pair else [])
        rc, _o, err = run(version, args)
        if rc != 0:
            print(f"  {label}: exit {rc}\n{err.decode()[-400:]}")
            return False
        with open(out, encoding="utf-8") as f:
            pages.append(f.read())
    # Out of both sides, as `new_only` does: an old build that has the folds too compares as equal.
    pages = [NEW_FOLD.sub("", p) for p in pages]
    d = report_diff(rename_flavour(*pages), pages[1])
    print(f"  {label}: {'same' if not d else 'DIFFERENT'} ({len(_NUMBER.findall(pages[1])):,} values)")
    for line in d:
        print(f"      {line}")
    return not d


def generate(inputs: str, before: str) -> dict[str, str]:
    """The generated inputs (`GENERATED`), made on the first run into `inputs`; {name: trace directory}."""
    made = {}
    for name, how in GENERATED:
        out = os.path.join(inputs, name)
        trace = os.path.join(out, "traces" if how[0] == "ros2sim" else "trace")
        if not os.path.isdir(trace):
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            print(f"{name}: making it ...", file=sys.stderr)
            if how[0] == "ros2sim":
                sim = os.path.join(REPO, "tools", "ros2sim")
                subprocess.run(["make", "-s", "-C", sim], check=True, stdout=subprocess.DEVNULL)
                cmd = [sys.executable, os.path.join(sim, "ros2sim.py"), "run", "--preset", how[1], "--distro", how[2],
                       "--duration", how[3], "--out", out]
                env = None
            else:  # the ROS 1 example under `roscope record --kernel` (the old version's recorder)
                subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True,
                               stdout=subprocess.DEVNULL)
                subprocess.run(["make", "-s", "-C", os.path.join(REPO, "examples", "ros1_pipeline")], check=True,
                               stdout=subprocess.DEVNULL)
                cmd = [sys.executable, "-m", "roscope", "record", "-o", trace, "--kernel", "--",
                       os.path.join(REPO, "examples", "ros1_pipeline", "system.sh"), "-d", "5", "-g",
                       os.path.join(out, "ground-truth")]
                tracer = os.path.join(REPO, "instrument", "ros1", "build", "libroscope_ros1.so")
                env = {"ROSCOPE_ROS1_TRACER": tracer, **os.environ, "PYTHONPATH": before}
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            if p.returncode != 0 or not os.path.isdir(trace):
                print(f"{name}: could not be made, skipped ({p.returncode}):\n{p.stdout[-400:]}{p.stderr[-800:]}")
                continue
        made[name] = trace
    return made


def compare_input(a, name: str, path: str, tmp: str) -> bool:
    """Every comparison of one input (a trace directory)."""
    print(name)
    ok = True
    rb, ob, _ = run(a.before, ["dump", path])
    ra, oa, _ = run(a.after, ["dump", path])
    same = rb == ra == 0 and ob == oa
    print(f"  dump: {'same' if same else 'DIFFERENT'} ({len(oa.splitlines()):,} events, "
          f"sha256 {hashlib.sha256(oa).hexdigest()[:16]})")
    ok &= same
    ok &= compare_json(a.before, a.after, "stats --json", ["stats", "--json", path])
    ok &= compare_json(a.before, a.after, "executor --json", ["executor", "--json", path], rename_flow_stats)
    ok &= compare_json(a.before, a.after, "why --json", ["why", "--json", path])
    pairs = [(fr, to) for ft, fr, to in FLOWS if ft == name]
    for i, (fr, to) in enumerate(pairs):
        for extra in FLOW_VARIANTS if i == 0 else [[]]:
            ok &= compare_json(a.before, a.after, f"flow --json --from {fr} --to {to} {' '.join(extra)}".rstrip(),
                               ["flow", "--json", path, "--from", fr, "--to", to, *extra], old_flow)
    if pairs:
        fr, to = pairs[0]
        ok &= compare_json(a.before, a.after, f"why --json --from {fr} --to {to}",
                           ["why", "--json", path, "--from", fr, "--to", to])
        ok &= compare_json(a.before, a.after, "flow --json --message 0", ["flow", "--json", path, "--message", "0"])
        ok &= compare_json(a.before, a.after, "flow --json --message 0 --slice 500",
                           ["flow", "--json", path, "--message", "0", "--slice", "500"])
    if name != "ros2/autoware-carla-galactic":  # its page is the largest; the others cover every section
        ok &= compare_report(a.before, a.after, "report (the page's data)", path, pairs[0] if pairs else None, tmp)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the old version's python/ directory")
    ap.add_argument("--after", default=os.path.join(REPO, "python"), help="the new version's python/ directory")
    ap.add_argument("--traces", default=DEFAULT_TRACES)
    ap.add_argument("--inputs", default=DEFAULT_INPUTS, help="where the generated inputs are kept")
    ap.add_argument("--no-generate", action="store_true", help="the shared traces only")
    ap.add_argument("--only", action="append", metavar="NAME", help="only these inputs (repeatable)")
    a = ap.parse_args()
    a.before, a.after = os.path.abspath(a.before), os.path.abspath(a.after)
    ok = True
    inputs = {t: os.path.join(a.traces, t) for t in TRACES}
    if not a.no_generate:
        inputs.update(generate(a.inputs, a.before))
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in inputs.items():
            if a.only and name not in a.only:
                continue
            if not os.path.isdir(path):
                print(f"{name}: not found, skipped")
                continue
            ok &= compare_input(a, name, path, tmp)
    print("outputs unchanged" if ok else "outputs differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
