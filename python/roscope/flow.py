"""Message flows and end-to-end latency over the execution database (docs/analyses.md).

- `causal_links(db)`: direct, annotated (periodic asynchronous, partial
  synchronous) and inferred causal links between messages;
- `message_graph(db, publication_id)`: one message's flow, forward and backward;
- `data_flows(db, from_regex, to_regex)`: data flows from input to output topics
  (data-flow paper, Algorithm 1), grouped into paths, with the latency of each
  split into communication, idle and computation; `path_stats(db)` and
  `component_stats(db)` summarize them.

The algorithms run in Rust (`crates/flow`), fed with the model's tables as Arrow
data. Results are returned (pyarrow Tables) and made visible to SQL on the
database's connection under their table names (`causal_links`, `data_flows`,
`data_flow_steps`, `data_flow_segments`, `paths`) without writing into the
database; with `store=True` they are stored as tables in it (the database must be
open for writing: `roscope.open(path, read_only=False)`).

The executor analyses moved to `roscope.executor`.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from roscope import _core, statistics
from roscope.deps.matching import trace_edges
from roscope.deps.matching import warnings as deps_warnings
from roscope.errors import InputError
from roscope.overlaps import overlapping_runs
from roscope.results import Appender, publish
from roscope.trace import table_from_core

#: Intra-node dependency modes of `data_flows(implicit=...)`.
IMPLICIT_MODES = ("auto", "all", "annotations", "none")
#: Which callback pairs of an undescribed node get a fallback edge under 'auto'
#: (docs/analyses.md): every timer/subscription pair; the same but for two callbacks
#: that each publish in most of their runs (two pipelines: the default, chosen by
#: the precision and recall measured in bench/flow_truth.py); or only subscriptions
#: into timers.
FALLBACK_RULES = ("pairs", "pipelines", "timers")
FALLBACK_RULE = "pipelines"
#: What `data_flows(uncertain=...)` does with flows a race makes uncertain.
UNCERTAIN_MODES = ("keep", "drop")
#: The latency parts of a data flow, columns of `data_flows` (ns).
COMPONENTS = ("latency", "communication", "idle", "computation")


@dataclass
class FlowContext:
    """The flow's model, read once from a database; pass it to several analyses."""

    model: _core.FlowModel

    @property
    def topics(self) -> list[str]:
        return self.model.topics


def context(db) -> FlowContext:
    """Reads the tables and columns the flow needs (`_core.FlowModel.inputs()`) out of
    the database as Arrow data, and builds the flow's model from them in Rust."""
    def read(name: str, cols: list[str]):
        # An Arrow stream of the columns; the core reads it to the end before the next.
        return db.con.table(name).select(*cols).arrow()

    return FlowContext(_core.FlowModel(read))


def _pub_ts(alias: str = "") -> str:
    """SQL: a publication's time as the flow reads it (crates/flow input.rs): its
    earliest layer's (rclcpp, rcl, rmw), else the first event's; `_pub_ts("p.")`
    with an alias."""
    return f"coalesce({alias}rclcpp_ts, {alias}rcl_ts, {alias}rmw_ts, {alias}ts)"


#: A publication's run, and a link's publication, in a slice's ids (see `_SLICE_SQL`).
_RUN_OF_PUB = "CASE WHEN p.run_id >= $c AND p.run_id < $d THEN p.run_id - $c ELSE xr.local END"
_PUB_OF_LINK = ("CASE WHEN l.publication_id >= $a AND l.publication_id < $b THEN l.publication_id - $a "
                "ELSE xp.local END")
#: The instance tables a slice of the flow's model holds part of (docs/analyses.md,
#: "Slices"), read with the slice's ids: its publications are `$a`..`$b` (ids rebased
#: to start at 0) then the extra ones of `_roscope_slice_xp` (publication_id, local id),
#: its runs `$c`..`$d` then those of `_roscope_slice_xr` (run_id, local id); a
#: reference out of the slice is null.
_SLICE_SQL = {
    "callback_runs": """
        SELECT run_id - $c AS run_id, callback_id, start_ts, end_ts FROM callback_runs WHERE run_id >= $c AND run_id < $d
        UNION ALL
        SELECT x.local, r.callback_id, r.start_ts, r.end_ts FROM callback_runs r JOIN _roscope_slice_xr x USING (run_id)""",
    "publications": f"""
        SELECT p.publication_id - $a AS publication_id, p.publisher_id, {_RUN_OF_PUB} AS run_id,
               p.ts, p.rclcpp_ts, p.rcl_ts, p.rmw_ts
        FROM publications p LEFT JOIN _roscope_slice_xr xr ON xr.run_id = p.run_id
        WHERE p.publication_id >= $a AND p.publication_id < $b
        UNION ALL
        SELECT xp.local, p.publisher_id, {_RUN_OF_PUB}, p.ts, p.rclcpp_ts, p.rcl_ts, p.rmw_ts
        FROM publications p JOIN _roscope_slice_xp xp USING (publication_id)
        LEFT JOIN _roscope_slice_xr xr ON xr.run_id = p.run_id""",
    "links": f"""
        SELECT * FROM (
            SELECT {_PUB_OF_LINK} AS publication_id, l.run_id - $c AS run_id
            FROM links l LEFT JOIN _roscope_slice_xp xp ON xp.publication_id = l.publication_id
            WHERE l.run_id >= $c AND l.run_id < $d
            UNION ALL
            SELECT {_PUB_OF_LINK}, xr.local
            FROM links l JOIN _roscope_slice_xr xr ON xr.run_id = l.run_id
            LEFT JOIN _roscope_slice_xp xp ON xp.publication_id = l.publication_id
        ) WHERE publication_id IS NOT NULL""",
}


def _slice_model(db, a: int, b: int, c: int, d: int, xp=(), xr=(), statics: dict | None = None) -> _core.FlowModel:
    """The flow's model of publications a..b then `xp`, and runs c..d then `xr`
    (ids rebased to 0, in that order); the other tables whole, read once into
    `statics` when given (they are the same in every slice). `a == b and c == d`
    and no extras: no instances (callbacks and topics only)."""
    import pyarrow as pa

    bounds = {"a": a, "b": b, "c": c, "d": d}

    def extra(ids, col: str, first: int):
        return pa.table({col: pa.array(ids, pa.int64()), "local": pa.array(range(first, first + len(ids)), pa.int64())})

    db.con.register("_roscope_slice_xp", extra(list(xp), "publication_id", b - a))
    db.con.register("_roscope_slice_xr", extra(list(xr), "run_id", d - c))

    def read(name: str, cols: list[str]):
        sql = _SLICE_SQL.get(name)
        if sql is None and statics is not None:
            if name not in statics:
                statics[name] = db.con.table(name).select(*cols).to_arrow_table()
            return statics[name]
        if sql is None:
            return db.con.table(name).select(*cols).arrow()
        return db.con.sql(sql, params={k: v for k, v in bounds.items() if f"${k}" in sql}).to_arrow_table()

    try:
        return _core.FlowModel(read)
    finally:
        db.con.unregister("_roscope_slice_xp")
        db.con.unregister("_roscope_slice_xr")


