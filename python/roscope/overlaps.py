"""Races between callbacks: runs that overlap in time on different threads of one
process (a multi-threaded executor or spinner), for the flow's `uncertain` flows
(docs/analyses.md, "Races").

When a run of callback A overlaps, on another thread, a run of callback B that
depends on A (an intra-node dependency: A writes state that B reads), whether B
read what that run of A wrote, or what A wrote before, is not known from the
trace: a flow through that dependency is `uncertain`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope import _core

if TYPE_CHECKING:
    from roscope.database import Database

#: The processes whose callbacks ran on more than one thread.
_PROCS_SQL = """
    SELECT c.proc_id FROM callback_runs r JOIN callbacks c USING (callback_id)
    WHERE r.thread_id IS NOT NULL GROUP BY c.proc_id HAVING count(DISTINCT r.thread_id) > 1 ORDER BY 1"""
#: The runs of one process, in the order the sweep (`_core.overlapping_runs`) reads them.
#: Runs without a recorded end are left out (when they end is not known).
_RUNS_SQL = """
    SELECT c.proc_id, r.thread_id, r.callback_id, r.start_ts, r.end_ts
    FROM callback_runs r JOIN callbacks c USING (callback_id)
    WHERE c.proc_id = $proc AND r.end_ts IS NOT NULL AND r.thread_id IS NOT NULL
    ORDER BY r.start_ts"""


def overlapping_runs(db: Database) -> list[tuple[int, int, int]]:
    """(callback A, callback B, start of B's run) for every run of B that a run of A
    overlapped on another thread of the process (A may be B: one callback on two
    threads). One process at a time (the sort of its runs is all DuckDB holds), read
    as an Arrow stream by a sweep in the core. All of them, as Python tuples: on a
    long trace many (417,033 on the 10M-event ros2sim trace); a data-flow search
    takes only those of its intra-node edges instead (`add_overlaps`)."""
    out: list[tuple[int, int, int]] = []
    for runs in _process_runs(db):
        out += _core.overlapping_runs(runs)
    return out


def add_overlaps(db: Database, search: _core.FlowSearch) -> int:
    """Hands the runs of each process whose callbacks ran on several threads to
    `search` (`_core.FlowSearch.add_overlaps`), which keeps the overlaps its
    intra-node edges depend on (the only ones that can make a flow uncertain) and
    never makes a Python object of one. Returns how many it holds."""
    held = 0
    for runs in _process_runs(db):
        held = search.add_overlaps(runs)
    return held


def _process_runs(db: Database):
    """The runs of each process whose callbacks ran on more than one thread, one
    Arrow stream per process in the sweep's order."""
    for (proc,) in db.con.execute(_PROCS_SQL).fetchall():
        yield db.con.sql(_RUNS_SQL, params={"proc": proc})  # read as an Arrow stream by the core
