"""The execution model of a live session and its statistics over a sliding window
(`roscope watch`, docs/watch.md).

`LiveWindows` feeds each trace chunk of the session (LTTng rotation: a complete CTF
trace) to the core's incremental model builder (`_core.LiveModel`: objects, open runs
and pending links persist across chunks; nothing per event in Python), keeps the
records it hands back in an in-memory DuckDB database with the model's schema and
views, and computes each window's statistics with `roscope.stats`' own functions
restricted to the window: the same definitions (and exact percentiles) as
`roscope stats --window`. Records older than the window leave the database, so
memory is bounded by the window, not by the run.
"""
from __future__ import annotations

import json

import duckdb

from roscope import _core, stats
from roscope.database import Database, columns_sql, create_views
from roscope.loading import table_from_core

#: Tables `_core.LiveModel.feed` hands over in chunks, and the column of each that
#: says when its record happened (what leaves the database once the window passed).
INSTANCES = {"callback_runs": "start_ts", "publications": "ts", "takes": "ts", "links": None,
             "executor_states": "start_ts"}

#: How long (ns of trace time) the core holds records that may still change before
#: handing them over: a take waits for 2 of these (its link), a run for 1 (a run still
#: open at the end of a chunk waits until it ends).
HOLD_NS = 200_000_000


class LiveWindows:
    """The model of one live session, fed chunk by chunk; `ready()` gives the windows
    whose records are all in, `window_stats(lo, hi)` their statistics."""

    def __init__(self, window_ns: int, step_ns: int = 1_000_000_000, heuristics: bool = True,
                 record_ids: list[str] | None = None):
        self.window_ns, self.step_ns = int(window_ns), int(step_ns)
        self.model = _core.LiveModel(heuristics, record_ids or None, HOLD_NS)
        self.con = duckdb.connect(":memory:")
        for t in json.loads(_core.schema())["tables"]:
            self.con.execute(f'CREATE TABLE "{t["name"]}" ({columns_sql(t["name"])})')
        create_views(self.con)
        self.db = Database(self.con, ":memory:", meta={"live": True})
        #: The first event's time (the trace's start, as `roscope stats` counts it).
        self.first: int | None = None
        #: Records that start before this are all in the database.
        self.complete_until: int | None = None
        #: The end of the last window given by `ready`.
        self.next_end: int | None = None
        self.lost_events = 0
        self.lost_packets = 0
        self.lost_in_window: list[tuple[int, int]] = []   # (chunk's last event time, events discarded)

    def _put(self, chunks) -> None:
        for name, tbl in chunks:
            self.con.from_arrow(table_from_core(tbl)).insert_into(name)

    def feed(self, chunk_dir: str) -> None:
        """Reads one archived chunk (a trace directory)."""
        chunks, last, discarded, packets = self.model.feed([chunk_dir])
        self._put(chunks)
        # The objects known so far replace the previous ones (a few rows per object).
        for name, tbl in self.model.objects():
            self.con.execute(f'DELETE FROM "{name}"')
            self.con.from_arrow(table_from_core(tbl)).insert_into(name)
        self.lost_events += discarded
        self.lost_packets += packets
        if last is not None:
            if discarded or packets:
                self.lost_in_window.append((last, discarded))
            if self.first is None:
                self.first = self.con.execute("SELECT min(first_ts) FROM threads").fetchone()[0]
            self.complete_until = last - 2 * HOLD_NS

    def close(self) -> None:
        """After the last chunk: everything the core still held."""
        self._put(self.model.close())
        if self.first is not None:
            self.complete_until = self.con.execute("SELECT max(last_ts) FROM threads").fetchone()[0] + 1

    def ready(self, final: bool = False) -> list[tuple[int, int]]:
        """The windows (start, end) not given yet whose records are all in: one ending
        every `step_ns` from the trace's start, each `window_ns` long (the first ones
        start at the trace's start). With `final`, also the last, partial step."""
        if self.first is None or self.complete_until is None:
            return []
        if self.next_end is None:
            self.next_end = self.first + self.step_ns
        out = []
        while self.next_end <= self.complete_until:
            out.append((max(self.first, self.next_end - self.window_ns), self.next_end))
            self.next_end += self.step_ns
        if final and self.next_end - self.step_ns < self.complete_until:
            out.append((max(self.first, self.next_end - self.window_ns), self.complete_until))
            self.next_end = self.complete_until + self.step_ns
        return out

    def window_stats(self, lo: int, hi: int) -> dict:
        """The statistics of the window [lo, hi): per callback, per topic, lost events."""
        w = (lo, hi)
        return {
            "window": {"start_ns": lo, "end_ns": hi, "start_s": (lo - self.first) / 1e9, "end_s": (hi - self.first) / 1e9,
                       "stats_window": f"{_seconds(lo - self.first)}:{_seconds(hi - self.first)}"},
            "callbacks": stats.callbacks(self.db, w),
            "topics": [t for t in stats.topics(self.db, w) if t["publications"] or t["takes"]],
            "lost_events": sum(n for t, n in self.lost_in_window if lo <= t < hi + 2 * HOLD_NS),
            "lost_events_total": self.lost_events,
            "packets_lost_total": self.lost_packets,
        }

    def prune(self) -> None:
        """Drops the records no later window will count (memory bounded by the window)."""
        if self.next_end is None:
            return
        keep = self.next_end - self.window_ns
        for name, col in INSTANCES.items():
            if col is not None:
                self.con.execute(f'DELETE FROM "{name}" WHERE "{col}" < ?', [keep - 2 * HOLD_NS])
        self.con.execute("DELETE FROM links WHERE publication_id NOT IN (SELECT publication_id FROM publications)")
        self.lost_in_window = [x for x in self.lost_in_window if x[0] >= keep]


def _seconds(ns: int) -> str:
    """ns as exact decimal seconds (what `--window START:END` reads back exactly)."""
    sign = "-" if ns < 0 else ""
    ns = abs(int(ns))
    return f"{sign}{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"
