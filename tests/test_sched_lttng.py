"""Kernel scheduling from a real LTTng kernel trace (issue 12): per-thread states
against an independent computation from babeltrace2's events.

The trace (tests/data/lttng-kernel-sched/bug446190; its PROVENANCE.md is beside it) was recorded by
lttng-modules 2.5 on a 4-CPU ARM board: 1,052 sched_switch, 566 sched_wakeup and
2 sched_wakeup_new among 31,556 events. roscope decodes it with its own CTF reader
and builds the intervals in DuckDB SQL; the oracle (tests/support/sched_lttng.py) decodes it with bt2 and
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

import pytest

from tests.support.sched_lttng import PREEMPTED, STATES, TRACE, bt2_events, oracle


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
