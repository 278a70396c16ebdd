"""roscope's CTF reader against an independent oracle: babeltrace2 (bt2).

For every real trace in the shared folder, the whole ROS 1 folder (kernel +
UST merged) and every live LTTng-UST fixture recording:
* ``roscope dump PATH`` must print exactly the events bt2 decodes (tests/support/oracle.py
  turns bt2's decoding into the dump format of docs/dump-format.md);
* ``roscope info --json PATH`` must report the event counts by name, the
  hostnames and the discarded events / lost packets bt2 counts.

The autoware trace (683,756 events) is compared in full: bt2 decodes it in
about 21 s here (~33k events/s), well within budget, so no sampling is needed.
"""
from __future__ import annotations

import collections
import json
import os

import pytest

from tests.support import oracle
from tests.support.dump_check import assert_clean_stderr, check_dump, oracle_tables
from tests.support.shared import TRACES as SHARED_TRACES

BIG = "ros2/autoware-carla-galactic"
FIXTURES = ("uid", "pid", "discard", "multi")


def _real_cases():
    base = SHARED_TRACES
    if not os.path.isdir(base):
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no shared traces at {base}"))]
    cases = [os.path.relpath(d, base) for d in oracle.find_traces(base)]
    # whole folders holding several traces (ROS 1: kernel/ + ust/ merged)
    for d in sorted(os.listdir(os.path.join(base, "ros1"))) if os.path.isdir(os.path.join(base, "ros1")) else []:
        full = os.path.join(base, "ros1", d)
        if len(oracle.find_traces(full)) > 1:
            cases.append(os.path.relpath(full, base))
    out = []
    for c in cases:
        marks = [pytest.mark.slow, pytest.mark.timeout(900)] if c.startswith(BIG) else []
        out.append(pytest.param(c, id=c, marks=marks))
    return out


REAL_CASES = _real_cases()


# --------------------------------------------------------------------------
# dump
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", REAL_CASES)
def test_dump_real_trace_matches_babeltrace2(case, shared_traces, roscope_cmd):
    n = check_dump(roscope_cmd, os.path.join(shared_traces, case))
    assert n > 0


@pytest.mark.lttng
@pytest.mark.parametrize("name", FIXTURES)
def test_dump_fixture_matches_babeltrace2(name, ust_traces, roscope_cmd):
    check_dump(roscope_cmd, ust_traces[name])


# --------------------------------------------------------------------------
# info
# --------------------------------------------------------------------------

def info_summary(js: dict) -> dict[str, dict]:
    """{trace rel path: {"counts", "hostname", "discarded", "packets_lost"}}
    from ``roscope info --json``: traces[] with rel, counts, hostname (or
    env.hostname), events_discarded and packets_lost (or a streams[] list
    holding them per stream, with the trace's index)."""
    try:
        traces = js["traces"]
        out = {}
        for t in traces:
            host = t["hostname"] if "hostname" in t else t.get("env", {}).get("hostname")
            out[t["rel"]] = {"counts": dict(t["counts"]), "hostname": host,
                             "discarded": t.get("events_discarded"), "packets_lost": t.get("packets_lost")}
        if isinstance(js.get("streams"), list):
            rels = [t["rel"] for t in traces]
            for rel in rels:
                out[rel]["discarded"] = out[rel]["packets_lost"] = 0
            for s in js["streams"]:
                rel = rels[s["trace"]] if isinstance(s["trace"], int) else s["trace"]
                out[rel]["discarded"] += int(s.get("events_discarded") or 0)
                out[rel]["packets_lost"] += int(s.get("packets_lost") or 0)
        return out
    except (KeyError, TypeError, IndexError) as exc:
        raise AssertionError(f"roscope info --json: unexpected structure ({exc!r}); "
                             f"top-level keys {sorted(js) if isinstance(js, dict) else type(js)}") from None


