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

from roscope import _core, memory, regex, stats
from roscope.database import Database, columns_sql, create_views
from roscope.errors import NoTopicMatch
from roscope.flow import FlowRequest, data_flows, path_stats

#: Tables `_core.LiveModel.feed` hands over in chunks, and the column of each that
#: says when its record happened (what leaves the database once the window passed).
INSTANCES = {"callback_runs": "start_ts", "publications": "ts", "takes": "ts", "links": None,
             "executor_states": "start_ts"}

#: How long (ns of trace time) the core holds records that may still change before
#: handing them over: a take waits for 2 of these (its link), a run for 1 (a run still
#: open at the end of a chunk waits until it ends). A record's layers and its run come
#: within microseconds of its start; this is the margin for a thread preempted between
#: them. A window (and a deadline check) waits for 2 of these after its end.
HOLD_NS = 40_000_000

#: How far before a window's start the records stay when paths are watched: a flow
#: that ends in the window and started up to this much earlier is found whole.
REACH_NS = 2_000_000_000

#: How often (ns of trace time) the records held move into a fresh DuckDB instance
#: (`_renew`): DuckDB keeps the memory of deleted rows and of the flow database's
#: refills until its instance closes (the RSS of a soak grew for minutes without it).
RENEW_NS = 30_000_000_000

#: Further from 0 than any record's time (the open end of a range).
_END = 2**62



class _Stream:
    """A DuckDB result handed to another DuckDB instance as an Arrow C stream
    (`__arrow_c_stream__`), without pyarrow: DuckDB does not read a relation of another
    instance itself."""

    def __init__(self, rel):
        self.rel = rel

    def __arrow_c_stream__(self, requested_schema=None):
        return self.rel.__arrow_c_stream__(requested_schema)

class WatchedPath:
    """A watched path: its `FlowRequest`, and a deadline (ns) or None."""

    def __init__(self, from_re: str, to_re: str, deadline_ns: int | None = None):
        regex.compile(from_re, "--from")   # a regex the search cannot run: refused now, not at each search
        regex.compile(to_re, "--to")
        self.request = FlowRequest(from_re, to_re, slice_publications=None)
        self.deadline_ns = deadline_ns
        self.name = f"{from_re}->{to_re}"


#: The instance tables with dense ids (`LiveWindows._flow_db`): _rm, _pm, _tm map the
#: run, publication and take ids held to 0..n; a reference to a record not held is null.
_DENSE = {
    "callback_runs": """SELECT m.nid AS run_id, r.callback_id, r.thread_id, r.start_ts, r.end_ts, r.duration_ns, r.is_intra,
                               r.depth, pm.nid AS parent_run_id
                        FROM callback_runs r JOIN _rm m USING (run_id) LEFT JOIN _rm pm ON pm.run_id = r.parent_run_id""",
    "publications": """SELECT m.nid AS publication_id, p.publisher_id, p.thread_id, rm.nid AS run_id, p.ts, p.rclcpp_ts, p.rcl_ts,
                              p.rmw_ts, p.message, p.source_ts, p.is_intra
                       FROM publications p JOIN _pm m USING (publication_id) LEFT JOIN _rm rm ON rm.run_id = p.run_id""",
    "takes": """SELECT m.nid AS take_id, t.subscription_id, t.thread_id, rm.nid AS run_id, t.ts, t.rmw_ts, t.rcl_ts, t.rclcpp_ts,
                       t.message, t.source_ts, t.taken, t.is_intra
                FROM takes t JOIN _tm m USING (take_id) LEFT JOIN _rm rm ON rm.run_id = t.run_id""",
    "links": """SELECT pm.nid AS publication_id, tm.nid AS take_id, rm.nid AS run_id, l.method, l.heuristic
                FROM links l JOIN _pm pm USING (publication_id) LEFT JOIN _tm tm ON tm.take_id = l.take_id
                LEFT JOIN _rm rm ON rm.run_id = l.run_id""",
    "executor_states": "SELECT * FROM executor_states",
}


