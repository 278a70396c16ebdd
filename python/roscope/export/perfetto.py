"""The execution model as a Perfetto trace (TrackEvent protobuf), for ui.perfetto.dev.

What is written (docs/report.md, "Perfetto export"):

- one process track per process instance and one thread track per thread, the
  thread named after the nodes whose callbacks ran on it (and "executor" when it
  has executor states);
- callback runs as slices on their thread's track (a run whose end was not
  traced is a slice that never ends);
- executor states (waiting, selecting, executing) as slices on a child track
  "executor states" of the thread;
- publications ("publish TOPIC") and takes ("take TOPIC") as instants on the
  thread that made them;
- one flow arrow per transport link (publication -> the callback run it fed, or
  the take when no run is known) and per causal link (the callback run that took
  the input -> the output publication);
- lost events (the tracer's discard reports) as slices on a "lost events" track
  per trace.

Timestamps are the trace's (CLOCK_MONOTONIC ns), written on Perfetto's default
clock. Packets are encoded column by column (roscope.export.protowire): no
Python object per event; `encode` writes them in chunks of bounded bytes, so that
an event with thousands of flow arrows (a timer run inferred to cause every later
publication) does not widen a whole chunk's matrices.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from roscope import files
from roscope.export import protowire as w

if TYPE_CHECKING:
    from roscope.database import Database

SEQ = 1  # the one trusted packet sequence of the file
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
# Track uuids: kind in the high bits, the model's id below.
PROCESS_TRACK, THREAD_TRACK, EXECUTOR_TRACK, LOST_TRACK = 1 << 40, 2 << 40, 3 << 40, 4 << 40
#: Packets encoded at once (bounds the encoder's matrices).
CHUNK = 200_000
#: ... and at most this many bytes of row matrices (rows as wide as the chunk's widest).
CHUNK_BYTES = 32 << 20
#: A packet's bytes besides its flow ids (timestamp, type, track, name, keys and
#: lengths: at most 11 + 2 + 11 + 11 + 11 + 11 + 4), and one flow id (a 2-byte key + fixed64).
_ROW_BYTES, _FLOW_ITEM = 64, 10
# Order of events at equal timestamps: ends of slices that lasted, begins
# (outer first), instants, ends of empty slices (inner first).
_END, _BEGIN, _INSTANT, _END_EMPTY = 0, 1, 2, 3


@dataclass
class Events:
    """Columns of the event packets, and the flows attached to them."""

    ts: list = field(default_factory=list)
    order: list = field(default_factory=list)  # _END/_BEGIN/... at equal ts
    depth: list = field(default_factory=list)
    type: list = field(default_factory=list)
    track: list = field(default_factory=list)
    name: list = field(default_factory=list)  # interned name id, 0 = none
    # flows: (event index, flow id) for flows starting / terminating at an event
    flow_ev: list = field(default_factory=list)
    flow_id: list = field(default_factory=list)
    term_ev: list = field(default_factory=list)
    term_id: list = field(default_factory=list)
    n: int = 0

    def add(self, ts, order, depth, typ, track, name) -> int:
        """Adds a block of events (arrays of one length); returns its first index."""
        ts = np.asarray(ts, np.int64)
        k = len(ts)
        first = self.n
        for col, v in ((self.ts, ts), (self.order, order), (self.depth, depth), (self.type, typ),
                       (self.track, track), (self.name, name)):
            col.append(np.broadcast_to(np.asarray(v, np.int64), (k,)))
        self.n += k
        return first

    def cols(self):
        cat = lambda x: np.concatenate(x) if x else np.zeros(0, np.int64)  # noqa: E731
        return {k: cat(getattr(self, k)) for k in ("ts", "order", "depth", "type", "track", "name",
                                                   "flow_ev", "flow_id", "term_ev", "term_id")}


class Names:
    """Interned event names: text -> iid (1, 2, ...)."""

    def __init__(self):
        self.ids: dict[str, int] = {}

    def iid(self, text: str) -> int:
        return self.ids.setdefault(text, len(self.ids) + 1)

    def iids(self, texts) -> np.ndarray:
        return np.array([self.iid(t) for t in texts], np.int64)


def _np(con, sql: str, params=None) -> dict:
    return {k: np.asarray(v) for k, v in con.execute(sql, params or []).fetchnumpy().items()}


# ---------------------------------------------------------------- tracks


def _track_packets(con) -> tuple[list[bytes], dict]:
    """Descriptor packets of processes, threads, executor and lost-event tracks."""
    procs = con.execute("""
        SELECT p.proc_id, p.pid, coalesce(p.procname, '?'), h.hostname,
               count(*) OVER (PARTITION BY p.pid) AS same_pid,
               row_number() OVER (PARTITION BY p.pid ORDER BY p.proc_id) - 1 AS nth,
               (SELECT count(*) FROM hosts) AS hosts
        FROM processes p JOIN hosts h USING (host_id) ORDER BY p.proc_id""").fetchall()
    out, pid_of, names = [], {}, {}
    for proc_id, pid, procname, host, same, nth, hosts in procs:
        # Perfetto keys processes by pid: a pid reused (or seen on two hosts) gets its own.
        pid_of[proc_id] = (int(pid) + (nth << 22)) if same > 1 else int(pid)
        name = procname + (f" @{host}" if hosts > 1 else "") + (f" (pid {pid}, #{nth + 1})" if same > 1 else "")
        names[PROCESS_TRACK + proc_id] = name
        desc = (w.field_varint(1, PROCESS_TRACK + proc_id)
                + w.field_bytes(3, w.field_varint(1, pid_of[proc_id]) + w.field_str(6, name)))
        out.append(_descriptor(desc))
    threads = con.execute("""
        SELECT t.thread_id, t.proc_id, t.tid,
               (SELECT string_agg(DISTINCT c.node, ', ' ORDER BY c.node) FROM callback_runs r
                  JOIN callbacks_info c USING (callback_id) WHERE r.thread_id = t.thread_id AND c.node IS NOT NULL),
               EXISTS (SELECT 1 FROM executor_states e WHERE e.thread_id = t.thread_id),
               (SELECT count(*) FROM callback_runs r WHERE r.thread_id = t.thread_id)
        FROM threads t ORDER BY t.thread_id""").fetchall()
    for thread_id, proc_id, tid, nodes, has_exec, runs in threads:
        name = thread_name(nodes, bool(has_exec), runs)
        names[THREAD_TRACK + thread_id] = name
        shift = pid_of[proc_id] - (pid_of[proc_id] & ((1 << 22) - 1))
        thread = w.field_varint(1, pid_of[proc_id]) + w.field_varint(2, int(tid) + shift) + w.field_str(5, name)
        out.append(_descriptor(w.field_varint(1, THREAD_TRACK + thread_id) + w.field_str(2, name) + w.field_bytes(4, thread)))
        if has_exec:
            names[EXECUTOR_TRACK + thread_id] = "executor states"
            out.append(_descriptor(w.field_varint(1, EXECUTOR_TRACK + thread_id) + w.field_str(2, "executor states")
                                   + w.field_varint(5, THREAD_TRACK + thread_id)))
    for trace_id, rel in con.execute("""SELECT trace_id, coalesce(rel, path) FROM traces
            WHERE trace_id IN (SELECT trace_id FROM lost) ORDER BY trace_id""").fetchall():
        name = f"lost events: {rel}"
        names[LOST_TRACK + trace_id] = name
        out.append(_descriptor(w.field_varint(1, LOST_TRACK + trace_id) + w.field_str(2, name)))
    return out, names


def thread_name(nodes: str | None, executor: bool, runs: int) -> str:
    """A thread track's name: the nodes whose callbacks ran on it, and 'executor'."""
    if nodes:
        return f"{nodes} · executor" if executor else nodes
    if executor:
        return "executor"
    return "callbacks" if runs else "thread"


