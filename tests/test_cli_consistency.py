"""CLI consistency (issue 30, items 7 and 10): a selection that matches nothing is exit 1
with the names that exist, in every verb with a selection; a directory holding several
separate recordings is refused, naming them, unless --merge, while the hosts of one
recording (ros2sim's two-host output) still load as one.

Oracles: babeltrace2 (the nodes, topics, hostnames and sessions in the traces' own
events and environment), ros2sim's manifest (its hosts).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.support.cli import roscope
from tests.support.shared import TRACES

TL = os.path.join(TRACES, "ros2", "caret-talker-listener-galactic")
E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
pytestmark = pytest.mark.skipif(not (os.path.isdir(TL) and os.path.isdir(E2E)), reason="no shared traces")
bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings are the oracle")


def bt2_names(path: str) -> dict:
    """Node and publisher topic names, and each trace's (hostname, session) from its environment."""
    out = {"nodes": set(), "topics": set(), "sessions": set()}
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is bt2._StreamBeginningMessageConst:
            env = m.stream.trace.environment
            out["sessions"].add((str(env["hostname"]), str(env["trace_name"])))
        elif type(m) is bt2._EventMessageConst:
            if m.event.name == "ros2:rcl_node_init":
                ns, n = str(m.event.payload_field["namespace"]), str(m.event.payload_field["node_name"])
                out["nodes"].add(("" if ns == "/" else ns.rstrip("/")) + "/" + n)
            elif m.event.name == "ros2:rcl_publisher_init":
                out["topics"].add(str(m.event.payload_field["topic_name"]))
    return out


@pytest.fixture(scope="module")
def two_recordings(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("two")
    shutil.copytree(TL, d / "talker")
    shutil.copytree(E2E, d / "e2e")
    return str(d)


def test_a_folder_of_two_recordings_is_refused_unless_merge(two_recordings):
    sessions = bt2_names(TL)["sessions"] | bt2_names(E2E)["sessions"]
    assert len(sessions) == 2
    p = roscope("stats", two_recordings)
    assert p.returncode == 1 and p.stdout == ""
    err = p.stderr.strip()
    assert err.startswith(f"roscope: error: {two_recordings} holds 2 separate recordings") and "--merge" in err, err
    for host, session in sessions:
        assert f"host {host}, session {session}," in err
    for name in ("talker", "e2e"):
        assert os.path.join(two_recordings, name) + " (host" in err
    assert err.count("\n") == 0
    # load refuses too; --merge analyses both as one: every node of both traces
    assert roscope("load", two_recordings, "-o", os.path.join(two_recordings, "x.duckdb")).returncode == 1
    p = roscope("stats", two_recordings, "--merge", "--json")
    assert p.returncode == 0, p.stderr
    nodes = {n["node"] for n in json.loads(p.stdout)["nodes"]}
    assert nodes == bt2_names(TL)["nodes"] | bt2_names(E2E)["nodes"]
    # one recording given by its own directory: no question asked
    assert roscope("stats", os.path.join(two_recordings, "talker"), "--json").returncode == 0


@pytest.mark.lttng
@pytest.mark.skipif(os.geteuid() != 0, reason="ros2sim hosts need unshare (root)")
def test_the_hosts_of_one_recording_load_as_one(ros2sim_run, tmp_path):
    run = ros2sim_run("mfa_fig4_transport", "rolling", 1)
    hosts = {h["hostname"] for h in json.load(open(run / "manifest.json"))["hosts"]}
    assert len(hosts) == 2 and {h for h, _s in bt2_names(str(run / "traces"))["sessions"]} == hosts
    # with ros2sim's manifest above, and without it (other hosts, sessions created together)
    bare = tmp_path / "bare"
    shutil.copytree(run / "traces", bare)
    for d in (run, bare):
        p = roscope("stats", d, "--json")
        assert p.returncode == 0, p.stderr
        assert {n["hostname"] for n in json.loads(p.stdout)["nodes"]} == hosts


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("ds") / "runs")
    p = roscope("load", TL, "--dataset", d, "--run-id", "tl")
    assert p.returncode == 0, p.stderr
    return d