#: A database with more publications than this has its data-flow search run over
#: slices of the model, this many publications each (docs/analyses.md, "Slices"):
#: about a quarter of a million events of trace (bench/scale.py measures the memory it
#: leads to; on 10M events 50,000 peaked 30 MiB higher, 12,500 15 MiB lower, in the same time).
SLICE_PUBLICATIONS = 25_000
#: DuckDB's budget for `roscope flow` (bytes; `--memory`): with slices, DuckDB's
#: buffers for the result tables are most of what the flow holds.
FLOW_MEMORY = 128 << 20
#: How far before (and after) its outputs a slice reaches at first (ns); doubled
#: whenever an output's flows reach further.
SLICE_REACH_NS = 200_000_000
#: The ids of the whole model (`_core.FlowSearch.run`: the identity `roscope_flow::IdMap`).
_WHOLE_IDS = (0, 2**63 - 1, [], 0, 2**63 - 1, [])
#: What `_over_slices` says of a search over the whole model.
_ONE_SLICE = {"count": 1, "restarts": 0, "answered_from_database": 0, "reach_ns": None, "peak_instances": None,
              "publications_per_slice": None}
#: Ids per block of the summaries that choose a slice's id ranges.
#: At most this many, and about a quarter of a slice.
_BLOCK = 4096
_MIN, _MAX = -(2**63), 2**63 - 1


