"""`roscope flow` against a plain-Python Algorithm 1 (tests/support/flow_reference.py), on
small ros2sim systems recorded through real LTTng: the same data flows (output,
input, first run, steps), grouped into the same paths, with the same latencies and
the same split into communication, idle and computation.

The reference is written separately from crates/flow: its own SQL reads of the
database, its own implicit-dependency rules and breakdown, recursion with a visited
set and no caching. roscope runs as a user runs it: `roscope flow DB --store --json`
on a database written by `roscope load`, with `--all-paths` (the paper keeps one
flow per path) and `--fallback pairs` (the paper's fallback: every callback pair); and by default (one flow per input/output message pair), which must
keep exactly the reference's pairs, each once, with the reference's latency.
"""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict

import pytest

from tests.support import flow_reference
from tests.support.cli import roscope as run_roscope

pytestmark = pytest.mark.lttng

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

AUTOWARE_FROM = "^/(FrontLidarDriver|RearLidarDriver|PointCloudMap|Lanelet2Map)$"
AUTOWARE_TO = "^/(VehicleInterface|VehicleDBWSystem)$"
#: (preset, distro, seconds, from, to, implicit modes)
CASES = [
    ("mfa_fig6b_partial_sync", "rolling", 1.5, "^/topic_(a|b)$", "^/topic_c$", ("auto", "annotations", "none")),
    ("mfa_fig6a_periodic_async", "jazzy", 1.5, "^/topic_(a|b)$", "^/topic_c$", ("auto", "all")),
    ("autoware_reference_system", "rolling", 2.0, AUTOWARE_FROM, AUTOWARE_TO, ("annotations", "auto")),
]


@pytest.fixture(scope="module")
def databases(tmp_path_factory, ros2sim_run) -> dict:
    """Each case's simulation (tests/conftest.py's ros2sim_run: test_flow.py simulates the
    same ones) loaded into a database of this module's."""
    base = tmp_path_factory.mktemp("flowref")
    out = {}
    for preset, distro, secs, *_ in CASES:
        run = ros2sim_run(preset, distro, secs)
        db = str(base / f"{preset}-{distro}.duckdb")
        run_roscope("load", str(run / "traces"), "-o", db, check=True, timeout=300)
        out[preset] = db
    return out


def roscope_flow(db: str, from_re: str, to_re: str, implicit: str, all_paths: bool = True,
                 extra: tuple = ()) -> tuple[dict, list[dict], dict]:
    """`roscope flow --store --json`: its JSON, and the flows and first steps it stored."""
    import roscope

    r = run_roscope("flow", db, "--from", from_re, "--to", to_re,
                        "--implicit", implicit, "--fallback", "pairs", "--store", "--json",
                        *(["--all-paths"] if all_paths else []), *extra, timeout=300)
    assert r.returncode == 0, r.stderr
    with roscope.open(db) as d:
        flows = d.records("SELECT * FROM data_flows")
        steps = defaultdict(list)
        for s in d.records("SELECT flow_id, is_run, id FROM data_flow_steps ORDER BY flow_id, step"):
            steps[s["flow_id"]].append(("r" if s["is_run"] else "p", s["id"]))
    return json.loads(r.stdout), flows, dict(steps)


def reference(db: str, from_re: str, to_re: str, implicit: str) -> list[tuple[list, tuple, tuple]]:
    """(steps, path, (latency, communication, idle, computation)) of every flow."""
    import roscope

    with roscope.open(db) as d:
        model = flow_reference.load(d)
        _outs, flows = flow_reference.run(d, from_re, to_re, flow_reference.implicit_pairs(d, implicit), model=model)
    return [(steps, flow_reference.path_of(model, steps), flow_reference.breakdown(model, steps)) for steps in flows]


def key(output, input_pub, first_run, parts) -> tuple:
    return (output, input_pub, first_run, *parts)


@pytest.mark.parametrize("case", [(c[0], m) for c in CASES for m in c[5]], ids=lambda c: f"{c[0]}-{c[1]}")
def test_flow_equals_reference(databases, case, capsys):
    preset, implicit = case
    _p, _d, _s, from_re, to_re, _m = next(c for c in CASES if c[0] == preset)
    db = databases[preset]
    js, flows, first_steps = roscope_flow(db, from_re, to_re, implicit)
    ref = reference(db, from_re, to_re, implicit)
    if implicit != "none":
        assert len(ref) > 50, len(ref)

    # The same flows: output, input, first run and the latency split, as multisets.
    ours = Counter(key(f["output_publication_id"], f["input_publication_id"], f["first_run_id"],
                       (f["latency_ns"], f["communication_ns"], f["idle_ns"], f["computation_ns"])) for f in flows)
    theirs = Counter(key(s[-1][1], s[1][1], s[0][1], parts) for s, _path, parts in ref)
    assert ours == theirs, f"missing {list((theirs - ours).items())[:3]}, extra {list((ours - theirs).items())[:3]}"
    assert js["summary"]["flows"] == len(ref)
    with capsys.disabled():
        print(f"\n{preset} --implicit {implicit}: {len(ref)} flows on {js['summary']['paths']} paths, same as the reference")

    # The same paths: flows grouped alike, and each path's first flow has the reference's steps.
    by_path = defaultdict(list)
    for f in flows:
        by_path[f["path_id"]].append(f)
    ref_groups = defaultdict(Counter)
    ref_steps = defaultdict(list)
    for steps, path, parts in ref:
        k = key(steps[-1][1], steps[1][1], steps[0][1], parts)
        ref_groups[path][k] += 1
        ref_steps[k].append(steps)
    our_groups = {pid: Counter(key(f["output_publication_id"], f["input_publication_id"], f["first_run_id"],
                                   (f["latency_ns"], f["communication_ns"], f["idle_ns"], f["computation_ns"])) for f in fs)
                  for pid, fs in by_path.items()}
    assert sorted(map(sorted, (g.items() for g in our_groups.values()))) == \
        sorted(map(sorted, (g.items() for g in ref_groups.values())))
    assert js["summary"]["paths"] == len(ref_groups) == len(js["paths"])
    for fs in by_path.values():
        first = min(fs, key=lambda f: f["flow_id"])
        k = key(first["output_publication_id"], first["input_publication_id"], first["first_run_id"],
                (first["latency_ns"], first["communication_ns"], first["idle_ns"], first["computation_ns"]))
        assert first_steps[first["flow_id"]] in ref_steps[k]

    # The per-path latency statistics of the JSON, from the reference's flows.
    for p in js["paths"]:
        lat = sorted(f["latency_ns"] for f in by_path[p["path_id"]])
        assert p["flows"] == len(lat) == p["latency"]["count"]
        assert (p["latency"]["min_ns"], p["latency"]["max_ns"]) == (lat[0], lat[-1])
        assert p["latency"]["mean_ns"] == pytest.approx(sum(lat) / len(lat), rel=1e-12)


