"""The kernel-scheduling recording of the ROS 1 example (issue 12) and its oracle.

The example pinned to one CPU with a competing real-time process, recorded with `roscope record
--kernel` (`record`, made once per test session by conftest's sched_recording); the oracle is
perf's own `perf sched timehist` and `perf script` (`timehist`, `missed_switches`) with the
intervals' intersections computed here, independently of roscope's reader and joins."""
from __future__ import annotations

import collections
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.ros1 import EXAMPLE, build_all, roscope_record


def recorded(test):
    """The tests on the recording: live LTTng and ROS 1 (tiers of the suite)."""
    return pytest.mark.lttng(pytest.mark.ros1(test))


CPU = 1
COMPETITOR = "competitor"
#: The system runs DURATION s; the competitor starts START s after the nodes are up and, for BUSY s,
#: spins ON ms out of every PERIOD ms.
DURATION, START, BUSY, ON, PERIOD = 5, 0.5, 1.5, 1, 2
COMPETITOR_PY = f"""
import ctypes, time
ctypes.CDLL(None).prctl(15, b"{COMPETITOR}", 0, 0, 0)  # PR_SET_NAME: the kernel's comm
end = time.monotonic() + {BUSY}
while time.monotonic() < end:
    t = time.monotonic() + {ON} / 1000
    while time.monotonic() < t:
        pass
    time.sleep(({PERIOD} - {ON}) / 1000)
"""


def record(tmp_path_factory) -> tuple[Path, Path]:
    """Record the system (the trace directory, with perf/perf.data) and load it into a
    database beside it: (trace, database)."""
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs")
    build_all()
    d = tmp_path_factory.mktemp("sched")
    comp = d / "competitor.py"
    comp.write_text(COMPETITOR_PY)
    out, gt = d / "trace", d / "gt"
    # the competitor starts START s after the nodes' first ground-truth line (they are up)
    script = (f"taskset -c {CPU} {EXAMPLE / 'system.sh'} -d {DURATION} -g {gt} >/dev/null & s=$!; "
              f"for i in $(seq 300); do [ -n \"$(cat {gt}/*.jsonl 2>/dev/null | head -c1)\" ] && break; sleep 0.1; done; "
              f"sleep {START}; taskset -c {CPU} chrt -f 1 /usr/bin/python3 {comp}; wait $s")
    p = roscope_record(["-o", str(out), "--kernel", "--", "bash", "-c", script], timeout=180)
    assert p.returncode == 0, p.stderr
    db = out.parent / "run.duckdb"
    from roscope import loading

    res = loading.write([str(out)], str(db))
    (out.parent / "load-warnings.json").write_text(json.dumps(res.warnings))
    return out, db