class _Blocks:
    """Per block of `block` ids, what choosing a slice's id ranges needs: the times
    of the publications (their earliest layer's, as the flow reads them) and runs
    (start), the runs the publications were made in, the publications linked to the
    runs. Read once, a few values per block."""

    def __init__(self, db, block: int):
        import numpy as np

        self.block = block

        def floats(x):
            # nulls (a publication outside any run) as NaN, never as a made-up value
            if isinstance(x, np.ma.MaskedArray):
                return x.astype(np.float64).filled(np.nan)
            return np.asarray(x, dtype=np.float64)

        def cols(sql: str, n: int) -> list:
            rows = db.con.execute(sql, [block]).fetchnumpy()
            return [floats(rows[k]) for k in list(rows)[:n]]

        self.n_pubs = db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0]
        self.n_runs = db.con.execute("SELECT count(*) FROM callback_runs").fetchall()[0][0]
        self.pb_min, self.pb_max, self.pb_run_min, self.pb_run_max = cols(
            f"SELECT min({_pub_ts()}), max({_pub_ts()}), "
            "min(run_id), max(run_id) FROM publications GROUP BY publication_id // $1 ORDER BY publication_id // $1", 4)
        self.run_min, self.run_max = cols(
            "SELECT min(start_ts), max(start_ts) FROM callback_runs GROUP BY run_id // $1 ORDER BY run_id // $1", 2)
        n_rb = len(self.run_min)
        self.lk_min, self.lk_max = np.full(n_rb, np.inf), np.full(n_rb, -np.inf)
        rows = db.con.execute("SELECT run_id // $1 AS k, min(publication_id), max(publication_id) FROM links "
                              "WHERE run_id IS NOT NULL AND publication_id IS NOT NULL GROUP BY k", [block]).fetchnumpy()
        k = np.asarray(rows["k"], dtype=np.int64)
        vals = list(rows.values())
        self.lk_min[k], self.lk_max[k] = floats(vals[1]), floats(vals[2])
        times = [x for x in (self.pb_min, self.run_min) if len(x)]
        self.t_min = int(min(np.nanmin(x) for x in times)) if times else 0
        self.t_max = int(max(np.nanmax(x) for x in (self.pb_max, self.run_max) if len(x))) if times else 0

    def end_of_slice(self, t_a: int, per_slice: int) -> int:
        """Where a slice whose outputs start at `t_a` ends, so that it holds about
        `per_slice` publications (`_MAX`: at the end of the trace). By count, not by
        time: a trace may be dense in places and empty in others (two recordings
        loaded together)."""
        import numpy as np

        i = np.flatnonzero(self.pb_max >= t_a)
        j = (int(i[0]) if len(i) else len(self.pb_max)) + max(1, -(-per_slice // self.block))
        if j >= len(self.pb_min):
            return _MAX
        return max(t_a + 1, int(self.pb_min[j]))

    def ranges(self, lo: int, hi: int) -> tuple[int, int, int, int]:
        """Publications a..b and runs c..d that hold every publication and run whose
        time is in [lo, hi), and what each of those references (ids in blocks: a few
        more)."""
        import numpy as np

        B = self.block

        def first(mask) -> int | None:
            i = np.flatnonzero(mask)
            return int(i[0]) if len(i) else None

        def last(mask) -> int | None:
            i = np.flatnonzero(mask)
            return int(i[-1]) if len(i) else None

        def nmin(x) -> float:
            x = x[np.isfinite(x)]
            return float(x.min()) if len(x) else np.inf

        def nmax(x) -> float:
            x = x[np.isfinite(x)]
            return float(x.max()) if len(x) else -1.0

        pb_in, run_in = self.pb_max >= lo, self.run_max >= lo
        pf, rf = first(pb_in), first(run_in)
        a = min(pf * B if pf is not None else self.n_pubs, nmin(self.lk_min[: len(run_in)][run_in]))
        c = min(rf * B if rf is not None else self.n_runs, nmin(self.pb_run_min[pb_in]))
        pl, rl = last(self.pb_min < hi), last(self.run_min < hi)
        b = (pl + 1) * B if pl is not None else 0
        d = (rl + 1) * B if rl is not None else 0
        a, c = int(a), int(c)
        b = max(b, int(nmax(self.lk_max[c // B:max(d, c) // B + 1])) + 1)
        d = max(d, int(nmax(self.pb_run_max[a // B:max(b, a) // B + 1])) + 1)
        return a, min(b, self.n_pubs), c, min(d, self.n_runs)


def _facts(db) -> tuple[list, list]:
    """What the implicit-edge rules read from the whole trace (`_core.FlowSearch`):
    per callback, its runs and the runs in which it published; the (publisher,
    callback) pairs of runs that published on a publisher."""
    # A run published if its id is among the publications' (a semi join: DuckDB's DISTINCT
    # over 10M publications' run ids needed more than 64 MiB on 144M events, and at times
    # more than flow's 128 MiB; this fits 32 MiB).
    runs = db.con.execute("""
        SELECT callback_id, count(*),
               count(*) FILTER (WHERE run_id IN (SELECT run_id FROM publications WHERE run_id IS NOT NULL))
        FROM callback_runs WHERE callback_id IS NOT NULL GROUP BY callback_id""").fetchall()
    pairs = db.con.execute("""
        SELECT DISTINCT p.publisher_id, r.callback_id FROM publications p JOIN callback_runs r USING (run_id)
        WHERE p.publisher_id IS NOT NULL AND r.callback_id IS NOT NULL""").fetchall()
    return runs, pairs


class _Anchors:
    """Per callback its latest run, per publisher its latest publication, before the
    time up to which slices have been folded in (`fold`): they give a slice's
    horizons (`roscope_flow::Window`: a callback that ran once at the start is still
    found) and the instances it holds besides its id ranges."""

    _RUNS = """
        SELECT callback_id, max(struct_pack(s := start_ts, r := run_id)) FROM callback_runs
        WHERE run_id >= $lo_id AND run_id < $hi_id AND start_ts >= $since AND start_ts < $upto
          AND callback_id IS NOT NULL GROUP BY callback_id"""
    _PUBS = f"""
        SELECT publisher_id, max(struct_pack(s := {_pub_ts()}, r := publication_id))
        FROM publications
        WHERE publication_id >= $lo_id AND publication_id < $hi_id AND publisher_id IS NOT NULL
          AND {_pub_ts()} >= $since AND {_pub_ts()} < $upto
        GROUP BY publisher_id"""

    def __init__(self, db):
        self.db = db
        self.n_cb = db.con.execute("SELECT count(*) FROM callbacks").fetchall()[0][0]
        self.n_pu = db.con.execute("SELECT count(*) FROM publishers").fetchall()[0][0]
        self.upto = _MIN
        self.run: dict[int, tuple[int, int]] = {}
        self.pub: dict[int, tuple[int, int]] = {}

    def fold(self, ranges: tuple[int, int, int, int], upto: int) -> None:
        """Folds in the publications and runs of `ranges` (a slice's: a..b, c..d) from
        the time folded so far up to `upto`; the slice held all of that time."""
        if upto <= self.upto:
            return
        a, b, c, d = ranges
        for sql, lo_id, hi_id, into in ((self._RUNS, c, d, self.run), (self._PUBS, a, b, self.pub)):
            params = {"lo_id": lo_id, "hi_id": hi_id, "since": self.upto, "upto": upto}
            for key, latest in self.db.con.execute(sql, params).fetchall():
                v = (latest["s"], latest["r"])
                if v > into.get(key, (_MIN, _MIN)):
                    into[key] = v
        self.upto = upto

    def horizons(self, lo: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """For a slice from `lo`: the horizon of each callback and each publisher, and
        the runs and publications before `lo` the slice must hold for them."""
        def one(n: int, latest: dict) -> tuple[list[int], list[int]]:
            out, extra = [], []
            for key in range(n):
                v = latest.get(key)
                if v is None:  # none before (everything before `lo` was folded in)
                    out.append(_MIN)
                elif v[0] < lo:
                    out.append(v[0])
                    extra.append(v[1])
                else:  # a slice searched again from further back: not known before `lo`
                    out.append(lo)
            return out, extra

        lo_cb, runs = one(self.n_cb, self.run)
        lo_pub, pubs = one(self.n_pu, self.pub)
        return lo_cb, lo_pub, runs, pubs


def _linked_publications(db, runs) -> list[int]:
    """The publications whose transport links fed `runs`."""
    return [r[0] for r in db.con.execute(
        "SELECT DISTINCT publication_id FROM links WHERE run_id IN (SELECT unnest($1::BIGINT[]))", [list(runs)]).fetchall()]


def _runs_of(db, pubs) -> list[int]:
    """The runs in which `pubs` were published."""
    return [r[0] for r in db.con.execute(
        "SELECT DISTINCT run_id FROM publications WHERE publication_id IN (SELECT unnest($1::BIGINT[])) "
        "AND run_id IS NOT NULL", [list(pubs)]).fetchall()]


def _extras(db, ranges, runs: list[int], pubs: list[int]) -> tuple[list[int], list[int]]:
    """The runs and publications a slice with id ranges `ranges` holds besides them:
    `runs` and `pubs` (its anchors), the publications linked to those runs and the
    runs of those publications; none of them in the ranges."""
    a, b, c, d = ranges
    xr = sorted({r for r in (*runs, *_runs_of(db, pubs)) if not c <= r < d})
    xp = sorted({p for p in (*pubs, *_linked_publications(db, runs)) if not a <= p < b})
    return xr, xp


class _History:
    """What slices lacked (`_core.FlowSearch.run`'s needs, `roscope_flow::Need`),
    answered from the whole database: the latest completed run of a callback before
    a time, the newest publication on a topic before a time, a node's references.
    The answers and the instances they name go into every later slice, up to
    `CAP` instances (then they are dropped and asked again when needed)."""

    CAP = 100_000
    _RUN_BEFORE = """
        SELECT run_id FROM callback_runs
        WHERE callback_id = $cb AND start_ts < $t AND end_ts >= 0 AND end_ts <= $t
        ORDER BY start_ts DESC, run_id DESC LIMIT 1"""
    _NEWEST_BEFORE = f"""
        SELECT p.publication_id FROM publications p JOIN publishers u USING (publisher_id)
        WHERE u.name = $topic AND {_pub_ts("p.")} < $t
        ORDER BY {_pub_ts("p.")} DESC, p.publisher_id, p.publication_id DESC LIMIT 1"""

    def __init__(self, db, topics: list[str]):
        self.db, self.topics = db, topics
        self.clear()

    def clear(self) -> None:
        self.runs_before: dict[tuple[int, int], int] = {}
        self.newest_before: dict[tuple[int, int], int] = {}
        self.complete_runs: set[int] = set()
        self.complete_pubs: set[int] = set()
        self.runs: set[int] = set()
        self.pubs: set[int] = set()

    def _one(self, sql: str, params: dict) -> int:
        rows = self.db.con.execute(sql, params).fetchall()
        return rows[0][0] if rows else -1

    def answer(self, needs) -> bool:
        """Answers `needs`; False when none of them was new (the slice must reach
        further instead)."""
        new_runs = [y for kind, x, y in needs if kind == "node" and x == 0 and y not in self.complete_runs]
        new_pubs = [y for kind, x, y in needs if kind == "node" and x == 1 and y not in self.complete_pubs]
        new = bool(new_runs or new_pubs)
        if new_runs:
            self.complete_runs.update(new_runs)
            self.runs.update(new_runs)
            self.pubs.update(_linked_publications(self.db, new_runs))
        if new_pubs:
            self.complete_pubs.update(new_pubs)
            self.pubs.update(new_pubs)
            self.runs.update(_runs_of(self.db, new_pubs))
        for kind, x, y in needs:
            if kind == "run_before" and (x, y) not in self.runs_before:
                r = self.runs_before[(x, y)] = self._one(self._RUN_BEFORE, {"cb": x, "t": y})
                self.runs.update([r] if r >= 0 else [])
                new = True
            elif kind == "newest_before" and (x, y) not in self.newest_before:
                p = self.newest_before[(x, y)] = self._one(self._NEWEST_BEFORE, {"topic": self.topics[x], "t": y})
                self.pubs.update([p] if p >= 0 else [])
                new = True
        if len(self.runs) + len(self.pubs) > self.CAP:
            self.clear()
        return new

    def answers(self, ranges, xr: list[int], xp: list[int]):
        """The answers in the ids of a slice with id ranges `ranges` and extra runs
        `xr` and publications `xp` (which hold `self.runs` and `self.pubs`)."""
        a, b, c, d = ranges
        run_at = {g: (d - c) + i for i, g in enumerate(xr)}
        pub_at = {g: (b - a) + i for i, g in enumerate(xp)}

        def run(g: int) -> int:
            return -1 if g < 0 else g - c if c <= g < d else run_at[g]

        def pub(g: int) -> int:
            return -1 if g < 0 else g - a if a <= g < b else pub_at[g]

        return ([(k[0], k[1], run(v)) for k, v in self.runs_before.items()],
                [(k[0], k[1], pub(v)) for k, v in self.newest_before.items()],
                [run(g) for g in self.complete_runs], [pub(g) for g in self.complete_pubs])


#: Searches of one output over slices with answers from the database (`_History`)
#: before the slice reaches further instead.
_ANSWER_ROUNDS = 32


def _over_slices(db, run, per_slice: int, reach_ns: int, history: _History | None = None, stopped=None) -> dict:
    """Calls `run(model, ids, window, answers)` (`_core.FlowSearch.run`,
    `_core.CausalSearch.run`) over slices of the model in output time order: each
    slice holds its outputs' time span and `reach` before and after it, and the
    latest run of each callback and publication of each publisher before that
    (`_Anchors`). When what an output needs reaches beyond its slice (`run` returns
    that output, and with `history` what the slice lacked), the search goes on from
    that output: with those needs answered from the database (`_History`) while
    that brings something new, else with twice the reach. When `stopped()` says the
    search is over (a cap), the slices end: "rest_from" is the time from which no
    output was handed to `run`. Returns what the slicing did."""
    bl = _Blocks(db, min(_BLOCK, max(16, per_slice // 4)))
    anchors = _Anchors(db)
    out_from, reach, n, restarts, peak, prev = (_MIN, _MIN), reach_ns, 0, 0, 0, None
    statics: dict = {}
    rounds, answered = 0, 0
    while True:
        t_a = bl.t_min if out_from[0] == _MIN else out_from[0]
        out_to = bl.end_of_slice(t_a, per_slice)
        lo = _MIN if out_from[0] == _MIN or out_from[0] - reach <= bl.t_min else out_from[0] - reach
        hi = _MAX if out_to == _MAX or out_to + reach > bl.t_max else out_to + reach
        a, b, c, d = bl.ranges(lo, hi)
        if lo == _MIN:
            a = c = 0
        if hi == _MAX:
            b, d = bl.n_pubs, bl.n_runs
        lo_cb, lo_pub, xr, xp = [], [], [], []
        if lo != _MIN:
            if prev is not None:
                anchors.fold(prev, lo)
            lo_cb, lo_pub, runs, pubs = anchors.horizons(lo)
            xr, xp = _extras(db, (a, b, c, d), runs, pubs)
            if history is not None:
                xr = sorted(set(xr) | {r for r in history.runs if not c <= r < d})
                xp = sorted(set(xp) | {p for p in history.pubs if not a <= p < b})
        model = _slice_model(db, a, b, c, d, xp, xr, statics)
        local_from = out_from if out_from[1] == _MIN else (out_from[0], out_from[1] - a)
        answers = history.answers((a, b, c, d), xr, xp) if history is not None and lo != _MIN else None
        uncertain = run(model, (a, b - a, xp, c, d - c, xr), (lo, hi, *local_from, out_to, lo_cb, lo_pub), answers)
        del model
        n += 1
        prev = (a, b, c, d)
        peak = max(peak, (b - a) + (d - c) + len(xp) + len(xr))
        if uncertain is not None:
            if (lo, hi) == (_MIN, _MAX):
                raise RuntimeError("the data-flow search over the whole model found flows beyond it")
            restarts += 1
            rounds = rounds + 1 if tuple(uncertain[:2]) == out_from else 1
            needs = uncertain[2] if len(uncertain) > 2 else []
            if history is not None and rounds <= _ANSWER_ROUNDS and needs and history.answer(needs):
                answered += 1
            else:
                reach *= 2
            out_from = tuple(uncertain[:2])
            continue
        if out_to == _MAX or (stopped is not None and stopped()):
            break
        out_from = (out_to, _MIN)
    return {"count": n, "restarts": restarts, "answered_from_database": answered, "reach_ns": reach,
            "peak_instances": peak, "publications_per_slice": per_slice, "rest_from": None if out_to == _MAX else out_to}


def sliced(db, slice_publications: int | None = None) -> bool:
    """Whether the data-flow search and causal links run over slices of the model
    (a database with more than `slice_publications`, default `SLICE_PUBLICATIONS`,
    publications) rather than over the whole model (`context`)."""
    n = slice_publications or SLICE_PUBLICATIONS
    return db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0] > n


def causal_links(db, ctx: FlowContext | None = None, infer: bool = True, *, store: bool = False):
    """Every causal link: a pyarrow Table (in_publication_id, in_run_id,
    out_publication_id, kind), also visible to SQL as `causal_links`. The table is
    in memory whole: on a long trace, `causal_link_table` keeps it in the database."""
    ctx = ctx or context(db)
    t = table_from_core(ctx.model.causal_links(infer))
    publish(db, {"causal_links": t}, store)
    return t


def causal_link_table(db, infer: bool = True, *, store: bool = False,
                      slice_publications: int | None = SLICE_PUBLICATIONS, reach_ns: int = SLICE_REACH_NS) -> dict:
    """Every causal link, made visible to SQL as `causal_links` (a temporary view of
    the connection over the scratch file, `results.Appender`, or a stored table with `store`) and never held whole: over slices
    of the model on a database with more than `slice_publications` publications (as
    `data_flows`). Returns {"links": count, "slices": what the slicing did}."""
    with Appender(db, ["causal_links"], store) as out:
        search = _core.CausalSearch(infer)

        def run(model, ids, window, _answers=None):
            links, uncertain = search.run(model, ids, window)
            out.append("causal_links", table_from_core(links))
            return uncertain

        if slice_publications is not None and sliced(db, slice_publications):
            slices = _over_slices(db, run, slice_publications, reach_ns)
            slices.pop("rest_from")
        else:
            run(context(db).model, _WHOLE_IDS, None)
            slices = dict(_ONE_SLICE)
    n = db.con.execute("SELECT count(*) FROM causal_links").fetchall()[0][0]
    return {"links": n, "slices": slices}


def message_graph(db, publication_id: int, ctx: FlowContext | None = None, forward=True, backward=True, *,
                  slice_publications: int | None = SLICE_PUBLICATIONS) -> dict:
    """One message's flow graph: publications and callback runs reached from
    `publication_id` forward and backward, the edges between them ("p<id>" /
    "r<id>"), and what each node is. With `ctx`, or on a database of at most
    `slice_publications` publications, over the flow's model in memory; else
    over the database (the causal links made over slices, `causal_link_table`,
    then the graph walked in SQL, `_graph_in_database`): the same graph in
    memory that does not grow with the trace."""
    n_pubs = db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0]
    if not 0 <= int(publication_id) < n_pubs:
        raise InputError(f"--message {publication_id}: no publication {publication_id}")
    if ctx is None and slice_publications is not None and sliced(db, slice_publications):
        causal_link_table(db, slice_publications=slice_publications)
        pubs, runs, edges = _graph_in_database(db, int(publication_id), forward, backward)
    else:
        ctx = ctx or context(db)
        try:
            pubs, runs, edges = ctx.model.message_graph(int(publication_id), forward, backward)
        except ValueError as exc:
            raise InputError(f"--message {publication_id}: {exc}") from None
    info = {}
    for r in db.records("SELECT publication_id, topic, publish_ts FROM publications_info "
                        "WHERE publication_id IN (SELECT unnest(?::BIGINT[]))", [pubs]):
        info[f"p{r['publication_id']}"] = r
    for r in db.records("SELECT r.run_id, r.start_ts, r.end_ts, c.node, c.kind, c.topic FROM callback_runs r "
                        "JOIN callbacks_info c USING (callback_id) WHERE r.run_id IN (SELECT unnest(?::BIGINT[]))", [runs]):
        info[f"r{r['run_id']}"] = r
    return {"publication_id": publication_id, "publications": pubs, "runs": runs,
            "edges": [{"from": f"{a}{x}", "to": f"{b}{y}", "kind": k} for a, x, b, y, k in edges],
            "nodes": info}


#: SQL of `_graph_in_database`, over the publications `$f` of a walk's frontier.
#: A node's own reception of its message is not a flow segment (crates/flow
#: graph.rs): `_OTHER_NODE` keeps a run unless its node is known and is the
#: publication's.
_FRONTIER = """
    WITH f AS (SELECT p.publication_id AS p, p.run_id AS run_of_p, u.node_id AS node
               FROM publications p LEFT JOIN publishers u USING (publisher_id)
               WHERE p.publication_id IN (SELECT unnest($f::BIGINT[])))"""
_NODE_OF_RUN = "(SELECT c.node_id FROM callback_runs cr JOIN callbacks c USING (callback_id) WHERE cr.run_id = {run})"
_OTHER_NODE = "NOT coalesce({run_node} = {pub_node}, false)"
_GRAPH_SQL = {
    # forward: the runs that took a frontier message, and the messages it caused
    "transport": _FRONTIER + f"""
        SELECT DISTINCT f.p, l.run_id FROM f JOIN links l ON l.publication_id = f.p
        WHERE l.run_id IS NOT NULL AND {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="l.run_id"),
                                                             pub_node="f.node")}""",
    "caused": _FRONTIER + f"""
        SELECT DISTINCT cl.in_run_id, cl.out_publication_id, cl.kind FROM f
        JOIN causal_links cl ON cl.in_publication_id = f.p
        WHERE {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="cl.in_run_id"), pub_node="f.node")}""",
    # backward: the run that published a frontier message, and the messages that caused it
    "published_in": _FRONTIER + """
        SELECT f.run_of_p, f.p FROM f WHERE f.run_of_p IS NOT NULL""",
    "causes": _FRONTIER + f"""
        SELECT DISTINCT cl.in_publication_id, cl.in_run_id, cl.out_publication_id, cl.kind FROM f
        JOIN causal_links cl ON cl.out_publication_id = f.p
        LEFT JOIN publications ip ON ip.publication_id = cl.in_publication_id
        LEFT JOIN publishers iu ON iu.publisher_id = ip.publisher_id
        WHERE {_OTHER_NODE.format(run_node=_NODE_OF_RUN.format(run="cl.in_run_id"), pub_node="iu.node_id")}""",
}


def _graph_in_database(db, start: int, forward: bool, backward: bool) -> tuple[list, list, list]:
    """`_core.FlowModel.message_graph` walked over the database, frontier by
    frontier, with the table `causal_links`: (publications, runs, edges as
    (from_kind, from, to_kind, to, kind)), each sorted."""
    def rows(name: str, frontier) -> list:
        return db.con.execute(_GRAPH_SQL[name], {"f": sorted(frontier)}).fetchall()

    seen_p, seen_r, edges = {start}, set(), set()
    if forward:
        frontier = {start}
        while frontier:
            for p, r in rows("transport", frontier):
                edges.add(("p", p, "r", r, "transport"))
                seen_r.add(r)
            new = set()
            for r, out, kind in rows("caused", frontier):
                edges.add(("r", r, "p", out, kind))
                seen_r.add(r)
                if out not in seen_p:
                    seen_p.add(out)
                    new.add(out)
            frontier = new
    if backward:
        frontier, seen_b = {start}, {start}
        while frontier:
            for r, p in rows("published_in", frontier):
                edges.add(("r", r, "p", p, "published_in"))
                seen_r.add(r)
            new = set()
            for inp, r, out, kind in rows("causes", frontier):
                edges.add(("r", r, "p", out, kind))
                edges.add(("p", inp, "r", r, "transport"))
                seen_r.add(r)
                seen_p.add(inp)
                if inp not in seen_b:
                    seen_b.add(inp)
                    new.add(inp)
            frontier = new
    return sorted(seen_p), sorted(seen_r), sorted(edges)


def _topic_mask(topics: list[str], pattern: str, option: str) -> list[bool]:
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{option}: bad regular expression {pattern!r}: {exc}") from None
    return [bool(rx.search(t)) for t in topics]


#: The default caps of `data_flows` (settable; None: no cap). A cap that is reached
#: is said in the summary (`outputs_capped`, `stopped_at`) and in its warnings.
MAX_FLOWS_PER_OUTPUT = 10_000
MAX_FLOWS = 10_000_000
#: The result tables of `data_flows`.
FLOW_TABLES = ("data_flows", "data_flow_steps", "data_flow_segments", "paths")


@dataclass
class DataFlows(Mapping):
    """The result of `data_flows`: the summary (read it as a dict: `res["flows"]`,
    `res["warnings"]`) and the result tables, which live in the database's
    connection (temporary views over a scratch file, `results.Appender`, or stored
    tables with `store=True`): query them
    with SQL, or read one whole as a pyarrow Table through its attribute:

    - `data_flows`: one row per flow: flow_id, path_id, output_publication_id,
      input_publication_id, first_run_id, start_ts, end_ts, latency_ns,
      communication_ns, idle_ns, computation_ns, fallback_edges;
    - `data_flow_steps`: flow_id, step, is_run, id: the steps of the first flow of
      each path (or of all);
    - `data_flow_segments`: kind, a, b, duration_ns: each distinct segment once;
    - `paths`: path_id, flows, path, fallback_edges.
    """

    summary: dict
    db: object = field(repr=False)

    def table(self, name: str):
        """Result table `name` (one of FLOW_TABLES), read whole, as a pyarrow Table."""
        if name not in FLOW_TABLES:
            raise KeyError(name)
        return self.db.con.table(name).arrow().read_all()

    data_flows = property(lambda self: self.table("data_flows"))
    data_flow_steps = property(lambda self: self.table("data_flow_steps"))
    data_flow_segments = property(lambda self: self.table("data_flow_segments"))
    paths = property(lambda self: self.table("paths"))

    def tables(self) -> dict:
        return {name: self.table(name) for name in FLOW_TABLES}

    def __getitem__(self, key: str):
        return self.summary[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)


def _regexes(patterns, option: str) -> list[re.Pattern]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as exc:
            raise InputError(f"{option}: bad regular expression {p!r}: {exc}") from None
    return out


def _exclusions(ctx: FlowContext, exclude) -> tuple[list[bool] | None, list[bool] | None, dict]:
    """Masks of the topics and callbacks (by label: `node kind(topic)`, so a node's
    name excludes its callbacks) that `exclude` matches, and what they are."""
    rxs = _regexes(exclude, "--exclude")
    if not rxs:
        return None, None, {"patterns": [], "topics": [], "callbacks": []}
    labels = ctx.model.callback_labels
    ex_t = [any(rx.search(t) for rx in rxs) for t in ctx.topics]
    ex_c = [any(rx.search(c) for rx in rxs) for c in labels]
    return ex_t, ex_c, {"patterns": [rx.pattern for rx in rxs],
                        "topics": [t for t, x in zip(ctx.topics, ex_t) if x],
                        "callbacks": [c for c, x in zip(labels, ex_c) if x]}


def _deps_edges(db, deps) -> tuple[list[tuple[int, int]] | None, dict | None, list[int] | None]:
    """Intra-node edges (callback ids) from a dependency file of `roscope deps` (a
    path or its parsed dict), or a list of (callback_id, callback_id); with the
    match's report and the callbacks the file matched (their nodes are the ones it
    describes: no fallback edge there)."""
    if deps is None:
        return None, None, None
    if isinstance(deps, (list, tuple)):
        return [(int(a), int(b)) for a, b in deps], None, None
    edges, report = trace_edges(db, deps)
    matched = sorted({int(c) for m in report["matched"] for c in m["trace_callbacks"]})
    return [(int(a), int(b)) for a, b in edges], report, matched


def _caps(name: str, value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or value < 0):
        raise InputError(f"{name} must be a whole number >= 0 (or None for no cap), not {value!r}")
    return value


def data_flows(db, from_re: str, to_re: str, ctx: FlowContext | None = None, *, implicit: str = "auto",
               exact_links: bool = True, max_flows_per_output: int | None = MAX_FLOWS_PER_OUTPUT,
               max_flows: int | None = MAX_FLOWS, all_paths: bool = False, exclude=None, deps=None,
               fallback: str = FALLBACK_RULE, all_steps: bool = False, store: bool = False,
               slice_publications: int | None = SLICE_PUBLICATIONS, reach_ns: int = SLICE_REACH_NS,
               uncertain: str = "keep") -> DataFlows:
    """Data flows from topics matching `from_re` to topics matching `to_re` (regexes,
    searched anywhere in the topic name).

    `implicit`: intra-node dependencies: 'auto' (annotations where a node has them,
    every pair of its timer and subscription callbacks elsewhere: fallback edges),
    'all' (every pair of callbacks of a node, the data-flow paper's fallback),
    'annotations' (only the annotated links), or 'none'. `fallback`: which pairs
    get a fallback edge under 'auto' (FALLBACK_RULES). `deps`: a dependency file
    of `roscope deps` (path or dict) or a list of (callback_id, callback_id): its
    edges replace the fallback on the nodes it describes; annotations still win.
    `uncertain`: 'keep' (flagged in `data_flows.uncertain`, counted in the summary)
    or 'drop' the flows through an intra-node dependency that a race makes
    uncertain (`roscope.overlaps`: a run of the callback depended on overlapped, on
    another thread, the run that depends on it).
    `exact_links=False` ignores transport links and takes the newest publication on
    the topic (the paper's D_cp). An (input message, output message) pair is one
    flow (the candidate with the fewest fallback edges, then the most steps) unless
    `all_paths`. `exclude`: regexes (one or a list) of topics and callbacks
    (`node kind(topic)`, so a node name excludes its callbacks) that no flow may
    pass through. Caps (None: no cap): `max_flows_per_output` candidates per output
    message, `max_flows` candidates in all (which bounds the search's time: it
    stops at the next output message); when one is reached the summary says where
    and its `warnings` say so.

    Flows are streamed into the database's connection as they are found (memory
    holds one chunk): `data_flows`, `data_flow_steps`, `data_flow_segments`,
    `paths` (temporary views over a scratch file, `results.Appender`), or stored
    tables with `store`. Returns a
    `DataFlows`.

    Without `ctx`, a database with more than `slice_publications` publications is
    searched in slices of the model of about that many publications, each reaching
    `reach_ns` before and after its outputs, with what flows need beyond that
    answered from the database (or a longer reach) (docs/analyses.md, "Slices"):
    memory then depends on the slice, not on the trace, and the results are those
    of the whole search. `slice_publications=None`: whole.
    """
    if implicit not in IMPLICIT_MODES:
        raise InputError(f"unknown implicit-dependency mode {implicit!r} (one of {', '.join(IMPLICIT_MODES)})")
    if fallback not in FALLBACK_RULES:
        raise InputError(f"unknown fallback rule {fallback!r} (one of {', '.join(FALLBACK_RULES)})")
    if uncertain not in UNCERTAIN_MODES:
        raise InputError(f"unknown mode for uncertain flows {uncertain!r} (one of {', '.join(UNCERTAIN_MODES)})")
    _caps("max_flows_per_output", max_flows_per_output)
    _caps("max_flows", max_flows)
    in_slices = ctx is None and slice_publications is not None and sliced(db, slice_publications)
    if in_slices:
        ctx = FlowContext(_slice_model(db, 0, 0, 0, 0))  # callbacks and topics only
    ctx = ctx or context(db)
    topics = ctx.topics
    is_in = _topic_mask(topics, from_re, "--from")
    is_out = _topic_mask(topics, to_re, "--to")
    shown = ", ".join(topics[:20]) + (", ..." if len(topics) > 20 else "")
    # A regex that matches none of the topics is a mistake; a trace without topics
    # (nothing ROS-related) simply has no data flows.
    if topics and not any(is_in):
        raise InputError(f"no topic matches --from {from_re!r} (topics: {shown})")
    if topics and not any(is_out):
        raise InputError(f"no topic matches --to {to_re!r} (topics: {shown})")
    ex_t, ex_c, excluded = _exclusions(ctx, exclude)
    edges, deps_report, deps_callbacks = _deps_edges(db, deps)
    overlaps = overlapping_runs(db) if implicit != "none" else []  # (races matter on intra-node edges only)
    with Appender(db, FLOW_TABLES, store) as out:
        def sink(name, table):
            out.append(name, table_from_core(table))

        search = _core.FlowSearch(ctx.model, is_in, is_out, _facts(db) if in_slices else None, implicit, exact_links,
                                  max_flows_per_output, all_steps, max_flows=max_flows, all_paths=all_paths,
                                  excluded_topics=ex_t, excluded_callbacks=ex_c, deps=edges, fallback=fallback,
                                  deps_callbacks=deps_callbacks, overlaps=overlaps, drop_uncertain=uncertain == "drop")
        if in_slices:
            slices = _over_slices(db, lambda m, ids, w, ans: search.run(m, ids, w, sink, ans), slice_publications, reach_ns,
                                  _History(db, topics), stopped=lambda: search.stopped)
        else:
            search.run(ctx.model, _WHOLE_IDS, None, sink)
            slices = dict(_ONE_SLICE)
        # Segments found again after a slice forgot them: maybe twice in the table.
        slices["segments_found_again"] = unsure = search.segments_unsure
        paths, stats = search.finish(sink)
        if unsure:
            _dedupe_segments(db, out.target("data_flow_segments"))
        rest_from = slices.pop("rest_from", None)
        if rest_from is not None:  # stopped at a cap before the last slice: the outputs not searched, counted
            stats["outputs_total"] += _outputs_from(db, rest_from, topics, is_out, ex_t, ex_c)
        out.append("paths", table_from_core(paths))
    n_paths = paths.num_rows
    compute_ns = int(stats["seconds"] * 1e9)
    flows = stats["flows"]
    summary = {
        "outputs": stats["outputs"], "outputs_total": stats["outputs_total"], "flows": flows, "paths": n_paths,
        "compute_ns": compute_ns, "ns_per_flow": compute_ns / flows if flows else None,
        "trees_cached": stats["trees_cached"], "cache_hits": stats["cache_hits"], "cache_evicted": stats["cache_evicted"],
        "topics_from": [t for t, m in zip(topics, is_in) if m], "topics_to": [t for t, m in zip(topics, is_out) if m],
        "implicit": implicit, "fallback_rule": fallback, "one_flow_per_pair": not all_paths,
        "candidates": stats["candidates"], "duplicates_dropped": stats["duplicates_dropped"],
        "flows_on_fallback": stats["flows_on_fallback"],
        "fallback_share": stats["flows_on_fallback"] / flows if flows else None,
        "flows_from_publications": stats["flows_from_publications"],
        "uncertain": uncertain, "flows_uncertain": stats["flows_uncertain"],
        "uncertain_dropped": stats["uncertain_dropped"],
        "caps": {"max_flows_per_output": max_flows_per_output, "max_flows": max_flows,
                 "outputs_capped": stats["outputs_capped"], "capped_examples": stats["capped_examples"],
                 "stopped_at_publication_id": stats["stopped_at"]},
        "excluded": excluded, "deps": deps_report, "slices": slices,
    }
    summary["warnings"] = _flow_warnings(db, summary, is_in, is_out, ctx)
    return DataFlows(summary, db)


def _outputs_from(db, t: int, topics: list[str], is_out: list[bool], ex_t, ex_c) -> int:
    """The output publications from time `t` on (on the --to topics, neither they nor
    the callback that made them excluded), as the search counts them."""
    out = [name for i, name in enumerate(topics) if is_out[i] and not (ex_t and ex_t[i])]
    excluded_cbs = [i for i, x in enumerate(ex_c or []) if x]
    return db.con.execute(f"""
        SELECT count(*) FROM publications p JOIN publishers u USING (publisher_id)
        LEFT JOIN callback_runs r ON r.run_id = p.run_id
        WHERE list_contains($topics, u.name) AND {_pub_ts("p.")} >= $t
          AND (r.callback_id IS NULL OR NOT list_contains($cbs, r.callback_id))""",
                          {"topics": out, "t": t, "cbs": excluded_cbs}).fetchall()[0][0]


def _dedupe_segments(db, table: str) -> None:
    """Keeps the first row of each segment of `table` (the SQL name of the table
    behind `data_flow_segments`: a sliced search may find a segment again after it
    forgot it)."""
    db.con.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "
                   "QUALIFY row_number() OVER (PARTITION BY kind, a, b ORDER BY rowid) > 1)")


def _pub_where(db, pub: int) -> str:
    row = (db.con.execute("SELECT topic, publish_ts FROM publications_info WHERE publication_id = ?", [pub]).fetchall() or [None])[0]
    return f"publication {pub} on {row[0]} at {row[1]} ns" if row else f"publication {pub}"


def _flow_warnings(db, s: dict, is_in, is_out, ctx: FlowContext) -> list[str]:
    """What the user must know to read the result: caps reached, fallback edges, and
    why a selection yields nothing."""
    w = []
    caps = s["caps"]
    if caps["outputs_capped"]:
        ex = ", ".join(_pub_where(db, p) for p in caps["capped_examples"][:3])
        w.append(f"{caps['outputs_capped']:,} of {s['outputs']:,} output messages reached the cap of "
                 f"{caps['max_flows_per_output']:,} candidate flows each (e.g. {ex}): their flows are incomplete and "
                 "path statistics depend on search order; raise --max-flows-per-output, or narrow with --exclude")
    if caps["stopped_at_publication_id"] is not None:
        not_searched = s["outputs_total"] - s["outputs"]
        w.append(f"stopped at the cap of {caps['max_flows']:,} candidate flows, at "
                 f"{_pub_where(db, caps['stopped_at_publication_id'])}: "
                 f"{not_searched:,} of {s['outputs_total']:,} output messages were not searched, and the statistics cover "
                 "only the outputs before it; raise --max-flows, or narrow with --from/--to/--exclude")
    if s["flows_on_fallback"]:
        w.append(f"{s['flows_on_fallback']:,} of {s['flows']:,} flows ({s['fallback_share']:.1%}) rest on fallback "
                 "intra-node edges (nodes without annotations or a dependency file: every callback pair is assumed to "
                 "depend); such a flow may not exist. `roscope deps` finds the real ones from the sources (--deps)")
    w += _uncertain_warnings(s)
    w += deps_warnings(s["deps"])
    if s["flows"] == 0:
        w.append("no data flow: " + _why_none(db, s, is_in, is_out, ctx))
    return w


def _uncertain_warnings(s: dict) -> list[str]:
    """Flows that a race makes uncertain (`roscope.overlaps`), kept or dropped."""
    if s["flows_uncertain"]:
        return [f"{s['flows_uncertain']:,} of {s['flows']:,} flows are uncertain (flagged in data_flows.uncertain): "
                "a run of a callback they depend on overlapped, on another thread, the run that depends on it (a "
                "multi-threaded executor or spinner), so whether its write came before the read is not known from "
                "the trace; --uncertain drop leaves them out"]
    if s["uncertain_dropped"]:
        return [f"{s['uncertain_dropped']:,} uncertain flows (races: runs that overlapped on two threads) were left "
                "out (--uncertain drop)"]
    return []


def _why_none(db, s: dict, is_in, is_out, ctx: FlowContext) -> str:
    """Why a selection yields no flow, from the cheapest facts first."""
    if s["outputs_total"] == 0:
        return f"no message was published on the --to topics ({', '.join(s['topics_to'][:5])})"
    ins = [t for t, m in zip(ctx.topics, is_in) if m]
    n_in = db.con.execute("SELECT count(*) FROM publications_info WHERE list_contains(?, topic)", [ins]).fetchall()[0][0]
    if n_in == 0:
        return f"no message was published on the --from topics ({', '.join(ins[:5])})"
    excl = s["excluded"]
    if excl["topics"] or excl["callbacks"]:
        return ("no chain of callbacks and topics links the --from topics to the --to topics outside what --exclude "
                "removed, or every such chain passes through an excluded topic or callback")
    return ("no chain of callback runs and messages links a --from message to a --to message: the output messages' "
            "dependencies (their publishing callbacks, those callbacks' inputs and intra-node dependencies under "
            f"--implicit {s['implicit']}) never reach a message on the --from topics before it")


#: The values of `path_stats` (one latency part `c` of every flow) and of
#: `component_stats` (each table's source, group columns and extra aggregates),
#: as `statistics.grouped` reads them.
PATH_SOURCE = "SELECT path_id, {c}_ns AS x FROM data_flows"
COMPONENT_SOURCES = {
    "communication_by_topic": ("""
        SELECT pi.topic, s.duration_ns AS x
        FROM data_flow_segments s JOIN publications_info pi ON pi.publication_id = s.a
        WHERE s.kind = 'communication'""", ["topic"], ""),
    "idle_by_node": ("""
        SELECT c.node, s.duration_ns AS x
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.b JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'idle'""", ["node"], ""),
    "computation_by_callback": ("""
        SELECT c.node, c.kind, c.topic, c.symbol, s.duration_ns AS x, r.duration_ns AS run_ns
        FROM data_flow_segments s JOIN callback_runs r ON r.run_id = s.a JOIN callbacks_info c USING (callback_id)
        WHERE s.kind = 'computation'""", ["node", "kind", "topic", "symbol"], "avg(run_ns) AS callback_mean_ns"),
}


def path_stats(db) -> list[dict]:
    """Per path (of the last `data_flows`): flow count, and for the end-to-end latency
    and each of its parts the standard statistics (count, min_ns ... max_ns, with
    quartiles). One query per part; exact percentiles of a path too large for
    DuckDB's budget come from a sort spilled to disk (`statistics.grouped`)."""
    out = {r["path_id"]: {"path_id": r["path_id"], "flows": r["flows"], "path": r["path"],
                          "fallback_edges": r["fallback_edges"]}
           for r in db.records("SELECT path_id, flows, path, fallback_edges FROM paths "
                               "WHERE flows > 0 ORDER BY flows DESC, path_id")}
    for c in COMPONENTS:
        rows = statistics.grouped(db, PATH_SOURCE.format(c=c), ["path_id"], quartiles=True,
                                  what="per-path latency statistics")
        for r in rows:
            if r["path_id"] in out:
                out[r["path_id"]][c] = {"count": r["count"], **{k: r[k] for k in statistics.keys(quartiles=True)}}
    return list(out.values())


def component_stats(db) -> dict:
    """Statistics per component over the distinct segments of all data flows (of the
    last `data_flows`), like the data-flow paper's Tables II-IV: communication per
    topic, idle per node (implicit dependencies), computation per callback (with the
    callback's mean duration). Each table by decreasing mean."""
    def by_mean(source: str, by: list[str], extra: str) -> list[dict]:
        rows = statistics.grouped(db, source, by, quartiles=True, extra=extra, what="per-component statistics")
        return sorted(rows, key=lambda r: (r["mean_ns"] is None, -(r["mean_ns"] or 0)))

    return {name: by_mean(*src) for name, src in COMPONENT_SOURCES.items()}


def executor(db, *, store: bool = False) -> dict:
    """Executor states and input waits: see `roscope.executor.executor`."""
    from roscope import executor as _executor

    return _executor.executor(db, store=store)


def input_waits(db, *, store: bool = False) -> list[dict]:
    """Input waits per callback: see `roscope.executor.input_waits`."""
    from roscope import executor as _executor

    return _executor.input_waits(db, store=store)
