"""The execution model of a live session and its statistics over a sliding window
(`roscope watch`, docs/watch.md).

`LiveWindows` feeds each trace chunk of the session (LTTng rotation: a complete CTF
trace) to the core's incremental model builder (`_core.LiveModel`: objects, open runs
and pending links persist across chunks; nothing per event in Python), keeps the
records it hands back in the core (`_core.LiveStats`: the model's own tables, no
database), and computes each window's statistics there (`roscope_model::stats`, the
code of a short recording's `roscope stats`) assembled by `roscope.stats`' own
functions: the same definitions (and exact percentiles) as `roscope stats --window`.
Records older than the window are forgotten, so memory is bounded by the window, not
by the run.
"""
from __future__ import annotations

import threading

from roscope import _core, regex, stats
from roscope.flow import FlowRequest
from roscope.live_flows import REACH_NS, LiveFlows

#: Tables `_core.LiveModel.feed` hands over in chunks that the windows count
#: (`_core.LiveStats`; the others, executor states, are not counted).
INSTANCES = ("callback_runs", "publications", "takes", "links")

#: How long (ns of trace time) the core holds records that may still change before
#: handing them over: a take waits for 2 of these (its link), a run for 1 (a run still
#: open at the end of a chunk waits until it ends). A record's layers and its run come
#: within microseconds of its start; this is the margin for a thread preempted between
#: them. A window (and a deadline check) waits for 2 of these after its end.
HOLD_NS = 40_000_000

#: Chunks whose records wait for the next window before they go into the windows'
#: store at most (a window not ready for long: they go in anyway).
PENDING_CHUNKS = 200

__all__ = ["HOLD_NS", "INSTANCES", "REACH_NS", "LiveWindows", "WatchedPath"]


class WatchedPath:
    """A watched path: its `FlowRequest`, and a deadline (ns) or None."""

    def __init__(self, from_re: str, to_re: str, deadline_ns: int | None = None):
        regex.compile(from_re, "--from")   # a regex the search cannot run: refused now, not at each search
        regex.compile(to_re, "--to")
        self.request = FlowRequest(from_re, to_re, slice_publications=None)
        self.deadline_ns = deadline_ns
        self.name = f"{from_re}->{to_re}"