def check_info(run_roscope, path: str) -> dict:
    p = run_roscope("info", "--json", path)
    assert_clean_stderr(p.stderr, "roscope info")
    assert p.returncode == 0, f"roscope info --json {path} exited {p.returncode}:\n{p.stderr[-3000:]}"
    try:
        js = json.loads(p.stdout)
    except ValueError as exc:
        pytest.fail(f"roscope info --json output is not JSON ({exc}): {p.stdout[:500]!r}")
    got = info_summary(js)
    ref = oracle_tables(path)
    exp_traces = sorted(ref.trace_counts)
    assert sorted(got) == exp_traces, "traces found differ from babeltrace2's"
    for rel in exp_traces:
        assert got[rel]["counts"] == dict(ref.trace_counts[rel]), f"event counts by name differ in {rel}"
        assert got[rel]["hostname"] == ref.hostnames.get(rel), f"hostname of {rel}"
        exp_disc = sum(v for (t, _f), v in ref.discarded_events.items() if t == rel)
        exp_lost = sum(v for (t, _f), v in ref.discarded_packets.items() if t == rel)
        assert got[rel]["discarded"] == exp_disc, f"discarded events in {rel}"
        # babeltrace2 counts gaps in packet_seq_num between kept packets; the
        # packets an overwrite-mode channel dropped before the first kept one
        # may be counted too (from LTTng's index: that packet's seq num).
        lead = oracle.leading_lost_packets(os.path.join(path, rel))
        ok = {exp_lost} | ({exp_lost + lead} if lead else set())
        assert got[rel]["packets_lost"] in ok, \
            f"lost (discarded) packets in {rel}: {got[rel]['packets_lost']}, expected one of {sorted(ok)}"
    if "events" in js:
        assert js["events"] == ref.n_events
    return got


@pytest.mark.parametrize("case", REAL_CASES)
def test_info_real_trace_matches_babeltrace2(case, shared_traces, run_roscope):
    check_info(run_roscope, os.path.join(shared_traces, case))


@pytest.mark.lttng
@pytest.mark.parametrize("name", FIXTURES)
def test_info_fixture_matches_babeltrace2(name, ust_traces, run_roscope):
    got = check_info(run_roscope, ust_traces[name])
    if name == "discard":
        assert sum(t["discarded"] for t in got.values()) > 0
    if name == "multi":
        assert len({t["hostname"] for t in got.values()}) >= (2 if any(
            "other-host" in k for k in got) else 1)


# --------------------------------------------------------------------------
# the fixtures themselves (bt2 only): they really contain what they claim
# --------------------------------------------------------------------------

@pytest.mark.lttng
def test_fixture_recordings_cover_what_they_claim(ust_traces):
    # uid: every event type, 40 classes, two CPUs, multi-packet split files, 150 ms gaps
    r = oracle.Reading(ust_traces["uid"])
    evs = list(r.events())
    names = collections.Counter(e["name"] for e in evs)
    for n in ("ints", "enums", "floats", "strings", "arrays", "seqs", "tick", "empty"):
        assert names[f"roscope_fx:{n}"] > 0, n
    assert sum(1 for n in names if n.startswith("roscope_many:")) == 40
    cpus = {e["stream"].get("cpu_id") for e in evs if e["name"] == "roscope_fx:tick"}
    assert len(cpus) >= min(2, os.cpu_count() or 1), cpus
    gaps = sorted(e["ts"] for e in evs if e["name"] == "roscope_fx:tick"
                  and e["payload"]["phase"] == 2 and "vpid" in e["context"])  # chan_types only
    assert len(gaps) >= 4 and all(b - a > 2**27 for a, b in zip(gaps, gaps[1:])), "no 150 ms gaps"
    trace_dir = os.path.join(ust_traces["uid"], oracle.find_traces(ust_traces["uid"])[0])
    files = os.listdir(trace_dir)
    assert sum(1 for f in files if f.startswith("chan_small_0_")) > 1, "trace-file splitting not used"
    idx = oracle.read_lttng_index(os.path.join(trace_dir, "index", "chan_small_0_0.idx"))
    assert len(idx) > 1, "chan_small should hold several packets per file"
    enum_vals = [e["payload"] for e in evs if e["name"] == "roscope_fx:enums"]
    assert any(isinstance(p["u8_e"], int) for p in enum_vals), "an enum value with no mapping"
    assert any(p["ov_e"] == "LOW" and p["seq"] == 1 for p in enum_vals), "overlapping ranges: first declared"
    floats = [e["payload"] for e in evs if e["name"] == "roscope_fx:floats"]
    assert {"nan", "inf", "-inf"} <= {p["f64"] for p in floats if isinstance(p["f64"], str)}
    assert any(isinstance(p["f32"], oracle.F32) for p in floats)
    strings = [e["payload"]["a"] for e in evs if e["name"] == "roscope_fx:strings"]
    assert "" in strings and max(map(len, strings)) >= 4999 and any(ord(c) > 127 for s in strings for c in s)
    arr = [e["payload"]["txt1"] for e in evs if e["name"] == "roscope_fx:arrays"]
    assert "\ufffd" in arr, "an invalid UTF-8 byte in a text array"

    # pid: two processes, two traces
    assert len(oracle.find_traces(ust_traces["pid"])) == 2

    # discard: events really lost, and packets lost in overwrite mode
    d = oracle.Reading(ust_traces["discard"]).run()
    assert d.total_discarded_events() > 0
    assert sum(d.discarded_packets.values()) > 0

    # multi: several traces side by side
    assert len(oracle.find_traces(ust_traces["multi"])) >= 2