def _descriptor(desc: bytes) -> bytes:
    return w.field_bytes(1, w.field_varint(10, SEQ) + w.field_bytes(60, desc))


# ---------------------------------------------------------------- events


def _callback_labels(con, names: Names) -> dict[int, int]:
    rows = con.execute("""
        SELECT callback_id, coalesce(node, procname, '?'), kind, topic, period_ns FROM callbacks_info""").fetchall()
    out = {}
    for cb, node, kind, topic, period in rows:
        what = topic if topic else (f"{period / 1e6:g} ms" if period else "")
        out[cb] = names.iid(f"{node} {kind} {what}".rstrip())
    return out


def _runs(con, ev: Events, names: Names) -> tuple[np.ndarray, np.ndarray]:
    """Callback runs as slices; returns (run ids, index of each run's begin event)."""
    labels = _callback_labels(con, names)
    r = _np(con, """SELECT run_id, callback_id, thread_id, start_ts, coalesce(end_ts, -1) AS end_ts,
                           coalesce(depth, 0) AS depth FROM callback_runs ORDER BY run_id""")
    lab = np.zeros(max(labels, default=-1) + 2, np.int64)
    for cb, iid in labels.items():
        lab[cb] = iid
    name = lab[r["callback_id"]]
    track = THREAD_TRACK + r["thread_id"]
    first = ev.add(r["start_ts"], _BEGIN, r["depth"], SLICE_BEGIN, track, name)
    done = r["end_ts"] >= 0
    empty = r["end_ts"][done] == r["start_ts"][done]
    ev.add(r["end_ts"][done], np.where(empty, _END_EMPTY, _END), -r["depth"][done], SLICE_END, track[done], 0)
    return r["run_id"], first + np.arange(len(r["run_id"]))


