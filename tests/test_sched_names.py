"""Thread names over time in `roscope why` (issue 29): a culprit is named as it was named
when it held the CPU, not by its last name.

The system: examples/ros1_unannotated (six roscpp nodes) pinned to one CPU, recorded with
`roscope record --kernel`, and on the same CPU, at real-time priority (SCHED_FIFO 1, so
that it takes the CPU from the nodes), one subshell that first works as `bash` (a busy
arithmetic loop, timed waits, and `sleep` children, each a forked `bash` that execs `sleep`), then
execs a Python busy loop (`python3`) that renames itself `cpuhog` with
prctl(PR_SET_NAME): one thread id with several names over its life (`taskset`, `chrt`,
`bash`, `python3`, `cpuhog`: each of the first three execs the next).

The oracle is perf's own reading of perf.data, `perf script --show-task-events`, parsed
here: the sched_switch/sched_wakeup lines and perf's COMM records (the exact time of an
exec or a prctl rename) give each thread's name at every instant, who ran on each CPU
when, and when each node thread waited for its CPU. For every run of a node thread,
the culprits roscope names (thread, name, time) must equal the threads that ran on the
CPU while it waited, under the name perf reported at that time.
"""
from __future__ import annotations

import bisect
import collections
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.ros1 import REPO, read_trace, roscope_record

pytestmark = [pytest.mark.lttng, pytest.mark.ros1]

EXAMPLE = REPO / "examples" / "ros1_unannotated"
NODES = {"planner", "gateway", "detector", "localizer", "lidar_filter", "drivers"}
CPU = 1
HOG = "cpuhog"
HOG_PY = f"""
import ctypes, time
ctypes.CDLL(None).prctl(15, b"{HOG}", 0, 0, 0)  # PR_SET_NAME
end = time.monotonic() + 1.5
while time.monotonic() < end:
    t = time.monotonic() + 0.001
    while time.monotonic() < t:
        pass
    time.sleep(0.001)
"""
#: The subshell: 2-3 s as bash (a few ms of arithmetic, then a 2 ms timed read of an empty
#: FIFO; every tenth time a `sleep` child instead, a forked bash that execs sleep), then it
#: execs the Python loop in the same process and thread. (bash's SECONDS counts whole
#: seconds: `+ 2` was 1-2 s, and once only 2 runs were delayed while it was bash.)
SUBSHELL = ("exec 3<>{fifo}; k=0; end=$((SECONDS + 3)); while ((SECONDS < end)); do j=0; while ((j++ < 5000)); do :; done; "
            "if ((k++ % 10)); then read -t 0.002 -u 3 || :; else sleep 0.002; fi; done; exec /usr/bin/python3 {hog}")


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs")
    for d in (REPO / "instrument" / "ros1", EXAMPLE):
        p = subprocess.run(["make", "-C", str(d)], capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    d = tmp_path_factory.mktemp("names")
    hog = d / "hog.py"
    hog.write_text(HOG_PY)
    out, gt = d / "trace", d / "gt"
    fifo = d / "fifo"
    os.mkfifo(fifo)
    sub = SUBSHELL.format(hog=hog, fifo=fifo)
    script = (f"taskset -c {CPU} {EXAMPLE / 'system.sh'} -d 7 -g {gt} >/dev/null & s=$!; "
              f"for i in $(seq 300); do [ -n \"$(cat {gt}/*.jsonl 2>/dev/null | head -c1)\" ] && break; sleep 0.1; done; "
              f"sleep 0.5; taskset -c {CPU} chrt -f 1 bash -c '{sub}'; wait $s")
    p = roscope_record(["-o", str(out), "--kernel", "--", "bash", "-c", script], timeout=180)
    assert p.returncode == 0, p.stderr
    db = d / "run.duckdb"
    from roscope import loading

    loading.write([str(out)], str(db))
    return out, db


# --------------------------------------------------------------------------
# the oracle: perf script, parsed here
# --------------------------------------------------------------------------

_LINE = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<s>\d+)\.(?P<ns>\d{9}):\s+(?P<rest>.*)$")
_SW = re.compile(r"sched:sched_switch: prev_comm=(.*) prev_pid=(\d+) prev_prio=-?\d+ prev_state=(\S+) ==> "
                 r"next_comm=(.*) next_pid=(\d+) next_prio=-?\d+")
_WK = re.compile(r"sched:sched_wakeup: comm=(.*) pid=(\d+) prio")
_COMM = re.compile(r"PERF_RECORD_COMM(?: exec)?: (.*):(-?\d+)/(-?\d+)$")


