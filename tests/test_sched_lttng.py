"""Kernel scheduling from a real LTTng kernel trace (issue 12): per-thread states
against an independent computation from babeltrace2's events.

The trace (tests/data/lttng-kernel-sched/bug446190; its PROVENANCE.md is beside it) was recorded by
lttng-modules 2.5 on a 4-CPU ARM board: 1,052 sched_switch, 566 sched_wakeup and
2 sched_wakeup_new among 31,556 events. roscope decodes it with its own CTF reader
and builds the intervals in DuckDB SQL; the oracle below decodes it with bt2 and
walks the events in time order in plain Python, a state machine per thread written
from the kernel's meaning of the events:

* ``sched_switch`` on a CPU: ``next_tid`` runs (on that CPU) from then; ``prev_tid``
  is runnable when its ``prev_state`` is TASK_RUNNING (0), possibly with the
  preemption mark TASK_STATE_MAX (1024 on Linux 3.10), otherwise blocked (sleeping,
  uninterruptible, dead, ...). The idle task (tid 0) has no states.
* ``sched_wakeup``: a blocked thread becomes runnable; a wake-up of a thread that is
  running or runnable changes nothing.
* ``sched_wakeup_new``: a new thread is runnable from then.
* ``sched_process_exec``: the thread's name becomes the file's base name (at most 15
  bytes, as exec sets ``comm``); each interval has the name in force from its start (the
  comm of the event that started it), and an exec starts a new interval in the same
  state with the new name.

Conventions both sides share, stated once here: a thread's state is unknown until its
first switch (or its sched_wakeup_new), so its time before is in no state; its last
interval ends at the trace's last scheduler event; timestamps are the clock's values in
ns (LTTng's monotonic clock, without the clock's offset from the epoch). The trace has
no lost events and every switch names as switched out the thread last switched in on
its CPU (checked below), so roscope's rule for a switch the recorder missed never
applies and the two definitions coincide exactly: equality is to the ns.
"""
from __future__ import annotations

import collections
import functools
from pathlib import Path

import pytest

TRACE = Path(__file__).parent / "data" / "lttng-kernel-sched" / "bug446190"
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


@pytest.fixture(scope="module")
def db():
    import roscope

    return roscope.open(str(TRACE))


def _rows(db, sql: str):
    return list(db.sql(sql).itertuples(index=False))


def test_the_trace_is_what_the_oracle_assumes():
    """No lost events, every switch-out names the CPU's current thread, and both kinds
    of wake-up and of switch-out (preempted, blocked) occur: otherwise the comparison
    below would not test what it says."""
    events = bt2_events()
    kinds = collections.Counter(e[2] for e in events)
    assert kinds == {"sched_switch": 1052, "sched_wakeup": 566, "sched_wakeup_new": 2, "sched_process_exec": 2}
    current: dict[int, int] = {}
    for _ts, cpu, name, p, _s in events:
        if name == "sched_switch":
            assert current.get(cpu, p["prev_tid"]) == p["prev_tid"]
            current[cpu] = p["next_tid"]
    assert sorted(current) == [0, 1, 2, 3]
    states = collections.Counter(p["prev_state"] for _t, _c, n, p, _s in events if n == "sched_switch")
    assert states[PREEMPTED] > 100 and states[1] > 100 and states[2] > 0


def test_thread_intervals_equal_babeltrace2s_to_the_ns(db):
    want = oracle()["intervals"]
    got = collections.defaultdict(list)
    for tid, state, start, end, cpu, name in _rows(db, "SELECT tid, state, start_ts, end_ts, cpu, name FROM thread_states "
                                                     "ORDER BY tid, start_ts"):
        got[tid].append((state, start, end, cpu if state == "running" else None, name))
    assert sorted(got) == sorted(want)
    for tid in want:
        assert got[tid] == want[tid], f"tid {tid}"
    assert sum(len(v) for v in want.values()) > 1500


def test_per_thread_running_runnable_blocked_times_equal_babeltrace2s(db):
    want = {(tid, st): 0 for tid in oracle()["intervals"] for st in STATES}
    for tid, ivs in oracle()["intervals"].items():
        for st, a, b, _cpu, _name in ivs:
            want[tid, st] += b - a
    got = {(tid, st): 0 for tid in oracle()["intervals"] for st in STATES}
    for tid, st, total in _rows(db, "SELECT tid, state, sum(end_ts - start_ts)::BIGINT FROM thread_states GROUP BY ALL"):
        got[tid, st] = total
    assert got == want
    # not a comparison of zeros: 26 threads, several runnable for long
    assert len({tid for tid, _ in want}) == 26
    assert sum(v > 0 for (_t, st), v in want.items() if st == "runnable") >= 15
    assert sum(v for (_t, st), v in want.items() if st == "runnable") > 10_000_000  # > 10 ms


def test_preemptions_migrations_and_names_equal_babeltrace2s(db):
    o = oracle()
    pre = collections.defaultdict(list)
    for tid, ts, cpu, by in _rows(db, "SELECT tid, ts, cpu, by_tid FROM preemptions ORDER BY tid, ts"):
        pre[tid].append((ts, cpu, by))
    assert dict(pre) == o["preemptions"]
    assert sum(map(len, o["preemptions"].values())) >= 172
    mig = collections.defaultdict(list)
    for tid, ts, a, b in _rows(db, "SELECT tid, ts, from_cpu, to_cpu FROM migrations ORDER BY tid, ts"):
        mig[tid].append((ts, a, b))
    assert dict(mig) == o["migrations"]
    assert sum(map(len, o["migrations"].values())) > 10
    names = dict(_rows(db, "SELECT tid, name FROM kernel_threads"))
    assert names == o["names"]