def _states(con, ev: Events, names: Names) -> None:
    s = _np(con, """SELECT thread_id, dense_rank() OVER (ORDER BY state) - 1 AS k, start_ts, end_ts FROM executor_states
                    WHERE end_ts IS NOT NULL ORDER BY thread_id, start_ts""")
    if not len(s["start_ts"]):
        return
    states = [r[0] for r in con.execute("SELECT DISTINCT state FROM executor_states WHERE end_ts IS NOT NULL ORDER BY 1").fetchall()]
    track = EXECUTOR_TRACK + s["thread_id"]
    name = names.iids([str(x) for x in states])[s["k"]]
    empty = s["end_ts"] == s["start_ts"]
    ev.add(s["start_ts"], _BEGIN, 0, SLICE_BEGIN, track, name)
    ev.add(s["end_ts"], np.where(empty, _END_EMPTY, _END), 0, SLICE_END, track, 0)


def _instants(con, ev: Events, names: Names, sql: str, verb: str) -> tuple[np.ndarray, np.ndarray]:
    """Instants named '<verb> <topic>'; returns (ids, event index of each)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _pf_instants AS {sql}")
    x = _np(con, "SELECT id, ts, thread_id, dense_rank() OVER (ORDER BY topic) - 1 AS k FROM _pf_instants ORDER BY id")
    topics = [r[0] for r in con.execute("SELECT DISTINCT topic FROM _pf_instants ORDER BY topic").fetchall()]
    con.execute("DROP TABLE _pf_instants")
    ids = x["id"]
    if not len(ids):
        return ids, ids
    name = names.iids([f"{verb} {t}" for t in topics])[x["k"]]
    first = ev.add(x["ts"], _INSTANT, 0, INSTANT, THREAD_TRACK + x["thread_id"], name)
    return ids, first + np.arange(len(ids))


def _lost(con, ev: Events, names: Names) -> None:
    x = _np(con, """SELECT trace_id, begin_ts, end_ts, events FROM lost
                    WHERE begin_ts IS NOT NULL AND end_ts IS NOT NULL ORDER BY trace_id, begin_ts""")
    if not len(x["trace_id"]):
        return
    track = LOST_TRACK + x["trace_id"]
    name = names.iids([f"{int(n):,} events lost" for n in x["events"]])
    empty = x["end_ts"] == x["begin_ts"]
    ev.add(x["begin_ts"], _BEGIN, 0, SLICE_BEGIN, track, name)
    ev.add(x["end_ts"], np.where(empty, _END_EMPTY, _END), 0, SLICE_END, track, 0)


def _index(ids: np.ndarray, index: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Event index of each id in `want` (-1 where it has no event); `ids` sorted."""
    if not len(ids):
        return np.full(len(want), -1, np.int64)
    pos = np.clip(np.searchsorted(ids, want), 0, len(ids) - 1)
    return np.where(ids[pos] == want, index[pos], -1)


def _flows(con, ev: Events, runs, pubs, takes, causal) -> dict[str, int]:
    """Flow arrows: one per transport link, one per causal link."""
    links = _np(con, """SELECT publication_id, coalesce(run_id, -1) AS run_id, coalesce(take_id, -1) AS take_id
                        FROM links ORDER BY publication_id, take_id, run_id""")
    src = _index(*pubs, links["publication_id"])
    dst = _index(*runs, links["run_id"])
    dst = np.where(dst >= 0, dst, _index(*takes, links["take_id"]))
    ok = (src >= 0) & (dst >= 0)
    n_transport = int(ok.sum())
    fid = np.arange(1, n_transport + 1, dtype=np.int64)
    ev.flow_ev.append(src[ok])
    ev.flow_id.append(fid)
    ev.term_ev.append(dst[ok])
    ev.term_id.append(fid)
    n_causal = 0
    if causal is not None and len(causal["in_run_id"]):
        src = _index(*runs, causal["in_run_id"])
        dst = _index(*pubs, causal["out_publication_id"])
        ok = (src >= 0) & (dst >= 0)
        n_causal = int(ok.sum())
        fid = np.arange(n_transport + 1, n_transport + n_causal + 1, dtype=np.int64)
        ev.flow_ev.append(src[ok])
        ev.flow_id.append(fid)
        ev.term_ev.append(dst[ok])
        ev.term_id.append(fid)
    return {"transport_flows": n_transport, "causal_flows": n_causal}


# ---------------------------------------------------------------- encoding


