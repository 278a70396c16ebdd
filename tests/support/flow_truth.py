"""Data flows measured against a recorded ROS 1 system's own ground truth (issue 10).

Used by tests/test_flow_truth.py and bench/flow_truth.py, on recordings of
examples/ros1_unannotated and examples/ros1_pipeline (`roscope record` of their
system.sh, with the nodes' ground-truth logs).

Independent of roscope:
- identities: every node logs each message it publishes, right before
  publish(), as a JSON line {"ev": "pub", "topic", "id", "inputs", ...} in
  <gtdir>/<process>.jsonl, whose "start" line gives the process's pid. The k-th
  "pub" line of a (pid, topic) is the k-th `roscope_ros1:publish` event of that
  process's publisher of the topic, decoded here by babeltrace2 (bt2);
- the true end-to-end pairs: for each message on an output topic, its
  ancestors (the transitive closure of "inputs") on the input topics;
- latencies, by the data-flow paper's definition that `data_flows` uses: from
  the start of the callback run that published the input (its
  `roscope_ros1:callback_start`, the innermost run open on the publishing
  thread) to the output's `roscope_ros1:publish` event, both times from bt2.

roscope supplies only the flows under test (`roscope.flow.data_flows`), whose
publication ids are matched to the ground truth by (pid, publisher handle, k-th
publication in time).
"""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The implicit-dependency modes measured (roscope.flow.IMPLICIT_MODES without
#: 'annotations', which is empty on an unannotated system).
MODES = ("auto", "all", "none")

#: The systems: example directory, input and output topics of the flows.
SYSTEMS = {
    "ros1_unannotated": {
        "example": "examples/ros1_unannotated",
        "from": r"^/(sensing/(lidar|imu|camera|gnss)|vehicle/status)$",
        "to": r"^/(control/command|localization/gnss_pose|vehicle/velocity)$",
    },
    "ros1_onebinary": {
        "example": "examples/ros1_onebinary",
        # one binary, a role per process; the mapper spins two threads (races)
        "from": r"^/ob/(scan|objects|imu|cmd)$",
        "to": r"^/ob/(control|plan|cmd_echo)$",
    },
    "ros1_pipeline": {
        "example": "examples/ros1_pipeline",
        # /tf_like: a source (the localizer's timer) that the planner subscribes to
        # without using it for /plan
        "from": r"^/(lidar|imu|camera|tf_like)$",
        "to": r"^/(fused|plan)$",
    },
}


REPO = Path(__file__).resolve().parents[2]


class TruthError(Exception):
    """The ground truth and the trace do not match (a broken recording)."""


def record(system: str, out: Path, duration: float = 4.0) -> tuple[Path, Path]:
    """Builds the ROS 1 tracer and the system's example, and records it with
    `roscope record` for `duration` seconds into out/trace, its ground truth
    into out/gt (`out` must not exist or be empty). Returns (trace, gtdir)."""
    example = REPO / SYSTEMS[system]["example"]
    for d in (REPO / "instrument" / "ros1", example):
        p = subprocess.run(["make", "-s", "-C", str(d)], capture_output=True, text=True)
        if p.returncode:
            raise TruthError(f"building {d} failed:\n{p.stdout}{p.stderr}")
    trace, gt = Path(out) / "trace", Path(out) / "gt"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-m", "roscope", "record", "-o", str(trace), "--",
                        str(example / "system.sh"), "-d", str(duration), "-g", str(gt)],
                       capture_output=True, text=True, env=env, timeout=120 + duration)
    if p.returncode:
        raise TruthError(f"roscope record of {system} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return trace, gt


def read_ground_truth(gtdir: Path) -> list[dict]:
    """Every line of every <gtdir>/*.jsonl, with the process's pid (from its "start" line)."""
    rows = []
    for f in sorted(Path(gtdir).glob("*.jsonl")):
        pid = None
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TruthError(f"{f}:{n}: not a JSON line: {exc}") from None
            if r.get("ev") == "start":
                pid = r["pid"]
            r["pid"] = pid
            r["file"] = f.stem
            rows.append(r)
    if not rows:
        raise TruthError(f"{gtdir}: no ground-truth log (*.jsonl)")
    return rows


def trace_publications(trace: Path) -> tuple[dict, dict]:
    """From babeltrace2: {(vpid, publisher): topic} and, per (vpid, publisher), its
    publications in time order as (publish ts, start ts of the innermost callback
    run open on the publishing thread or None, concurrent). `concurrent`: that run
    overlapped a callback run of another thread of the process (a multi-threaded
    spinner), so the trace cannot tell which of the two read the other's state
    first. Only the processes of this recording (process_init.record_id equal to
    the manifest's)."""
    import bt2

    manifest = Path(trace) / "roscope-manifest.json"
    record_id = json.loads(manifest.read_text()).get("record_id") if manifest.exists() else None
    recorded: set[int] = set()
    topics: dict = {}
    pubs: dict = collections.defaultdict(list)
    stacks: dict = collections.defaultdict(list)  # (pid, tid) -> [[start ts, concurrent]]
    busy: dict = collections.defaultdict(set)  # pid -> threads inside a callback run
    for m in bt2.TraceCollectionMessageIterator(str(trace)):
        if type(m) is not bt2._EventMessageConst:
            continue
        ev = m.event
        name = ev.name
        if not name.startswith("roscope_ros1:"):
            continue
        name = name[len("roscope_ros1:"):]
        ctx = ev.common_context_field
        pid, tid = int(ctx["vpid"]), int(ctx["vtid"])
        ts = int(m.default_clock_snapshot.value)
        p = ev.payload_field
        if name == "process_init":
            if record_id is None or str(p["record_id"]) == record_id:
                recorded.add(pid)
        elif name == "publisher_init":
            topics[(pid, int(p["publisher"]))] = str(p["topic"])
        elif name == "callback_start":
            run = [ts, False]
            for other in busy[pid] - {tid}:
                run[1] = True
                for r in stacks[(pid, other)]:
                    r[1] = True
            stacks[(pid, tid)].append(run)
            busy[pid].add(tid)
        elif name == "callback_end":
            if stacks[(pid, tid)]:
                stacks[(pid, tid)].pop()
            if not stacks[(pid, tid)]:
                busy[pid].discard(tid)
        elif name == "publish":
            st = stacks[(pid, tid)]
            pubs[(pid, int(p["publisher"]))].append((ts, st[-1] if st else None))
    topics = {k: v for k, v in topics.items() if k[0] in recorded}
    pubs = {k: [(ts, run and run[0], bool(run and run[1])) for ts, run in v] for k, v in pubs.items() if k[0] in recorded}
    return topics, pubs


@dataclass
class Truth:
    """What the system really did, matched to the trace's publications."""

    #: ground-truth id -> {"topic", "inputs", "pid", "ts" (publish event), "run_start",
    #: "concurrent" (see trace_publications)}
    messages: dict
    #: (pid, publisher handle, k from 1) -> ground-truth id
    by_trace_key: dict
    #: the true (input id, output id) pairs -> latency (ns), for the selection below
    pairs: dict = field(default_factory=dict)
    #: the true pairs whose output or one of its ancestors was published from a
    #: concurrent run: the newest-input rule cannot be sure of them from the trace
    uncertain: set = field(default_factory=set)
    #: the true pairs whose output or one of its ancestors was published by a run that
    #: read state a run on another thread wrote while it ran (or within RACE_SLACK_NS),
    #: by the node's own log (`race_gaps`): a race
    racy: set = field(default_factory=set)
    #: per message published by a run that read state: how far the nearest writing run
    #: of the process on another thread was from it (ns; < 0: they overlapped), by the log
    race_gap: dict = field(default_factory=dict)
    from_re: str = ""
    to_re: str = ""


def ground_truth(trace: Path, gtdir: Path) -> Truth:
    """Matches the ground-truth logs to the trace's publications (bt2); raises
    TruthError when the counts of a (pid, topic) differ."""
    rows = read_ground_truth(gtdir)
    topics, pubs = trace_publications(trace)
    logged = collections.defaultdict(list)
    for r in rows:
        if r["ev"] == "pub":
            logged[(r["pid"], r["topic"])].append(r)
    handle_of = {}
    for (pid, handle), topic in topics.items():
        if (pid, topic) in handle_of:
            raise TruthError(f"process {pid} has two publishers of {topic}: publications cannot be told apart")
        handle_of[(pid, topic)] = handle
    messages, by_key = {}, {}
    for (pid, topic), lines in logged.items():
        handle = handle_of.get((pid, topic))
        if handle is None:
            raise TruthError(f"{gtdir}: process {pid} logged publications on {topic}; the trace has no such publisher")
        traced = pubs.get((pid, handle), [])
        if len(traced) != len(lines):
            raise TruthError(f"process {pid}, {topic}: {len(lines)} publications logged, {len(traced)} traced")
        for k, (r, (ts, run_start, concurrent)) in enumerate(zip(lines, traced), 1):
            messages[r["id"]] = {"topic": topic, "inputs": r["inputs"], "pid": pid, "ts": ts, "run_start": run_start,
                                 "concurrent": concurrent}
            by_key[(pid, handle, k)] = r["id"]
    for (pid, handle), traced in pubs.items():
        if traced and (pid, topics.get((pid, handle))) not in logged:
            raise TruthError(f"process {pid}: {len(traced)} traced publications on {topics.get((pid, handle))} "
                             "are not in the ground truth")
    return Truth(messages, by_key, race_gap=race_gaps(gtdir))


#: How close (ns) a writing run may come to a reading run in the log and still count
#: as a race: the trace's callback_start/end events lie a little outside the run's first
#: and last statement, which the log times, so runs the log sees a few microseconds apart
#: may overlap in the trace.
RACE_SLACK_NS = 100_000


def race_gaps(gtdir: Path) -> dict:
    """From the logs' "run" lines (examples/ros1_onebinary's mapper): for each message
    published by a run that read state ("read", "published"), the distance from that
    run to the nearest run of the same process, on another thread, that wrote the
    state ("wrote"): negative when they overlapped (by the node's clock, first to last
    statement). {published id: gap ns}."""
    gaps = {}
    for f in sorted(Path(gtdir).glob("*.jsonl")):
        runs = [json.loads(line) for line in f.read_text().splitlines() if '"ev":"run"' in line]
        writes = [r for r in runs if "wrote" in r]
        for r in runs:
            if "published" not in r:
                continue
            near = [max(w["start_ns"] - r["end_ns"], r["start_ns"] - w["end_ns"]) for w in writes if w["tid"] != r["tid"]]
            gaps[r["published"]] = min(near) if near else None
    return gaps


def select(truth: Truth, from_re: str, to_re: str) -> Truth:
    """The true end-to-end pairs from topics matching `from_re` to topics matching
    `to_re` (regexes searched in the topic, as `data_flows` does), with their latency."""
    is_in, is_out = re.compile(from_re).search, re.compile(to_re).search
    msgs = truth.messages
    pairs, uncertain, racy = {}, set(), set()

    def raced(x) -> bool:
        gap = truth.race_gap.get(x)
        return gap is not None and gap < RACE_SLACK_NS
    for out_id, m in msgs.items():
        if not is_out(m["topic"]):
            continue
        found = []
        seen, stack = set(), list(m["inputs"])
        while stack:
            x = stack.pop()
            if x in seen or x not in msgs:
                continue
            seen.add(x)
            if is_in(msgs[x]["topic"]):
                start = msgs[x]["run_start"]
                pairs[(x, out_id)] = None if start is None else m["ts"] - start
                found.append((x, out_id))
                # data_flows starts a flow at each input match and goes on deeper
            stack.extend(msgs[x]["inputs"])
        if m["concurrent"] or any(msgs[x]["concurrent"] for x in seen):
            uncertain.update(found)
        if raced(out_id) or any(raced(x) for x in seen):
            racy.update(found)
    return Truth(truth.messages, truth.by_trace_key, pairs, uncertain, racy=racy, race_gap=truth.race_gap,
                 from_re=from_re, to_re=to_re)


def publication_ids(db, truth: Truth) -> dict:
    """roscope publication_id -> ground-truth id, by (pid, publisher handle, k-th in time)."""
    rows = db.records("""
        SELECT pb.publication_id, p.pid, pu.handle,
               row_number() OVER (PARTITION BY pb.publisher_id ORDER BY pb.ts, pb.publication_id) AS k
        FROM publications pb JOIN publishers pu USING (publisher_id) JOIN processes p ON p.proc_id = pu.proc_id""")
    return {r["publication_id"]: truth.by_trace_key.get((r["pid"], r["handle"], r["k"])) for r in rows}


def has_option(name: str) -> bool:
    """Whether the roscope under test takes the data-flow option `name`: a field of
    `roscope.flow.FlowRequest`, or (before it) a parameter of `data_flows`."""
    import dataclasses
    import inspect

    from roscope import flow

    request = getattr(flow, "FlowRequest", None)
    if request is not None:
        return name in {f.name for f in dataclasses.fields(request)}
    return name in inspect.signature(flow.data_flows).parameters


def measure(db, truth: Truth, *, implicit: str | None = None, ctx=None, **kw) -> dict:
    """Flows of `roscope.flow.data_flows(db, truth.from_re, truth.to_re, implicit=...)`
    against the true pairs of `truth` (from `select`). `implicit=None` measures
    `data_flows`' default (reported as "default"); other keywords go to `data_flows`.

    Returns: flows (rows), pairs (distinct (input, output) pairs among them),
    true_pairs, found (true pairs found), precision (over distinct pairs),
    precision_flows (share of rows that are a true pair), recall,
    double_counted (pairs in more than one row), extra_flows (rows beyond the
    first of each pair), false_pairs (and examples, and their count per output
    topic), false_pairs_without_fallback (false pairs that a flow through no
    fallback edge gives), missed (true pairs not
    found) and missed_uncertain (those of them in `truth.uncertain`), unmatched (rows whose
    publications are not in the ground truth), latency_error_max_ns and
    latency_error_mean_ns (|latency_ns - true latency| over the rows of true pairs),
    paths."""
    from roscope import flow

    if implicit is not None:
        kw["implicit"] = implicit
    res = flow.data_flows(db, truth.from_re, truth.to_re, ctx=ctx, **kw)
    ids = publication_ids(db, truth)
    t = res.data_flows.select(["input_publication_id", "output_publication_id", "latency_ns",
                               "fallback_edges", "uncertain"]).to_pydict()
    count: collections.Counter = collections.Counter()
    without_fallback = set()  # pairs found by a flow through no fallback edge
    flagged = set()  # pairs found by a flow flagged uncertain (a race)
    errors = []
    unmatched = 0
    for i, o, lat, fb, unc in zip(t["input_publication_id"], t["output_publication_id"], t["latency_ns"],
                                  t["fallback_edges"], t["uncertain"]):
        pair = (ids.get(i), ids.get(o))
        if None in pair:
            unmatched += 1
            continue
        count[pair] += 1
        if not fb:
            without_fallback.add(pair)
        if unc:
            flagged.add(pair)
        true_latency = truth.pairs.get(pair)
        if true_latency is not None:
            errors.append(abs(lat - true_latency))
    got, true = set(count), set(truth.pairs)
    found = got & true
    certain = got - flagged
    rows = sum(count.values())
    return {
        "implicit": implicit or "default",
        "flows": rows + unmatched,
        "paths": res["paths"],
        "pairs": len(got),
        "true_pairs": len(true),
        "found": len(found),
        "precision": len(found) / len(got) if got else None,
        "precision_flows": sum(count[p] for p in found) / rows if rows else None,
        "recall": len(found) / len(true) if true else None,
        "double_counted": sum(1 for c in count.values() if c > 1),
        "extra_flows": rows - len(got),
        "false_pairs": len(got - true),
        "false_pair_examples": [[f"{a:#x}", f"{b:#x}"] for a, b in sorted(got - true)[:3]],
        "false_pairs_by_output_topic": dict(sorted(collections.Counter(
            truth.messages[o]["topic"] for _i, o in got - true).items())),
        "false_pairs_without_fallback": len(without_fallback - true),
        "missed": len(true - found),
        "missed_uncertain": len((true - found) & truth.uncertain),
        "uncertain_pairs": len(truth.uncertain),
        "flagged_pairs": len(flagged),
        "flagged": sorted(flagged),
        "precision_certain": len(certain & true) / len(certain) if certain else None,
        "racy_pairs": len(truth.racy),
        "missed_not_racy": len(true - found - truth.racy),
        "unmatched": unmatched,
        "latency_error_max_ns": max(errors) if errors else None,
        "latency_error_mean_ns": sum(errors) / len(errors) if errors else None,
    }


def without_annotations(db) -> None:
    """Removes the causal-link annotations from a writable database (what the trace
    would hold had the nodes not called the annotation functions)."""
    db.con.execute("DELETE FROM annotation_members")
    db.con.execute("DELETE FROM annotations")


def table(results: list[dict]) -> str:
    """The measured figures as a text table (one row per system and mode)."""
    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = (f"{'system':<34} {'implicit':<8} {'flows':>6} {'paths':>5} {'pairs':>6} {'true':>5} "
            f"{'prec':>6} {'prec/fl':>7} {'recall':>6} {'twice':>6} {'extra':>6} {'lat.err max/mean us':>20} "
            f"{'unc':>4} {'prec/cert':>9}")
    lines = [head, "-" * len(head)]
    for r in results:
        lat = f"{f(_us(r['latency_error_max_ns']), '.3f')}/{f(_us(r['latency_error_mean_ns']), '.3f')}"
        lines.append(f"{r['system']:<34} {r['implicit']:<8} {r['flows']:>6} {r['paths']:>5} {r['pairs']:>6} "
                     f"{r['true_pairs']:>5} {f(r['precision'], '.3f'):>6} {f(r['precision_flows'], '.3f'):>7} "
                     f"{f(r['recall'], '.3f'):>6} {r['double_counted']:>6} {r['extra_flows']:>6} {lat:>20} "
                     f"{r.get('flagged_pairs', 0):>4} {f(r.get('precision_certain'), '.3f'):>9}")
    return "\n".join(lines)


def _us(ns):
    return None if ns is None else ns / 1000


def compile_commands_from_make(directory: Path, out: Path) -> None:
    """compile_commands.json for a plain-Makefile build, as a user makes one
    (`make -nB` lists the compiler commands, like the compiledb tool)."""
    p = subprocess.run(["make", "-nB", "-C", str(directory)], capture_output=True, text=True, check=True)
    entries = []
    for line in p.stdout.splitlines():
        words = line.split()
        srcs = [w for w in words if w.endswith(".cpp")]
        if words and words[0] in ("g++", "c++", "clang++") and srcs:
            entries.append({"directory": str(directory), "command": line, "file": srcs[0]})
    if not entries:
        raise TruthError(f"make -nB -C {directory} lists no compiler command:\n{p.stdout}")
    (out / "compile_commands.json").write_text(json.dumps(entries))


def dependency_file(system: str, out: Path) -> Path:
    """`roscope deps` on the system's sources, driven by a compile_commands.json made
    from its Makefile, as a user runs it; returns the dependency file (out/deps.json)."""
    return dependency_run(system, out)["path"]


def dependency_run(system: str, out: Path, argv: list[str] | None = None) -> dict:
    """dependency_file's run: {"path": out/deps.json, "doc": its content, "stdout": what
    `roscope deps` printed, "seconds": how long it took}. `argv` runs the roscope CLI
    (default: this interpreter's `-m roscope`)."""
    example = REPO / SYSTEMS[system]["example"]
    out.mkdir(parents=True, exist_ok=True)
    compile_commands_from_make(example, out)
    deps = out / "deps.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    p = subprocess.run([*(argv or [sys.executable, "-m", "roscope"]), "deps", "-p", str(out), "-o", str(deps),
                        *sorted(str(x) for x in (example / "src").glob("*.cpp"))],
                       capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - t0
    if p.returncode:
        raise TruthError(f"roscope deps on {example} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return {"path": deps, "doc": json.loads(deps.read_text()), "stdout": p.stdout, "seconds": seconds}
