"""`roscope watch --source live` (docs/watch.md, "Live source"): roscope's own client of
LTTng's live viewer protocol (`_core.LiveClient`) against a real lttng-relayd started by
`roscope.record.relay`, on real live sessions.

- every event the client handed over (its mini chunks, read by babeltrace2) is an event of
  the relay's own output trace (read by babeltrace2), each once, none missing; the emitter's
  own count says none was lost on the way; each mini chunk follows the one before in time;
- a watch of examples/ros1_pipeline with its filter slowed (as tests/test_watch.py) alerts
  for exactly the slowed flows (the example's own log as oracle), and its manifest counts
  the events babeltrace2 reads from the relay's output, none lost.

Cost on 2 idle cores: ~6 s and ~14 s (the example runs 6 s)."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from oracle import find_traces
from roscope import _core
from roscope.record import lttng
from roscope.record.relay import Relay

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")


def _bt_lines(path) -> list[str]:
    """babeltrace2's text of every event under `path` (times in clock cycles, no deltas)."""
    p = subprocess.run(["babeltrace2", "--no-delta", "--clock-cycles", *find_traces(str(path))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.lttng
def test_live_client_hands_over_every_event_of_the_relays_trace(fx_emit, tmp_path):
    out, mini = tmp_path / "trace", tmp_path / "mini"
    out.mkdir()
    mini.mkdir()
    relay = Relay(out)
    relay.start()
    name = f"roscope-test-live-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    rate, secs = 4000, 2
    try:
        lttng.create_session(name, out, (50_000, relay.url))
        try:
            lttng.lttng("enable-channel", "--userspace", "ch", "--subbuf-size=64k", "--num-subbuf=8", f"--session={name}")
            lttng.lttng("enable-event", "--userspace", "roscope_fx:*", "--channel=ch", f"--session={name}")
            lttng.lttng("start", name)
            client = _core.LiveClient(relay.viewer_addr)
            assert client.attach(name, 20.0) == 50_000   # the session's live timer, us
            chunks = []

            def poll() -> bool:
                d = mini / str(len(chunks))
                packets, _bytes, ended = client.poll(str(d))
                if packets:
                    chunks.append(d)
                return ended
            emitter = subprocess.Popen([fx_emit, "rate", str(rate), str(secs)])
            while emitter.poll() is None:
                poll()
                time.sleep(0.02)
            assert emitter.returncode == 0
            during = len(chunks)
        finally:
            assert lttng.destroy_session(name) == []
        deadline = time.monotonic() + 30
        while not poll():
            assert time.monotonic() < deadline, "the relay did not end the session's streams"
            time.sleep(0.02)
    finally:
        relay.stop()
    assert during >= 10   # handed over as the emitter ran, not only at the end
    theirs = _bt_lines(out)
    ours = [line for d in chunks for line in _bt_lines(d)]
    assert len([x for x in theirs if "roscope_fx:tick" in x]) == rate * secs   # the emitter's own count
    assert sorted(ours) == sorted(theirs)
    # each chunk's events come after the previous chunk's (as rotation's chunks do)
    stamps = [[int(x[1:x.index("]")]) for x in _bt_lines(d)] for d in chunks]
    for a, b in zip(stamps, stamps[1:]):
        assert min(b) >= max(a)


@pytest.mark.lttng
@pytest.mark.ros1
def test_live_source_alerts_for_exactly_the_slowed_flows(lttng_ready, roscope_cmd, tmp_path):
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    (tmp_path / "misses").mkdir()
    p = subprocess.run([*roscope_cmd, "watch", "--source", "live", "--json", "--window", "2", "-o", str(tmp_path / "trace"),
                        "--deadline", "^/lidar$->^/lidar_filtered$=25", "--", SYSTEM, "-d", "6", "-g", str(tmp_path / "gt")],
                       capture_output=True, text=True, timeout=180, env={**os.environ, "ROS1_PIPELINE_SLOW": "30@3-4"})
    assert p.returncode == 3, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    alerts = [x for x in lines if x.get("alert")]
    slow = [json.loads(x) for x in (tmp_path / "gt" / "perception.jsonl").read_text().splitlines() if '"slow"' in x]
    assert len(slow) >= 10
    for s in slow:
        mine = [a for a in alerts if abs(a["end_ns"] - s["mono_ns"]) < 2_000_000]
        assert len(mine) == 1, (s, [a["end_ns"] for a in alerts])
        assert mine[0]["alerted_ns"] - s["mono_ns"] < 2_000_000_000, mine[0]
    # a flow after the slow-down may still miss while the queue it built drains (0.5 s), no other
    lo, hi = min(s["begin_ns"] for s in slow), max(s["mono_ns"] for s in slow) + 500_000_000
    assert all(lo <= a["end_ns"] <= hi for a in alerts), [(a["end_s"], a["latency_ns"]) for a in alerts]
    # the relay's output is the recording: its events are those watch read, none lost
    trace = tmp_path / "trace"
    n = sum(1 for _ in _bt_lines(trace))
    m = json.loads((trace / "roscope-manifest.json").read_text())
    assert m["state"] == "complete" and m["options"]["live_timer_us"] == 50_000
    assert n > 1000 and m["events_recorded"] == n
    assert m["events_discarded"] == 0 and m["packets_lost"] == 0
    assert lines[-1 if "window" in lines[-1] else -2]["lost_events_total"] == 0
    assert not list(trace.rglob("archives"))   # no rotation