def _chunk_rows(fc: np.ndarray, tc: np.ndarray) -> int:
    """How many of the next rows (their flow and terminating-flow counts `fc`, `tc`) one
    chunk encodes: at most CHUNK, and at most CHUNK_BYTES of row matrices. Every row of a
    chunk is as wide as its widest (the pieces are matrices): one run with hundreds of
    causal arrows would otherwise make 200,000 rows hundreds of items wide (issue 30: 6.5 GB
    for a 99k-event trace)."""
    width = _ROW_BYTES + _FLOW_ITEM * (np.maximum.accumulate(fc) + np.maximum.accumulate(tc))
    cost = width * np.arange(1, len(fc) + 1, dtype=np.int64)
    return max(1, int(np.searchsorted(cost, CHUNK_BYTES, side="right")))


def encode(cols: dict, out) -> int:
    """Writes the event packets in time order, a chunk at a time (`_chunk_rows`); returns
    their count. The bytes do not depend on where the chunks end."""
    n = len(cols["ts"])
    order = np.lexsort((cols["depth"], cols["order"], cols["ts"]))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    # flows by the new position of their event
    fpos, fval = rank[cols["flow_ev"]], cols["flow_id"]
    tpos, tval = rank[cols["term_ev"]], cols["term_id"]
    fo, to = np.argsort(fpos, kind="stable"), np.argsort(tpos, kind="stable")
    fpos, fval, tpos, tval = fpos[fo], fval[fo], tpos[to], tval[to]
    fcount, tcount = np.bincount(fpos, minlength=n), np.bincount(tpos, minlength=n)
    lo = 0
    while lo < n:
        k = _chunk_rows(fcount[lo:lo + CHUNK], tcount[lo:lo + CHUNK])
        idx = order[lo:lo + k]
        fc, tc = fcount[lo:lo + k], tcount[lo:lo + k]
        fv = fval[np.searchsorted(fpos, lo):np.searchsorted(fpos, lo + k)]
        tv = tval[np.searchsorted(tpos, lo):np.searchsorted(tpos, lo + k)]
        name = cols["name"][idx]
        track_event = [
            w.field_varints(9, cols["type"][idx]),
            w.field_varints(11, cols["track"][idx]),
            w.field_varints(10, name, present=name > 0),
            w.repeated_fixed64(47, fc, fv),
            w.repeated_fixed64(48, tc, tv),
        ]
        packet = [
            w.field_varints(8, cols["ts"][idx]),
            *w.message_pieces(11, track_event),
            w.const(w.field_varint(10, SEQ) + w.field_varint(13, SEQ_NEEDS_INCREMENTAL_STATE), k),
        ]
        out.write(w.flatten(w.concat(w.message_pieces(1, packet))))
        lo += k
    return n


def _interned(names: Names) -> bytes:
    body = b"".join(w.field_bytes(2, w.field_varint(1, i) + w.field_str(2, t)) for t, i in names.ids.items())
    return w.field_bytes(1, w.field_varint(10, SEQ) + w.field_varint(13, SEQ_INCREMENTAL_STATE_CLEARED)
                         + w.field_bytes(12, body))


def export(db: Database, out_path: str, *, causal=None, force: bool = False, inputs=()) -> dict:
    """Writes `db`'s model to `out_path` as a Perfetto trace (by roscope.files' rules:
    a new temporary file renamed at the end; never a file unless `force`, never
    anything but a regular file, never one of `inputs`). `causal`: the causal links to draw, a
    dict of arrays `in_run_id`, `out_publication_id` (None: none). Returns counts."""
    files.check(out_path, force=force, inputs=inputs, what="Perfetto file")
    con = db.con
    names = Names()
    descriptors, track_names = _track_packets(con)
    ev = Events()
    runs = _runs(con, ev, names)
    _states(con, ev, names)
    pubs = _instants(con, ev, names, """
        SELECT pb.publication_id AS id, coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS ts, pb.thread_id,
               coalesce(pu.name, '?') AS topic
        FROM publications pb LEFT JOIN publishers pu USING (publisher_id)
        WHERE pb.thread_id IS NOT NULL ORDER BY pb.publication_id""", "publish")
    takes = _instants(con, ev, names, """
        SELECT t.take_id AS id, t.ts, t.thread_id, coalesce(s.name, '?') AS topic
        FROM takes t LEFT JOIN subscriptions s USING (subscription_id)
        WHERE t.taken = 1 AND t.thread_id IS NOT NULL ORDER BY t.take_id""", "take")
    _lost(con, ev, names)
    counts = _flows(con, ev, runs, pubs, takes, causal)
    with files.open_output(out_path, force=force, inputs=inputs) as f:
        f.write(_interned(names))
        f.write(b"".join(descriptors))
        counts["packets"] = encode(ev.cols(), f) + len(descriptors) + 1
    counts.update({"tracks": len(track_names), "slices": int(len(runs[0])), "publications": int(len(pubs[0])),
                   "takes": int(len(takes[0])), "bytes": os.path.getsize(out_path)})
    return counts