_ROW = re.compile(r"^\s*(\d+)\.(\d{6})\s+\[(\d+)\]\s+(.*)\[(-?\d+)(?:/(-?\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                  r"\s+(\S+)\s*$")


_WAKE = re.compile(r"^\s*(\d+)\.(\d{6})\s+\[(\d+)\]\s+.*\s+awakened: (.*)\[(-?\d+)(?:/(-?\d+))?\]\s*$")


def _us(text: str) -> int:
    """A timehist duration (ms with 3 decimals) in ns, exactly."""
    a, b = text.split(".")
    return (int(a) * 1000 + int(b)) * 1000


@functools.cache
def timehist(perf_data: Path) -> dict:
    """Per tid: its running intervals (cpu, start, end), runnable intervals (start,
    end) and the time of its last switch-out, from `perf sched timehist --state`.

    A row is a switch-out at `time` after `run time` on the CPU. The run started at
    the CPU's previous row (its switch-in; timehist prints times and durations cut to
    the µs, so the previous row's time, cut the same way, is taken when it agrees
    with time - run time within 2 µs, and time - run time otherwise). Before the run
    the task was runnable since its own previous switch-out when it left it in state
    R or W (preempted; W is what timehist prints for R+, the kernel's preemption
    mark, which `perf script` shows as prev_state=R+ and timehist counts as sleep),
    else since its first wake-up after that switch-out (`-w` rows, whose times are
    cut like the others), else for `sch delay`. A dying thread's last row has tid -1
    in timehist: it is left out, and so the comparison stops at `last_out`."""
    out = subprocess.run(["perf", "sched", "timehist", "-w", "--state", "-i", str(perf_data)],
                         capture_output=True, text=True, check=True).stdout
    th = collections.defaultdict(lambda: {"running": [], "runnable": [], "pid": None, "name": None, "last_out": None})
    last_state, cpu_last, woken = {}, {}, {}
    for line in out.splitlines():
        m = _ROW.match(line)
        if not m:
            w = _WAKE.match(line)
            if w and int(w[5]) > 0:
                woken.setdefault(int(w[5]), (int(w[1]) * 1_000_000 + int(w[2])) * 1000)
            continue
        t = (int(m[1]) * 1_000_000 + int(m[2])) * 1000
        cpu, tid = int(m[3]), int(m[5])
        delay, run = _us(m[8]), _us(m[9])
        prev_row = cpu_last.get(cpu)
        cpu_last[cpu] = t
        if tid <= 0:
            continue
        start = prev_row if prev_row is not None and abs(t - run - prev_row) <= 2000 else t - run
        x = th[tid]
        x["pid"], x["name"] = int(m[6] or m[5]), m[4].strip()
        x["running"].append((cpu, start, t))
        wake = woken.pop(tid, None)
        if last_state.get(tid) in ("R", "W"):
            x["runnable"].append((x["last_out"], start))
        elif wake is not None and wake < start:
            x["runnable"].append((wake, start))
        elif delay > 0:
            x["runnable"].append((start - delay, start))
        last_state[tid] = m[10]
        x["last_out"] = t
    return th


_SWITCH = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d{9}):\s+sched:sched_switch:.*\bprev_pid=(-?\d+) .*\bnext_pid=(-?\d+)")


@functools.cache
def missed_switches(perf_data: Path) -> dict[int, list[tuple[int, int]]]:
    """{tid: [(the CPU's previous switch, the switch-out)]} (ns) of every switch-out in
    `perf script`'s reading of perf.data that names a thread other than the one its CPU's
    previous switch switched in: the data misses the switch-in (and often its wake-up), and
    perf wrote no loss record. When the thread started running in that window is unknown:
    timehist takes the window's start, roscope the thread's last event in it; the
    comparisons leave the window out for that thread."""
    out = subprocess.run(["perf", "script", "--ns", "-F", "cpu,time,event,trace", "-i", str(perf_data)],
                         capture_output=True, text=True, check=True).stdout
    cur: dict[int, tuple[int, int]] = {}
    missed = collections.defaultdict(list)
    for line in out.splitlines():
        m = _SWITCH.search(line)
        if not m:
            continue
        cpu, ts, prev, nxt = int(m[1]), int(m[2]) * 1_000_000_000 + int(m[3]), int(m[4]), int(m[5])
        if prev != nxt and prev != 0 and cpu in cur and cur[cpu][1] != prev:
            missed[prev].append((cur[cpu][0], ts))
        cur[cpu] = (ts, nxt)
    return dict(missed)


def perf_saw_whole(missed: dict[int, list[tuple[int, int]]], tid: int, start: int, end: int) -> bool:
    """Whether no window of `missed_switches` of thread `tid` meets [start, end): perf's
    data holds every switch of that thread in the span."""
    return not any(a < end and b > start for a, b in missed.get(tid, []))


def overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Total length of the intersection of two lists of disjoint intervals."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    tot = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            tot += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def overlap_pieces(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The intersection of two lists of disjoint intervals, as intervals."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def oracle_culprits(th: dict, tid: int, run: tuple[int, int]) -> collections.Counter:
    """Per task, how long it ran on the CPU while thread `tid` was runnable during `run`
    (timehist's intervals, CPU by CPU)."""
    pieces = overlap_pieces(th[tid]["runnable"], [run])
    got = collections.Counter()
    if not pieces:
        return got
    lo, hi = pieces[0][0], pieces[-1][1]
    for other, x in th.items():
        if other == tid:
            continue
        ivs = [(s, e) for c, s, e in x["running"] if c == CPU and e > lo and s < hi]
        if ivs:
            ns = overlap(pieces, ivs)
            if ns:
                got[other] += ns
    return got
