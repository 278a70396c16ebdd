"""`roscope watch`'s two sources (docs/watch.md, "Live source"); tests/test_watch.py runs the
default one (live) through every check of a watch.

- roscope's own client of LTTng's live viewer protocol (`_core.LiveClient`) against a real
  lttng-relayd started by `roscope.record.relay`, on a real live session: every event it
  handed over (its mini chunks within their bounds, read by babeltrace2) is an event of the
  relay's own output trace (read by babeltrace2), each once, none missing; the emitter's own
  count says none was lost on the way; each mini chunk follows the one before in time;
- `--source rotation` on examples/ros1_pipeline with its filter slowed (as
  tests/test_watch.py): alerts for exactly the slowed flows (the example's own log as
  oracle), its manifest counts the events babeltrace2 reads from the chunks, none lost.

Cost on 2 cores shared with other work (load 14-15): 7-16 s and 17-27 s (the example runs 6 s)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import bt2
import pytest
from roscope import _core
from roscope.record import lttng
from roscope.record.relay import Relay, is_relay_of

from tests.support.oracle import find_traces

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(REPO, "examples", "ros1_pipeline", "system.sh")


def _bt_lines(path) -> list[str]:
    """babeltrace2's text of every event under `path` (times in clock cycles, no deltas)."""
    p = subprocess.run(["babeltrace2", "--no-delta", "--clock-cycles", *find_traces(str(path))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def _bt_events(path, upto=None, after=None) -> list[tuple[str, int, str, str, str]]:
    """babeltrace2's (bt2) reading of every event under `path`: (stream file relative to its
    trace directory, time in clock cycles, name, context, payload); with `upto` and `after`
    (a mini chunk's), those the chunk hands over: up to `upto`, after `after`'s time in the
    files it names (relative to `path`)."""
    out = []
    for t in find_traces(str(path)):
        for m in bt2.TraceCollectionMessageIterator(t):
            if type(m) is bt2._EventMessageConst:
                e, ts = m.event, m.default_clock_snapshot.value
                if upto is not None and ts > upto or ts <= (after or {}).get(os.path.relpath(e.stream.name, path), -1):
                    continue
                out.append((os.path.relpath(e.stream.name, t), ts, e.name, str(e.common_context_field), str(e.payload_field)))
    return out


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
                packets, _bytes, ended, upto, after = client.poll(str(d))
                if packets:
                    chunks.append((d, upto, dict(after)))
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
    theirs = _bt_events(out)
    # a mini chunk's events are those up to its `upto`, after `after`'s time in the files it names
    # (a packet that straddled a poll's time comes again in the next chunk)
    ours = [e for d, upto, after in chunks for e in _bt_events(d, upto, after)]
    assert len([e for e in theirs if e[2] == "roscope_fx:tick"]) == rate * secs   # the emitter's own count
    assert sorted(ours) == sorted(theirs)
    assert len(set(ours)) == len(ours)
    # each chunk's events come after the previous chunk's (as rotation's chunks do)
    last = -1
    for d, upto, after in chunks:
        mine = [e[1] for e in _bt_events(d, upto, after)]
        assert not mine or min(mine) >= last
        last = max(mine, default=last)


@pytest.mark.lttng
@pytest.mark.ros1
def test_rotation_source_alerts_for_exactly_the_slowed_flows(lttng_ready, roscope_cmd, tmp_path):
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "instrument", "ros1")], check=True)
    subprocess.run(["make", "-s", "-C", os.path.dirname(SYSTEM)], check=True)
    p = subprocess.run([*roscope_cmd, "watch", "--source", "rotation", "--json", "--window", "2", "-o", str(tmp_path / "trace"),
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
        assert mine[0]["latency_ns"] > 25_000_000
    # a flow after the slow-down may still miss while the queue it built drains (0.5 s), no other
    lo, hi = min(s["begin_ns"] for s in slow), max(s["mono_ns"] for s in slow) + 500_000_000
    assert all(lo <= a["end_ns"] <= hi for a in alerts), [(a["end_s"], a["latency_ns"]) for a in alerts]
    trace = tmp_path / "trace"
    assert len(list((trace / "archives").iterdir())) >= 5
    n = len(_bt_lines(trace))
    m = json.loads((trace / "roscope-manifest.json").read_text())
    assert m["state"] == "complete" and m["options"]["rotate_us"] == 250_000 and m["options"]["live_timer_us"] is None
    assert n > 1000 and m["events_recorded"] == n
    assert m["events_discarded"] == 0 and m["packets_lost"] == 0


@pytest.mark.lttng
def test_relay_death_ends_the_watch_with_a_clear_error(lttng_ready, roscope_cmd, tmp_path):
    """The live source's relay killed (SIGKILL) while watch reads it: watch stops at once with
    exit 1 and one line naming the relay (its pid, how it ended) and its log, not the core's
    socket error; its session is destroyed. ~5 s."""
    out = tmp_path / "trace"
    p = subprocess.Popen([*roscope_cmd, "watch", "--json", "-o", str(out), "--", "sleep", "60"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    relay, deadline = None, time.monotonic() + 60
    while relay is None and time.monotonic() < deadline and p.poll() is None:
        relay = next((pid for pid, argv in _processes() if is_relay_of(out)(argv)), None)
        time.sleep(0.1)
    assert relay is not None, p.stderr.read() if p.poll() is not None else "no relay"
    time.sleep(2)   # reading the session
    os.kill(relay, signal.SIGKILL)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    lines = [x for x in err.splitlines() if x.startswith("roscope: error:")]
    assert len(lines) == 1 and "warning" not in err, err
    assert f"lttng-relayd (pid {relay}, viewer port 127.0.0.1:" in lines[0], err
    assert "was killed by signal 9" in lines[0] and str(out / "relayd.log") in lines[0], err
    session = err.split("recording session ", 1)[1].split()[0]
    assert session not in lttng.lttng_sessions()


def _processes():
    """(pid, argv) of every process readable in /proc."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    yield int(d), [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
            except OSError:
                continue