class LiveWindows:
    """The model of one live session, fed chunk by chunk; `ready()` gives the windows
    whose records are all in, `window_stats(lo, hi)` their statistics."""

    def __init__(self, window_ns: int, step_ns: int = 1_000_000_000, heuristics: bool = True,
                 record_ids: list[str] | None = None, paths: list[WatchedPath] | None = None, attach: bool = False):
        self.window_ns, self.step_ns = int(window_ns), int(step_ns)
        self.paths = list(paths or [])
        #: Flows that end before this were checked against their deadline (`misses`).
        self.checked_until: int | None = None
        #: The records with dense ids, for the data-flow search of one step (`_flow_db`).
        self.fdb: Database | None = None
        # attach: the processes without a recording id (started before the session, or with
        # `roscope env`) are the recording's, as in `roscope load` of an --attach recording
        self.model = _core.LiveModel(heuristics, record_ids or None, HOLD_NS, attach)
        self._tables = [t["name"] for t in json.loads(_core.schema())["tables"]]
        self.con = self._new_con()
        #: The tables `_core.LiveModel.objects` fills, as last inserted (a table that did
        #: not change is not written again), and how many times any of them changed.
        self._objects: dict = {}
        self._objects_version = 0
        self._fdb: Database | None = None
        self._fdb_objects = -1     # the `_objects_version` the flow database's objects are of
        self.db = Database(self.con, ":memory:", meta={"live": True})
        self._renewed: int | None = None  # the trace time of the last `_renew`
        #: The first event's time (the trace's start, as `roscope stats` counts it).
        self.first: int | None = None
        #: Records that start before this are all in the database.
        self.complete_until: int | None = None
        #: The end of the last window given by `ready`.
        self.next_end: int | None = None
        self.lost_events = 0
        self.lost_packets = 0
        self.lost_in_window: list[tuple[int, int]] = []   # (chunk's last event time, events discarded)

    def _new_con(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB instance in memory with the model's tables and views."""
        con = duckdb.connect(":memory:")
        memory.hand_back_freed(con)   # each step deletes rows: RSS flat over hours
        for name in self._tables:
            con.execute(f'CREATE TABLE "{name}" ({columns_sql(name)})').fetchall()
        create_views(con)
        return con

    def _renew(self) -> None:
        """Moves the records held into a fresh DuckDB instance and closes the old one
        (and the flow database, made again at the next search): what DuckDB kept of
        deleted rows goes with it."""
        old, con = self.con, self._new_con()
        for name in self._tables:
            con.from_arrow(_Stream(old.sql(f'SELECT * FROM "{name}"'))).insert_into(name)
        self.con = con
        self.db = Database(con, ":memory:", meta={"live": True})
        old.close()
        if self._fdb is not None:
            self._fdb.con.close()
            self._fdb, self.fdb, self._fdb_objects = None, None, -1

    def _put(self, chunks) -> None:
        for name, tbl in chunks:
            self.con.from_arrow(tbl).insert_into(name)

    def feed(self, chunk_dir: str, upto: int | None = None, after: list | None = None) -> None:
        """Reads one archived chunk (a trace directory); a live source's mini chunk only up
        to `upto`, and its stream files in `after` after their time (`_core.LiveModel.feed`)."""
        chunks, last, discarded, packets = self.model.feed([chunk_dir], upto, after)
        self._put(chunks)
        # The objects known so far replace the previous ones (a few rows per object), where
        # they changed.
        for name, tbl in self.model.objects():
            rows = self.con.from_arrow(tbl).fetchall()  # a few rows per object
            if name in self._objects and self._objects[name] == rows:
                continue
            self._objects[name] = rows
            self._objects_version += 1
            self.con.execute(f'DELETE FROM "{name}"').fetchall()
            self.con.from_arrow(tbl).insert_into(name)
        self.lost_events += discarded
        self.lost_packets += packets
        if last is not None:
            if discarded or packets:
                self.lost_in_window.append((last, discarded))
            if self.first is None:
                self.first = self.con.execute("SELECT min(first_ts) FROM threads").fetchall()[0][0]
            self.complete_until = last - 2 * HOLD_NS

    @property
    def events(self) -> int:
        """Events read so far (every event of every chunk)."""
        return self.model.events

    def close(self) -> None:
        """After the last chunk: everything the core still held."""
        self._put(self.model.close())
        if self.first is not None:
            self.complete_until = self.con.execute("SELECT max(last_ts) FROM threads").fetchall()[0][0] + 1

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

    def step(self, final: bool = False, on_alert=None) -> tuple[list[dict], list[dict]]:
        """`check`, then `windows`: the deadline misses of the flows that ended since the
        last check, and the windows now complete with their statistics."""
        alerts = self.check(on_alert)
        return self.windows(final), alerts

    def check(self, on_alert=None) -> list[dict]:
        """The deadline misses of the flows that ended since the last check (`_misses`),
        found by a search of the paths with a deadline over the records of the last
        `REACH_NS` before those flows only (work that does not grow with the window);
        they go to `on_alert` (a list) at once."""
        alerts: list[dict] = []
        if not self.paths or self.complete_until is None or self.first is None:
            return alerts
        since = self.checked_until if self.checked_until is not None else self.first
        watched = [p for p in self.paths if p.deadline_ns is not None]
        if watched and since < self.complete_until:
            self.fdb = self._flow_db(since - REACH_NS)
            for p in watched:
                if self._search(p):
                    alerts += self._misses(p, since, self.complete_until)
            if alerts and on_alert is not None:
                on_alert(alerts)
        self.checked_until = self.complete_until
        return alerts

    def windows(self, final: bool = False) -> list[dict]:
        """The windows now complete (`ready`), each with its statistics (`window_stats`)
        and its paths' entries (a search over every record held); then the records no
        later window counts leave (`prune`)."""
        bounds = self.ready(final)
        if not bounds:   # nothing to show, and nothing more to prune than at the last window
            return []
        entries: dict[int, list] = {}
        if self.paths and bounds:
            self.fdb = self._flow_db(None)
            for k, p in enumerate(self.paths):
                if self._search(p):
                    entries[k] = [self._path_entry(p, lo, hi) for lo, hi in bounds]
        out = []
        for i, (lo, hi) in enumerate(bounds):
            w = self.window_stats(lo, hi)
            w["paths"] = [entries[k][i] for k in sorted(entries)]
            out.append(w)
        self.prune()
        return out

    def _search(self, p: WatchedPath) -> bool:
        """The data flows of `p` over the records in `self.fdb` (False: its topics not
        seen yet). Any other error (a bad regex: `WatchedPath` compiles them first) is
        the user's and ends the watch."""
        try:
            data_flows(self.fdb, p.request)
        except NoTopicMatch:
            return False
        return True

    def _flow_db(self, since: int | None) -> Database:
        """The records held (those from `since` on, with it), in a database of their own
        with dense ids (the flow's model wants ids 0..n; the window's records are a run of
        ids, with gaps where the core still holds a record): the same records, times and
        objects, ids renumbered. Made once, refilled at each search; its objects are
        written again only when they changed."""
        con = self.con
        for name, (table, col, ts) in {"_rm": ("callback_runs", "run_id", "start_ts"),
                                       "_pm": ("publications", "publication_id", "ts"),
                                       "_tm": ("takes", "take_id", "ts")}.items():
            con.execute(f'CREATE OR REPLACE TEMP TABLE {name} AS SELECT {col}, row_number() OVER (ORDER BY {col}) - 1 '
                        f'AS nid FROM "{table}" WHERE {ts} >= {int(since) if since is not None else -_END}').fetchall()
        if self._fdb is None:
            self._fdb = Database(self._new_con(), ":memory:", meta={"live": True})
        fcon = self._fdb.con
        objects = self._fdb_objects != self._objects_version
        self._fdb_objects = self._objects_version
        for name in self._tables:
            if name in _DENSE or (objects and name in self._objects):
                fcon.execute(f'DELETE FROM "{name}"').fetchall()
                fcon.from_arrow(_Stream(con.sql(_DENSE.get(name, f'SELECT * FROM "{name}"')))).insert_into(name)
        return self._fdb

    def _path_entry(self, p: WatchedPath, lo: int, hi: int) -> dict:
        rows = path_stats(self.fdb, (lo, hi))
        out = {"path": p.name, "deadline_ns": p.deadline_ns, "routes": []}
        for r in rows:
            lat = r["latency"]
            misses = None if p.deadline_ns is None else self.fdb.con.execute(
                "SELECT count(*) FROM data_flows d JOIN paths q USING (path_id) WHERE q.path = ? AND d.end_ts >= ? "
                "AND d.end_ts < ? AND d.latency_ns > ?", [r["path"], lo, hi, p.deadline_ns]).fetchall()[0][0]
            out["routes"].append({"route": r["path"], "flows": r["flows"], "p50_ns": lat["p50_ns"], "p99_ns": lat["p99_ns"],
                                  "max_ns": lat["max_ns"], "misses": misses})
        return out

    def _misses(self, p: WatchedPath, lo: int, hi: int) -> list[dict]:
        """The flows of `p` that ended in [lo, hi) later than its deadline, oldest first."""
        rows = self.fdb.con.execute(
            "SELECT d.start_ts, d.end_ts, d.latency_ns, q.path, d.output_publication_id FROM data_flows d "
            "JOIN paths q USING (path_id) WHERE d.end_ts >= ? AND d.end_ts < ? AND d.latency_ns > ? ORDER BY d.end_ts",
            [lo, hi, p.deadline_ns]).fetchall()
        return [{"path": p.name, "deadline_ns": p.deadline_ns, "start_ns": a, "end_ns": b, "latency_ns": n, "route": r,
                 "end_s": (b - self.first) / 1e9} for a, b, n, r, _o in rows]

    def window_stats(self, lo: int, hi: int) -> dict:
        """The statistics of the window [lo, hi): per callback, per topic, lost events
        (and per watched path, filled by `step`)."""
        w = (lo, hi)
        return {
            "window": {"start_ns": lo, "end_ns": hi, "start_s": (lo - self.first) / 1e9, "end_s": (hi - self.first) / 1e9,
                       "stats_window": f"{_seconds(lo - self.first)}:{_seconds(hi - self.first)}"},
            "callbacks": stats.callbacks(self.db, w),
            "topics": [t for t in stats.topics(self.db, w) if t["publications"] or t["takes"]],
            "lost_events": sum(n for t, n in self.lost_in_window if lo <= t < hi + 2 * HOLD_NS),
            "lost_events_total": self.lost_events,
            "packets_lost_total": self.lost_packets,
            "paths": [],
        }

    def prune(self) -> None:
        """Drops the records no later window will count (memory bounded by the window)."""
        if self.next_end is None:
            return
        keep = self.next_end - self.window_ns - (REACH_NS if self.paths else 0)
        for name, col in INSTANCES.items():
            if col is not None:
                self.con.execute(f'DELETE FROM "{name}" WHERE "{col}" < ?', [keep - 2 * HOLD_NS]).fetchall()
        self.con.execute("DELETE FROM links WHERE publication_id NOT IN (SELECT publication_id FROM publications)").fetchall()
        self.lost_in_window = [x for x in self.lost_in_window if x[0] >= keep]
        if self._renewed is None:
            self._renewed = self.next_end
        elif self.next_end - self._renewed >= RENEW_NS:
            self._renewed = self.next_end
            self._renew()


def _seconds(ns: int) -> str:
    """ns as exact decimal seconds (what `--window START:END` reads back exactly)."""
    sign = "-" if ns < 0 else ""
    ns = abs(int(ns))
    return f"{sign}{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"
