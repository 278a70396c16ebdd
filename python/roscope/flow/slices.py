"""The flow's model, read from the database: whole (`context`), or one slice of
it at a time (docs/analyses.md, "Slices"), so that the memory of a search or of
the causal links depends on the slice, not on the trace.

- `context(db)`: the whole model (`FlowContext`);
- `slice_model(db, a, b, c, d, xp, xr)`: the model of publications a..b and runs
  c..d (ids rebased to 0) and the extra ones `xp`, `xr`;
- `over_slices(db, run, per_slice, reach_ns)`: calls a search (`_core.FlowSearch.run`,
  `_core.CausalSearch.run`) slice after slice in output time order, each slice
  holding what its outputs' flows need (`Blocks` chooses its id ranges, `Anchors`
  the runs and publications before it, `History` what was answered from the
  database), and starts again from an output whose flows reach beyond its slice;
- `facts(db)`: what the implicit-edge rules read from the whole trace;
- `sliced(db)`: whether a database is searched in slices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roscope import _core
from roscope.flow.request import SLICE_PUBLICATIONS

if TYPE_CHECKING:
    from roscope.database import Database


@dataclass
class FlowContext:
    """The flow's model, read once from a database; pass it to several analyses."""

    model: _core.FlowModel

    @property
    def topics(self) -> list[str]:
        return self.model.topics


def context(db: Database) -> FlowContext:
    """Reads the tables and columns the flow needs (`_core.FlowModel.inputs()`) out of
    the database as Arrow data, and builds the flow's model from them in Rust."""
    def read(name: str, cols: list[str]):
        # The columns as a DuckDB relation: the core reads it as an Arrow stream
        # (`__arrow_c_stream__`), to the end before the next, without pyarrow.
        return db.con.table(name).select(*cols)

    return FlowContext(_core.FlowModel(read))