class LiveWindows:
    """The model of one live session, fed chunk by chunk; `check()` tells the deadline
    misses of the flows that ended since the last check, `windows()` gives the windows
    whose records are all in, with their statistics."""

    def __init__(self, window_ns: int, step_ns: int = 1_000_000_000, heuristics: bool = True,
                 record_ids: list[str] | None = None, paths: list[WatchedPath] | None = None, attach: bool = False):
        self.window_ns, self.step_ns = int(window_ns), int(step_ns)
        self.paths = list(paths or [])
        #: Flows that end before this were checked against their deadline (`check`).
        self.checked_until: int | None = None
        # attach: the processes without a recording id (started before the session, or with
        # `roscope env`) are the recording's, as in `roscope load` of an --attach recording
        self.model = _core.LiveModel(heuristics, record_ids or None, HOLD_NS, attach)
        #: The records and objects the windows count (`_core.LiveStats`).
        self.store = _core.LiveStats()
        #: Held by whoever uses the store (`window_stats_of` may run on a thread of its own).
        self.lock = threading.Lock()
        #: The watched paths' flows, searched after each chunk (`roscope.live_flows`).
        self.flows = LiveFlows(self.paths)
        #: Records and changed objects not in the store yet: they go in when a window
        #: is computed (`_flush`), each table's chunks at once.
        self._pending: dict[str, list] = {}
        self._pending_chunks = 0
        self._objects: set[str] = set()
        #: Each object table as last handed over.
        self._latest: dict = {}
        #: The first event's time (the trace's start, as `roscope stats` counts it).
        self.first: int | None = None
        #: Records that start before this are all in the store (and in the flows' records):
        #: HOLD_NS twice before the last event read, and before every take still held.
        self.complete_until: int | None = None
        #: The end of the last window given by `ready`.
        self.next_end: int | None = None
        self.lost_events = 0
        self.lost_packets = 0
        self.lost_in_window: list[tuple[int, int]] = []   # (chunk's last event time, events discarded)

    def _flush(self, records: dict, objects: set) -> None:
        """Objects that changed (their names) and records handed over (by table), into the
        store: each object table as it is now, each instance table's chunks at once
        (`_core.ArrowTable.concat`: no copy). The caller holds `lock`."""
        for name in objects:   # the latest of each (a later flush may have written it already)
            self.store.objects(name, self._latest[name])
        for name, tbls in records.items():
            self.store.add(name, _core.ArrowTable.concat(tbls))

    def _flush_pending(self) -> None:
        with self.lock:
            self._flush(self._pending, self._objects)
        self._pending, self._objects, self._pending_chunks = {}, set(), 0

    def _put(self, chunks) -> None:
        """Records handed over by the core: to the windows' store at the next flush, and to the
        watched paths' searches."""
        for name, tbl in chunks:
            if tbl.num_rows and name in INSTANCES:
                self._pending.setdefault(name, []).append(tbl)
        if self.paths:
            self.flows.add(chunks)
        self._pending_chunks += 1
        if self._pending_chunks >= PENDING_CHUNKS:
            self._flush_pending()

    def _threads_range(self, i: int) -> int | None:
        """The least first event (i=0) or the greatest last event (i=1) of the threads known."""
        if "threads" not in self._latest:
            return None
        got = [r[0] for r in _core.table_rows(self._latest["threads"], ["first_ts" if i == 0 else "last_ts"]) if r[0] is not None]
        return (min(got) if i == 0 else max(got)) if got else None

    def feed(self, chunk_dir: str, upto: int | None = None, after: list | None = None) -> None:
        """Reads one archived chunk (a trace directory); a live source's mini chunk only up
        to `upto`, and its stream files in `after` after their time (`_core.LiveModel.feed`)."""
        chunks, last, discarded, packets = self.model.feed([chunk_dir], upto, after)
        self._put(chunks)
        # The objects that changed (a few rows per object) replace the previous ones.
        changed = self.model.changed_objects()
        for name, tbl in changed:
            self._latest[name] = tbl
            self._objects.add(name)
        if self.paths:
            self.flows.objects(changed)
        self.lost_events += discarded
        self.lost_packets += packets
        if last is not None:
            if discarded or packets:
                self.lost_in_window.append((last, discarded))
            if self.first is None:
                self.first = self._threads_range(0)
            # a take still held (ROS 1: made when its callback starts, with its message's
            # earlier queueing time) keeps every window that would hold it waiting
            pending = self.model.pending_takes_since()
            self.complete_until = last - 2 * HOLD_NS if pending is None else min(last - 2 * HOLD_NS, pending)

    @property
    def events(self) -> int:
        """Events read so far (every event of every chunk)."""
        return self.model.events

    def close(self) -> None:
        """After the last chunk: everything the core still held."""
        self._put(self.model.close())
        if self.first is not None:
            self.complete_until = self._threads_range(1) + 1

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
        """The deadline misses of the flows that ended since the last check: the watched
        paths' flows of the outputs published since then are searched (over the records
        of the last `REACH_NS` before them: `roscope.live_flows`) and kept for the
        windows; the misses go to `on_alert` (a list) at once."""
        alerts: list[dict] = []
        if not self.paths or self.complete_until is None or self.first is None:
            return alerts
        since = self.checked_until if self.checked_until is not None else self.first
        if since < self.complete_until:
            alerts = self.flows.check(since, self.complete_until, self.first)
            if alerts and on_alert is not None:
                on_alert(alerts)
        self.checked_until = max(since, self.complete_until)  # the bound can step back (a take held)
        return alerts

    def windows(self, final: bool = False) -> list[dict]:
        """The windows now complete (`ready`), each with its statistics and its paths'
        entries (`take_windows`, then `window_stats_of`)."""
        return self.window_stats_of(self.take_windows(final))

    def take_windows(self, final: bool = False) -> dict | None:
        """What the windows now complete (`ready`) are computed from, or None: their
        bounds, their paths' entries (from the flows the checks found: `check` first),
        the records and objects not in the store yet, the lost events; the flows no
        later window counts leave. `window_stats_of` computes them, on another thread if
        need be: the store is its alone (`lock`)."""
        bounds = self.ready(final)
        if not bounds:   # nothing to show, and nothing more to prune than at the last window
            return None
        entries = self.flows.entries(bounds) if self.paths else {}
        keep = self.next_end - self.window_ns
        self.flows.prune(keep)
        job = {"bounds": bounds, "entries": entries, "keep": keep, "next_end": self.next_end,
               "records": self._pending, "objects": self._objects,
               "lost": (list(self.lost_in_window), self.lost_events, self.lost_packets)}
        self._pending, self._objects, self._pending_chunks = {}, set(), 0
        self.lost_in_window = [x for x in self.lost_in_window if x[0] >= keep]
        return job

    def window_stats_of(self, job: dict | None) -> list[dict]:
        """The windows of `take_windows`: their records into the store, each window's
        statistics (`window_stats`) with its paths' entries; then the records no later
        window counts leave (`prune`)."""
        if job is None:
            return []
        with self.lock:
            self._flush(job["records"], job["objects"])
            out = []
            for i, (lo, hi) in enumerate(job["bounds"]):
                w = self.window_stats(lo, hi, job["lost"])
                w["paths"] = [self._path_entry(job["entries"][k][i]) for k in sorted(job["entries"])]
                out.append(w)
            self.prune(job["keep"])
        return out

    @staticmethod
    def _path_entry(entry: dict) -> dict:
        """A path's entry in a window (`LiveFlows.entries`: per route, the latencies of its
        flows in the window) with p50/p99/max of each route's latencies as `path_stats`
        computes them over a window (DuckDB's exact percentiles: the core's
        `LiveStats.describe`)."""
        rows = []
        for r in entry["routes"]:
            d = _core.LiveStats.describe(r["latencies"])
            rows.append({"route": r["route"], "flows": r["flows"], "p50_ns": d["p50_ns"], "p99_ns": d["p99_ns"],
                         "max_ns": d["max_ns"], "misses": r["misses"]})
        return {"path": entry["path"], "deadline_ns": entry["deadline_ns"], "routes": rows}

    def window_stats(self, lo: int, hi: int, lost: tuple | None = None) -> dict:
        """The statistics of the window [lo, hi): per callback, per topic, lost events
        (`lost`: as `take_windows` saw them; else now) (and per watched path, filled by
        `window_stats_of`)."""
        callbacks, topics = stats.core_rows(self.store.window(lo, hi), hi - lo, hi - lo)
        lost_in_window, lost_events, lost_packets = lost or (self.lost_in_window, self.lost_events, self.lost_packets)
        return {
            "window": {"start_ns": lo, "end_ns": hi, "start_s": (lo - self.first) / 1e9, "end_s": (hi - self.first) / 1e9,
                       "stats_window": f"{_seconds(lo - self.first)}:{_seconds(hi - self.first)}"},
            "callbacks": callbacks,
            "topics": [t for t in topics if t["publications"] or t["takes"]],
            "lost_events": sum(n for t, n in lost_in_window if lo <= t < hi + 2 * HOLD_NS),
            "lost_events_total": lost_events,
            "packets_lost_total": lost_packets,
            "paths": [],
        }

    def prune(self, keep: int) -> None:
        """Forgets the records that start before `keep` (minus the hold: no later window
        counts them): memory bounded by the window."""
        self.store.prune(keep - 2 * HOLD_NS)


def _seconds(ns: int) -> str:
    """ns as exact decimal seconds (what `--window START:END` reads back exactly)."""
    sign = "-" if ns < 0 else ""
    ns = abs(int(ns))
    return f"{sign}{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"