@pytest.mark.parametrize("case", [(c[0], m) for c in CASES for m in c[5]], ids=lambda c: f"{c[0]}-{c[1]}")
def test_one_flow_per_message_pair(databases, case):
    """The default: the reference's (input, output) message pairs, each once, with the
    reference's latency; of the candidates, one with the fewest fallback edges."""
    preset, implicit = case
    _p, _d, _s, from_re, to_re, _m = next(c for c in CASES if c[0] == preset)
    db = databases[preset]
    js, flows, _steps = roscope_flow(db, from_re, to_re, implicit, all_paths=False)
    ref = reference(db, from_re, to_re, implicit)
    ref_pairs = defaultdict(list)
    for steps, _path, parts in ref:
        ref_pairs[(steps[1][1], steps[-1][1])].append(parts)
    ours = Counter((f["input_publication_id"], f["output_publication_id"]) for f in flows)
    assert set(ours) == set(ref_pairs)
    assert max(ours.values(), default=1) == 1, "a pair counted twice"
    for f in flows:
        cands = ref_pairs[(f["input_publication_id"], f["output_publication_id"])]
        parts = (f["latency_ns"], f["communication_ns"], f["idle_ns"], f["computation_ns"])
        assert parts in cands, (parts, cands)
        assert {c[0] for c in cands} == {f["latency_ns"]}
    assert js["summary"]["flows"] + js["summary"]["duplicates_dropped"] == len(ref)


def test_caps_are_counted_and_say_where_they_cut(databases):
    """Caps against the reference's flows per output message (outputs in time order):
    --max-flows-per-output 1 keeps one flow of each output and counts as capped
    exactly the outputs with more; --max-flows K stops at the first output reached
    with K flows already found, names it, and keeps every flow before it. A small
    --memory budget (DuckDB spills) changes nothing."""
    from_re, to_re = AUTOWARE_FROM, AUTOWARE_TO
    db = databases["autoware_reference_system"]
    import roscope

    with roscope.open(db) as d:
        outs, ref = flow_reference.run(d, from_re, to_re, flow_reference.implicit_pairs(d, "auto"))
    per_out = Counter(steps[-1][1] for steps in ref)
    more = {p for p in outs if per_out[p] > 1}
    assert more and len(ref) > 100

    js, flows, _ = roscope_flow(db, from_re, to_re, "auto", extra=("--max-flows-per-output", "1"))
    caps = js["summary"]["caps"]
    assert caps["outputs_capped"] == len(more)
    assert set(caps["capped_examples"]) <= more and caps["capped_examples"]
    assert Counter(f["output_publication_id"] for f in flows) == {p: 1 for p in outs if per_out[p]}
    assert any("reached the cap of 1 candidate flows" in w for w in js["warnings"])

    k = len(ref) // 2
    found, stop, searched = 0, None, len(outs)
    for i, p in enumerate(outs):
        if found >= k:
            stop, searched = p, i
            break
        found += per_out[p]
    js, flows, _ = roscope_flow(db, from_re, to_re, "auto", extra=("--max-flows", str(k)))
    s = js["summary"]
    assert (s["caps"]["stopped_at_publication_id"], s["flows"], s["outputs"], s["outputs_total"]) == \
        (stop, found, searched, len(outs))
    assert Counter(f["output_publication_id"] for f in flows) == {p: per_out[p] for p in outs[:searched] if per_out[p]}
    assert any(f"stopped at the cap of {k:,} candidate flows, at publication {stop} " in w and
               f"{len(outs) - searched:,} of {len(outs):,} output messages were not searched" in w for w in js["warnings"])

    _, small, _ = roscope_flow(db, from_re, to_re, "auto", extra=("--memory", "64M"))
    _, big, _ = roscope_flow(db, from_re, to_re, "auto", extra=("--memory", "0"))
    assert sorted(map(sorted, (f.items() for f in small))) == sorted(map(sorted, (f.items() for f in big)))
    assert len(small) == len(ref)