def pub_ts(alias: str = "") -> str:
    """SQL: a publication's time as the flow reads it (crates/flow input.rs): its
    earliest layer's (rclcpp, rcl, rmw), else the first event's; `pub_ts("p.")`
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


def slice_model(db: Database, a: int, b: int, c: int, d: int, xp=(), xr=()) -> _core.FlowModel:
    """The flow's model of publications a..b then `xp`, and runs c..d then `xr`
    (ids rebased to 0, in that order); the other tables whole (small, the same in
    every slice: DuckDB reads them again for each). `a == b and c == d`
    and no extras: no instances (callbacks and topics only). Everything is read as
    DuckDB relations, which the core reads as Arrow streams: no pyarrow (its libraries
    were 37 MiB of `flow`'s peak)."""
    bounds = {"a": a, "b": b, "c": c, "d": d}

    def extra(ids, col: str, first: int):
        """The extra ids, numbered from `first` in the slice, as a relation (`col`, local)."""
        # Column names from this module only; the ids and `first` are parameters.
        return db.con.sql(f"SELECT unnest($ids::BIGINT[]) AS {col}, unnest(range($first, $first + len($ids::BIGINT[]))) "
                          "AS local", params={"ids": [int(i) for i in ids], "first": int(first)})

    db.con.register("_roscope_slice_xp", extra(xp, "publication_id", b - a))
    db.con.register("_roscope_slice_xr", extra(xr, "run_id", d - c))

    def read(name: str, cols: list[str]):
        sql = _SLICE_SQL.get(name)
        if sql is None:
            return db.con.table(name).select(*cols)
        return db.con.sql(sql, params={k: v for k, v in bounds.items() if f"${k}" in sql})

    try:
        return _core.FlowModel(read)
    finally:
        db.con.unregister("_roscope_slice_xp")
        db.con.unregister("_roscope_slice_xr")


#: What `_over_slices` says of a search over the whole model.
ONE_SLICE = {"count": 1, "restarts": 0, "answered_from_database": 0, "reach_ns": None, "peak_instances": None,
              "publications_per_slice": None}
#: Ids per block of the summaries that choose a slice's id ranges.
#: At most this many, and about a quarter of a slice.
_BLOCK = 4096
_MIN, _MAX = -(2**63), 2**63 - 1


class Blocks:
    """Per block of `block` ids, what choosing a slice's id ranges needs: the times
    of the publications (their earliest layer's, as the flow reads them) and runs
    (start), the runs the publications were made in, the publications linked to the
    runs. Read once, a few values per block."""

    def __init__(self, db: Database, block: int):
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
            f"SELECT min({pub_ts()}), max({pub_ts()}), "
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


def facts(db: Database) -> _core.Facts:
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
    return _core.Facts(runs=runs, pairs=pairs)


class Anchors:
    """Per callback its latest run, per publisher its latest publication, before the
    time up to which slices have been folded in (`fold`): they give a slice's
    horizons (`roscope_flow::Window`: a callback that ran once at the start is still
    found) and the instances it holds besides its id ranges."""

    _RUNS = """
        SELECT callback_id, max(struct_pack(s := start_ts, r := run_id)) FROM callback_runs
        WHERE run_id >= $lo_id AND run_id < $hi_id AND start_ts >= $since AND start_ts < $upto
          AND callback_id IS NOT NULL GROUP BY callback_id"""
    _PUBS = f"""
        SELECT publisher_id, max(struct_pack(s := {pub_ts()}, r := publication_id))
        FROM publications
        WHERE publication_id >= $lo_id AND publication_id < $hi_id AND publisher_id IS NOT NULL
          AND {pub_ts()} >= $since AND {pub_ts()} < $upto
        GROUP BY publisher_id"""

    def __init__(self, db: Database):
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


def linked_publications(db: Database, runs) -> list[int]:
    """The publications whose transport links fed `runs`."""
    return [r[0] for r in db.con.execute(
        "SELECT DISTINCT publication_id FROM links WHERE run_id IN (SELECT unnest($1::BIGINT[]))", [list(runs)]).fetchall()]


def runs_of(db: Database, pubs) -> list[int]:
    """The runs in which `pubs` were published."""
    return [r[0] for r in db.con.execute(
        "SELECT DISTINCT run_id FROM publications WHERE publication_id IN (SELECT unnest($1::BIGINT[])) "
        "AND run_id IS NOT NULL", [list(pubs)]).fetchall()]


def extras(db: Database, ranges, runs: list[int], pubs: list[int]) -> tuple[list[int], list[int]]:
    """The runs and publications a slice with id ranges `ranges` holds besides them:
    `runs` and `pubs` (its anchors), the publications linked to those runs and the
    runs of those publications; none of them in the ranges."""
    a, b, c, d = ranges
    xr = sorted({r for r in (*runs, *runs_of(db, pubs)) if not c <= r < d})
    xp = sorted({p for p in (*pubs, *linked_publications(db, runs)) if not a <= p < b})
    return xr, xp


class History:
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
        WHERE u.name = $topic AND {pub_ts("p.")} < $t
        ORDER BY {pub_ts("p.")} DESC, p.publisher_id, p.publication_id DESC LIMIT 1"""

    def __init__(self, db: Database, topics: list[str]):
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

    def answer(self, needs: list) -> bool:
        """Answers `needs` (`_core.Uncertain.needs`); False when none of them was new
        (the slice must reach further instead)."""
        nodes = [n for n in needs if isinstance(n, _core.NeedNode)]
        new_runs = [n.id for n in nodes if not n.publication and n.id not in self.complete_runs]
        new_pubs = [n.id for n in nodes if n.publication and n.id not in self.complete_pubs]
        new = bool(new_runs or new_pubs)
        if new_runs:
            self.complete_runs.update(new_runs)
            self.runs.update(new_runs)
            self.pubs.update(linked_publications(self.db, new_runs))
        if new_pubs:
            self.complete_pubs.update(new_pubs)
            self.pubs.update(new_pubs)
            self.runs.update(runs_of(self.db, new_pubs))
        for n in needs:
            if isinstance(n, _core.NeedRunBefore) and (n.callback_id, n.ts) not in self.runs_before:
                r = self.runs_before[(n.callback_id, n.ts)] = self._one(self._RUN_BEFORE, {"cb": n.callback_id, "t": n.ts})
                self.runs.update([r] if r >= 0 else [])
                new = True
            elif isinstance(n, _core.NeedNewestBefore) and (n.topic, n.ts) not in self.newest_before:
                p = self.newest_before[(n.topic, n.ts)] = self._one(self._NEWEST_BEFORE, {"topic": self.topics[n.topic],
                                                                                           "t": n.ts})
                self.pubs.update([p] if p >= 0 else [])
                new = True
        if len(self.runs) + len(self.pubs) > self.CAP:
            self.clear()
        return new

    def answers(self, ranges, xr: list[int], xp: list[int]) -> _core.Answers:
        """The answers in the ids of a slice with id ranges `ranges` and extra runs
        `xr` and publications `xp` (which hold `self.runs` and `self.pubs`)."""
        a, b, c, d = ranges
        run_at = {g: (d - c) + i for i, g in enumerate(xr)}
        pub_at = {g: (b - a) + i for i, g in enumerate(xp)}

        def run(g: int) -> int:
            return -1 if g < 0 else g - c if c <= g < d else run_at[g]

        def pub(g: int) -> int:
            return -1 if g < 0 else g - a if a <= g < b else pub_at[g]

        return _core.Answers(runs_before=[(k[0], k[1], run(v)) for k, v in self.runs_before.items()],
                             newest_before=[(k[0], k[1], pub(v)) for k, v in self.newest_before.items()],
                             complete_runs=[run(g) for g in self.complete_runs],
                             complete_pubs=[pub(g) for g in self.complete_pubs])


#: Searches of one output over slices with answers from the database (`History`)
#: before the slice reaches further instead.
_ANSWER_ROUNDS = 32


def over_slices(db: Database, run, per_slice: int, reach_ns: int, history: History | None = None, stopped=None) -> dict:
    """Calls `run(model, ids, window, answers)` (`_core.FlowSearch.run`,
    `_core.CausalSearch.run`) over slices of the model in output time order: each
    slice holds its outputs' time span and `reach` before and after it, and the
    latest run of each callback and publication of each publisher before that
    (`Anchors`). When what an output needs reaches beyond its slice (`run` returns
    that output, and with `history` what the slice lacked), the search goes on from
    that output: with those needs answered from the database (`History`) while
    that brings something new, else with twice the reach. When `stopped()` says the
    search is over (a cap), the slices end: "rest_from" is the time from which no
    output was handed to `run`. Returns what the slicing did."""
    bl = Blocks(db, min(_BLOCK, max(16, per_slice // 4)))
    anchors = Anchors(db)
    out_from, reach, n, restarts, peak, prev = (_MIN, _MIN), reach_ns, 0, 0, 0, None
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
            xr, xp = extras(db, (a, b, c, d), runs, pubs)
            if history is not None:
                xr = sorted(set(xr) | {r for r in history.runs if not c <= r < d})
                xp = sorted(set(xp) | {p for p in history.pubs if not a <= p < b})
        model = slice_model(db, a, b, c, d, xp, xr)
        local_from = out_from if out_from[1] == _MIN else (out_from[0], out_from[1] - a)
        answers = history.answers((a, b, c, d), xr, xp) if history is not None and lo != _MIN else None
        ids = _core.Ids(pub_base=a, pub_n=b - a, pub_extra=xp, run_base=c, run_n=d - c, run_extra=xr)
        window = _core.Window(lo=lo, hi=hi, out_from_ts=local_from[0], out_from_id=local_from[1], out_to=out_to,
                              lo_cb=lo_cb, lo_pub=lo_pub)
        uncertain = run(model, ids, window, answers)
        del model
        n += 1
        prev = (a, b, c, d)
        peak = max(peak, (b - a) + (d - c) + len(xp) + len(xr))
        if uncertain is not None:
            if (lo, hi) == (_MIN, _MAX):
                raise RuntimeError("the data-flow search over the whole model found flows beyond it")
            restarts += 1
            at = (uncertain.ts, uncertain.publication_id)
            rounds = rounds + 1 if at == out_from else 1
            if history is not None and rounds <= _ANSWER_ROUNDS and uncertain.needs and history.answer(uncertain.needs):
                answered += 1
            else:
                reach *= 2
            out_from = at
            continue
        if out_to == _MAX or (stopped is not None and stopped()):
            break
        out_from = (out_to, _MIN)
    return {"count": n, "restarts": restarts, "answered_from_database": answered, "reach_ns": reach,
            "peak_instances": peak, "publications_per_slice": per_slice, "rest_from": None if out_to == _MAX else out_to}


def sliced(db: Database, slice_publications: int | None = None) -> bool:
    """Whether the data-flow search and causal links run over slices of the model
    (a database with more than `slice_publications`, default `SLICE_PUBLICATIONS`,
    publications) rather than over the whole model (`context`)."""
    n = slice_publications or SLICE_PUBLICATIONS
    return db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0] > n
