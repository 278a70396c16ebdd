"""The flight recorder (`roscope record --flight-recorder`, issue 32) on the real ROS 1 example.

The example runs 30 s under `roscope record --flight-recorder --keep 10`; its filter callback is
slowed by 300 ms once, at a random time 13-19 s after the node started
(ROS1_PIPELINE_SLOW_FILTER, logged by the node). Right after the slow run, the test sends
SIGUSR1 to the recorder. The snapshot must hold the slow run and the 10 s before it, its
longest run must be the slow one (`roscope why` names its callback), and what it holds must equal
the nodes' logs over the window it covers. Expected values come from the nodes' logs and
babeltrace2 (the snapshot's window)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import attach as A

pytest.importorskip("roscope._core", reason="the roscope core is not built")
pytest.importorskip("bt2", reason="babeltrace2 Python bindings (python3-bt2) are needed")

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

REPO = Path(__file__).resolve().parents[1]
ROS1 = REPO / "examples" / "ros1_pipeline"
SLOW_MS = 300
S = 1_000_000_000


@pytest.fixture(scope="module")
def flight(tmp_path_factory):
    for d in (REPO / "instrument" / "ros1", ROS1):
        assert subprocess.run(["make", "-s", "-C", str(d)], capture_output=True).returncode == 0
    out = tmp_path_factory.mktemp("flight")
    at = random.uniform(13, 19)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), ROS1_PIPELINE_SLOW_FILTER=f"{SLOW_MS}@{at:.1f}")
    env.pop("ROSCOPE_RECORD_ID", None)
    # --rate: about the example's rate (~2000 events/s), so that the rings wrap in 30 s.
    rec = subprocess.Popen([sys.executable, "-m", "roscope", "record", "--flight-recorder", "--keep", "10", "--rate", "2500",
                            "-o", str(out / "trace"), "--", str(ROS1 / "system.sh"), "-d", "30", "-g", str(out / "gt")],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    slow = None
    try:
        deadline = time.monotonic() + 60
        while slow is None and time.monotonic() < deadline and rec.poll() is None:
            time.sleep(0.1)
            log = out / "gt" / "perception.jsonl"
            if log.exists():
                slow = next((json.loads(x) for x in log.read_text().splitlines() if '"ev":"slow"' in x), None)
        assert slow is not None, "the filter was not slowed"
        time.sleep(SLOW_MS / 1000 + 0.2)  # right after the slow run
        rec.send_signal(signal.SIGUSR1)
        # Once the snapshot is in place, the rest of the run is not needed: Ctrl-C ends it.
        deadline = time.monotonic() + 60
        while not list((out / "trace" / "snapshots").glob("*/roscope-snapshot.json")) and rec.poll() is None:
            assert time.monotonic() < deadline, "no snapshot within 60 s of SIGUSR1"
            time.sleep(0.1)
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=90)
    finally:
        if rec.poll() is None:
            rec.send_signal(signal.SIGINT)
            rec.communicate(timeout=60)
    assert rec.returncode == 130, err
    snaps = sorted((out / "trace" / "snapshots").iterdir())
    assert len(snaps) == 1, err
    gt = []
    for f in sorted((out / "gt").glob("*.jsonl")):
        rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        pid = next(r["pid"] for r in rows if r["ev"] == "start")
        for r in rows:
            r["pid"], r["sys"] = pid, "ros1"
        gt += rows
    import roscope

    db = roscope.open(str(snaps[0]), read_only=False)
    return {"dir": snaps[0], "slow": slow, "gt": gt, "db": db, "err": err,
            "manifest": json.loads((snaps[0] / "roscope-snapshot.json").read_text()),
            "pids": {r["pid"] for r in gt if r["ev"] == "start"}}


def test_the_snapshot_holds_the_slow_run_and_the_ten_seconds_before(flight):
    m = flight["manifest"]
    assert m["trigger"] == "SIGUSR1" and m["format"] == "roscope-snapshot"
    t = flight["slow"]["mono_ns"]
    assert m["complete_from_ns"] <= t - 10 * S, (t - m["complete_from_ns"]) / S
    assert m["complete_until_ns"] >= t + SLOW_MS * 1_000_000
    assert m["trigger_to_disk_s"] < 5
    print(f"\nwindow {m['window_s']} s, trigger to disk {m['trigger_to_disk_s']} s")


def test_the_slow_callback_is_the_snapshots_longest_run(flight):
    t = flight["slow"]["mono_ns"]
    top = flight["db"].records("""SELECT c.symbol, r.start_ts, r.end_ts, r.duration_ns FROM callback_runs r
                                  JOIN callbacks c USING (callback_id) ORDER BY r.duration_ns DESC NULLS LAST LIMIT 1""")[0]
    assert top["symbol"].startswith("Filter::onLidar"), top
    assert top["start_ts"] <= t <= top["end_ts"] and top["duration_ns"] >= SLOW_MS * 1_000_000
    # `roscope why` on the snapshot names it first (without kernel data: its longest runs).
    p = subprocess.run([sys.executable, "-m", "roscope", "why", str(flight["dir"]), "--top", "1"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "python")), timeout=120)
    assert p.returncode == 0, p.stderr
    first = next(x for x in p.stdout.splitlines() if x.strip().startswith("1."))
    assert "/perception/filter" in first and "Filter::onLidar" in first, p.stdout


def test_the_snapshot_equals_the_logs_over_its_window(flight):
    m = flight["manifest"]
    rec = {**flight, "window": (m["complete_from_ns"] + A.EDGE, m["complete_until_ns"] - A.EDGE)}
    ids = A._match_publications(rec)
    assert len(ids) > 300
    A.check_runs_in_window(rec)
    A.check_links_in_window(rec)
