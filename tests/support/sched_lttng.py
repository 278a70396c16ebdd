"""The per-thread scheduling states of a real LTTng kernel trace (tests/data/lttng-kernel-sched/
bug446190), computed from babeltrace2's events by a state machine per thread written from the
kernel's meaning of the events (test_sched_lttng.py's docstring states the rules): the oracle of
test_sched_lttng.py and test_sched_stream.py."""
from __future__ import annotations

import collections
import functools
from pathlib import Path

import pytest

TRACE = Path(__file__).resolve().parents[1] / "data" / "lttng-kernel-sched" / "bug446190"
SCHED = ("sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_process_exec")
#: Linux 3.10's TASK_STATE_MAX: sched_switch's prev_state of a preempted task.
PREEMPTED = 1024
STATES = ("running", "runnable", "blocked")


@functools.cache
def bt2_events() -> tuple:
    """(ts, cpu, event name, {integer payload fields}, {string payload fields}) of the
    scheduler events, in bt2's time order."""
    bt2 = pytest.importorskip("bt2")
    out = []
    for msg in bt2.TraceCollectionMessageIterator(str(TRACE)):
        if type(msg) is not bt2._EventMessageConst or msg.event.name not in SCHED:
            continue
        ev = msg.event
        ints = {k: int(v) for k, v in ev.payload_field.items() if isinstance(v, bt2._IntegerFieldConst)}
        strs = {k: str(v) for k, v in ev.payload_field.items() if isinstance(v, bt2._StringFieldConst)}
        out.append((msg.default_clock_snapshot.value, int(ev.packet.context_field["cpu_id"]), ev.name, ints, strs))
    return tuple(out)


@functools.cache
def oracle() -> dict:
    """Per thread, its intervals [(state, start_ts, end_ts, cpu of a running interval, name)]
    (consecutive equal states of one name are one interval), its preemptions [(ts, cpu,
    by_tid)], its migrations [(ts, from_cpu, to_cpu)] and its last name."""
    events = bt2_events()
    end = events[-1][0]
    cur: dict[int, list] = {}  # tid -> [state, since, cpu, name]
    iv = collections.defaultdict(list)
    pre = collections.defaultdict(list)
    mig = collections.defaultdict(list)
    ran_on: dict[int, int] = {}
    names: dict[int, str] = {}

    def enter(tid: int, state: str, ts: int, cpu: int | None, name: str) -> None:
        c = cur.get(tid)
        if c is not None:
            if c[0] == state and c[3] == name:
                return
            if ts > c[1]:
                iv[tid].append((c[0], c[1], ts, c[2], c[3]))
        cur[tid] = [state, ts, cpu if state == "running" else None, name]

    for ts, cpu, name, p, s in events:
        if name == "sched_switch":
            prev, nxt = p["prev_tid"], p["next_tid"]
            names[prev], names[nxt] = s["prev_comm"], s["next_comm"]
            if prev == nxt:
                continue
            runnable = p["prev_state"] in (0, PREEMPTED)
            if prev:
                enter(prev, "runnable" if runnable else "blocked", ts, None, s["prev_comm"])
                if runnable and nxt:
                    pre[prev].append((ts, cpu, nxt))
            if nxt:
                enter(nxt, "running", ts, cpu, s["next_comm"])
                if nxt in ran_on and ran_on[nxt] != cpu:
                    mig[nxt].append((ts, ran_on[nxt], cpu))
                ran_on[nxt] = cpu
        elif name == "sched_process_exec":
            tid = p["tid"]
            names[tid] = s["filename"].rsplit("/", 1)[-1][:15]
            c = cur.get(tid)
            if c is not None:
                enter(tid, c[0], ts, c[2], names[tid])
        else:
            tid = p["tid"]
            names[tid] = s["comm"]
            c = cur.get(tid)
            if tid and ((c is not None and c[0] == "blocked") or (c is None and name == "sched_wakeup_new")):
                enter(tid, "runnable", ts, None, s["comm"])
    for tid, (state, since, c, nm) in cur.items():
        if end > since:
            iv[tid].append((state, since, end, c, nm))
    return {"intervals": dict(iv), "preemptions": dict(pre), "migrations": dict(mig),
            "names": {t: n for t, n in names.items() if t}}