def perf_view(perf_data: Path, victims: set[int]) -> dict:
    """From `perf script`: per CPU the running slices [(start, end, tid, name)] (by start) cut where a
    COMM record renames the running thread; per victim thread its runnable spells
    [(start, end, cpu it then ran on)]; and every COMM record (ts, tid, name).

    perf does not see every switch: when a switch-out names another thread than the one
    last switched in on that CPU, the thread switched out ran since the CPU's previous
    switch, or since its own previous event if later (`perf sched timehist`'s rule), and
    the one switched in before stopped running then."""
    text = subprocess.run(["perf", "script", "--show-task-events", "--ns", "-i", str(perf_data),
                           "-F", "comm,tid,cpu,time,event,trace"], capture_output=True, text=True, check=True).stdout
    on_cpu: dict[int, list] = {}  # cpu -> [tid, since, name]
    last_switch: dict[int, int] = {}  # cpu -> time of its last switch
    last_ev: dict[int, int] = {}  # tid -> time of the last event naming it
    slices = collections.defaultdict(list)
    runnable, state, since = collections.defaultdict(list), {}, {}
    renames = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        ts, cpu, rest = int(m["s"]) * 1_000_000_000 + int(m["ns"]), int(m["cpu"]), m["rest"]
        if (c := _COMM.search(rest)) and ts > 0:
            tid, name = int(c[3]), c[1]
            renames.append((ts, tid, name))
            for k, cur in on_cpu.items():  # the renamed thread is on a CPU: cut its slice
                if cur[0] == tid:
                    slices[k].append((cur[1], ts, tid, cur[2]))
                    on_cpu[k] = [tid, ts, name]
            last_ev[tid] = ts
        elif s := _SW.search(rest):
            prev, nxt = int(s[2]), int(s[5])
            cur = on_cpu.get(cpu)
            came = None  # when prev came on this CPU, if perf missed it
            if cur is not None and cur[0] == prev:
                slices[cpu].append((cur[1], ts, prev, s[1]))
            elif cpu in last_switch and prev != 0:
                came = max(last_switch[cpu], last_ev.get(prev, last_switch[cpu]))
                if cur is not None and cur[1] < came:
                    slices[cpu].append((cur[1], came, cur[0], cur[2]))
                slices[cpu].append((came, ts, prev, s[1]))
            on_cpu[cpu], last_switch[cpu] = [nxt, ts, s[4]], ts
            if prev in victims and prev != nxt:
                if came is not None and state.get(prev) == "runnable":
                    runnable[prev].append((since[prev], came, cpu))
                if s[3].startswith("R"):
                    state[prev], since[prev] = "runnable", ts
                else:
                    state[prev] = "blocked"
            if nxt in victims and prev != nxt:
                if state.get(nxt) == "runnable":
                    runnable[nxt].append((since[nxt], ts, cpu))
                state[nxt] = "running"
            last_ev[prev] = last_ev[nxt] = ts
        elif w := _WK.search(rest):
            tid = int(w[2])
            if tid in victims and state.get(tid) == "blocked":
                state[tid], since[tid] = "runnable", ts
            last_ev[tid] = ts
    index = {}  # cpu -> (slice starts, slices by start, longest slice): for oracle_culprits' search
    for cpu, sl in slices.items():
        sl = sorted(sl)
        index[cpu] = ([x for x, *_ in sl], sl, max(y - x for x, y, *_ in sl))
    return {"slices": index, "runnable": runnable, "renames": renames}


def oracle_culprits(view: dict, tid: int, a: int, b: int) -> dict:
    """(culprit tid, its name then) -> ns it held the CPU while `tid` waited for it in [a, b)."""
    got = collections.Counter()
    for s, e, cpu in view["runnable"][tid]:
        lo, hi = max(s, a), min(e, b)
        if hi <= lo:
            continue
        starts, sl, longest = view["slices"].get(cpu, ([], [], 0))
        # the slices that can overlap [lo, hi): those starting in [lo - longest, hi)
        for x, y, other, name in sl[bisect.bisect_left(starts, lo - longest):bisect.bisect_left(starts, hi)]:
            if other != tid and min(y, hi) > max(x, lo):
                got[(other, name)] += min(y, hi) - max(x, lo)
    return got


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------

def test_culprits_carry_the_name_perf_reported_when_they_held_the_cpu(recording, run_roscope):
    out, db = recording
    events, _ = read_trace(out)
    pids = {e["vpid"] for e in events if e.get("procname") in NODES}
    victims = {e["vtid"] for e in events if e["vpid"] in pids}
    view = perf_view(out / "perf" / "perf.data", victims)
    # The subshell: the thread perf saw exec taskset, chrt, bash, then python3, then be renamed cpuhog.
    hog_tid = next(t for _ts, t, n in view["renames"] if n == HOG)
    names = [(ts, n) for ts, t, n in view["renames"] if t == hog_tid]
    assert [n for _ts, n in names][-3:] == ["bash", "python3", HOG], names
    exec_ts, rename_ts = names[-2][0], names[-1][0]

    p = run_roscope("why", str(db), "--top", "100000", "--json")
    assert p.returncode == 0, p.stderr
    runs = [r for r in json.loads(p.stdout)["runs"] if r["tid"] in victims]
    assert len(runs) > 100
    compared, hog_names = 0, collections.Counter()
    for r in runs:
        got = {(c["tid"], c["name"]): c["ns"] for c in r["culprits"]}
        want = oracle_culprits(view, r["tid"], r["start_ts"], r["end_ts"])
        if sum(want.values()) < 50_000:
            continue
        compared += 1
        # Every culprit with its name then and its time, as perf saw it (to the ns, or 1 %
        # where perf missed a switch of some other task and the two readings fill it differently).
        for key, ns in want.items():
            if ns >= 20_000:
                assert got.get(key, 0) == pytest.approx(ns, rel=0.01, abs=2_000), (r["run_id"], key, r["culprits"][:4])
        for key, ns in got.items():
            if ns >= 20_000:
                assert want.get(key, 0) == pytest.approx(ns, rel=0.01, abs=2_000), (r["run_id"], key, want.most_common(4))
        for (t, name), ns in got.items():
            if t == hog_tid and ns >= 20_000:
                hog_names[name] += 1
                # never the later name before the rename, nor the earlier one after it
                if name == HOG:
                    assert r["end_ts"] > rename_ts, r["run_id"]
                if name == "bash":
                    assert r["start_ts"] < exec_ts, r["run_id"]
        # the process name of a one-thread process is its thread's name then
        for c in r["culprits"]:
            if c["tid"] == c["pid"]:
                assert c["procname"] == c["name"], c
    assert compared >= 20, compared
    # The same thread delayed runs under both names.
    print(f"\n{compared} runs compared; runs the subshell delayed, by its name then: {dict(hog_names)}")
    assert hog_names["bash"] >= 3 and hog_names[HOG] >= 3, hog_names