def test_every_selection_that_matches_nothing_is_exit_1_with_the_names(small_dataset):
    names = bt2_names(TL)
    for metric, listed in (("callback:nomatch", names["nodes"]), ("topic:nomatch", names["topics"])):
        p = roscope("trend", small_dataset, "--metric", metric)
        assert p.returncode == 1 and p.stdout == "", p.stderr
        assert f"metric '{metric}': no" in p.stderr and all(n in p.stderr for n in listed), p.stderr
    p = roscope("trend", small_dataset, "--metric", "path:nomatch->/chatter")
    assert p.returncode == 1 and "no topic matches --from 'nomatch'" in p.stderr, p.stderr
    assert all(t in p.stderr for t in names["topics"] if t.startswith("/chatter"))
    # one that matches still works
    assert roscope("trend", small_dataset, "--metric", "callback:listener").returncode == 0
    for args in (("why", TL, "--callback", "nomatch"), ("flow", TL, "--from", "nomatch", "--to", "."),
                 ("why", TL, "--from", "nomatch", "--to", "."), ("report", TL, "--from", "nomatch", "--to", ".")):
        p = roscope(*args)
        assert p.returncode == 1, (args, p.stderr)
        want = names["nodes"] if "--callback" in args else {"/chatter"}
        assert all(n in p.stderr for n in want), (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_export_o_takes_the_format_from_the_extension_or_format(tmp_path):
    """`-o FILE.pftrace` and `-o FILE --format perfetto` write what `--perfetto FILE` writes
    (tests/test_perfetto.py checks that against babeltrace2); an unknown extension is exit 1."""
    ref, by_ext, by_fmt, bad = (tmp_path / n for n in ("ref.pftrace", "x.pftrace", "x.bin", "y.bin"))
    assert roscope("export", E2E, "--perfetto", ref).returncode == 0
    assert roscope("export", E2E, "-o", by_ext).returncode == 0
    assert roscope("export", E2E, "-o", by_fmt, "--format", "perfetto").returncode == 0
    assert ref.read_bytes() == by_ext.read_bytes() == by_fmt.read_bytes() and ref.stat().st_size > 10_000
    p = roscope("export", E2E, "-o", bad)
    assert p.returncode == 1 and f"{bad}: no format known for .bin" in p.stderr and "--format" in p.stderr
    assert not bad.exists()
    p = roscope("export", E2E, "-o", by_ext)
    assert p.returncode == 1 and "already exists" in p.stderr


def bt2_callbacks(path: str) -> tuple[dict[str, set], set[str]]:
    """({symbol: topics of the subscriptions it serves}, for every symbol, from the trace's
    registration events (rcl_subscription_init, rclcpp_subscription_init,
    rclcpp_subscription_callback_added, rclcpp_callback_register); the symbols that ran
    (callback_start))."""
    topic_of, sub_handle, cb_sub, symbol, ran = {}, {}, {}, {}, set()
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is not bt2._EventMessageConst:
            continue
        n, p = m.event.name, m.event.payload_field
        pid = int(m.event.common_context_field["vpid"])
        if n == "ros2:rcl_subscription_init":
            topic_of[(pid, int(p["subscription_handle"]))] = str(p["topic_name"])
        elif n == "ros2:rclcpp_subscription_init":
            sub_handle[(pid, int(p["subscription"]))] = int(p["subscription_handle"])
        elif n == "ros2:rclcpp_subscription_callback_added":
            cb_sub[(pid, int(p["callback"]))] = int(p["subscription"])
        elif n == "ros2:rclcpp_callback_register":
            symbol[(pid, int(p["callback"]))] = str(p["symbol"])
        elif n == "ros2:callback_start":
            ran.add((pid, int(p["callback"])))
    out: dict[str, set] = {s: set() for s in symbol.values()}
    for (pid, cb), sub in cb_sub.items():
        out[symbol[(pid, cb)]].add(topic_of[(pid, sub_handle[(pid, sub)])])
    return out, {symbol[k] for k in ran if k in symbol}


def test_dataset_stats_shows_topics_and_wide_shows_whole_names(small_dataset):
    want, _ran = bt2_callbacks(TL)
    p = roscope("dataset", "stats", small_dataset, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["callbacks"]
    assert rows and all(r["topic"] in want[r["symbol"]] for r in rows if r["kind"] == "subscription")
    assert any(r["topic"] == "/chatter" for r in rows)
    assert all(r["topic"] is None for r in rows if r["kind"] != "subscription")
    text = roscope("dataset", "stats", small_dataset, "--wide").stdout
    assert "…" not in text and "  topic  " in text.splitlines()[1].replace("topic ", "topic  ")
    for r in rows:
        assert r["symbol"] in text
    # stats and why: names cut by default where they are long, whole with --wide
    symbols = bt2_callbacks(E2E)[1]
    assert max(map(len, symbols)) > 60
    for verb in (("stats",), ("why", "--top", "50")):
        cut, wide = roscope(*verb, E2E).stdout, roscope(*verb, E2E, "--wide").stdout
        assert "…" in cut and "…" not in wide, verb
        assert all(s in wide for s in symbols if verb[0] == "stats"), verb
    # every other verb with text tables takes --wide
    for args in (("flow", E2E, "--from", ".", "--to", ".", "--wide"), ("executor", E2E, "--wide"),
                 ("trend", small_dataset, "--metric", "callback:.", "--wide")):
        p = roscope(*args)
        assert p.returncode == 0 and "…" not in p.stdout, (args, p.stderr)
