"""The flow's model, read from the database: whole (`context`), or one slice of
it at a time (docs/analyses.md, "Slices"), so that the memory of a search or of
the causal links depends on the slice, not on the trace.

- `context(db)`: the whole model (`FlowContext`);
- `slice_model(db, a, b, c, d, xp, xr)`: the model of publications a..b and runs
  c..d (ids rebased to 0) and the extra ones `xp`, `xr`;
- `Reads(db)`: the database reads of the slice driver, which plans the slices in
  Rust (crates/flow slices.rs: which id ranges a slice holds, the runs and
  publications before it, what was answered from the database, when to start again
  from an output whose flows reach beyond its slice) and hands them to a search
  (`_core.FlowSearch.run_slices`, `_core.CausalSearch.run_slices`);
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


#: What a search over the whole model says of its slices (`run_slices` says the rest).
ONE_SLICE = {"count": 1, "restarts": 0, "answered_from_database": 0, "reach_ns": None, "peak_instances": None,
             "publications_per_slice": None}


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


class Reads:
    """The database reads of the slice driver (crates/flow slices.rs, `SliceSource`;
    `_core.FlowSearch.run_slices`, `_core.CausalSearch.run_slices`), which plans the
    slices in Rust: each method returns a DuckDB relation, which the core reads as an
    Arrow stream (ids are the model's; times the flow's, `pub_ts`)."""

    _PUBLICATION_BLOCKS = f"""
        SELECT min({pub_ts()}), max({pub_ts()}), min(run_id), max(run_id)
        FROM publications GROUP BY publication_id // $block ORDER BY publication_id // $block"""
    _RUN_BLOCKS = """
        SELECT min(start_ts), max(start_ts) FROM callback_runs GROUP BY run_id // $block ORDER BY run_id // $block"""
    _LINK_BLOCKS = """
        SELECT run_id // $block AS k, min(publication_id), max(publication_id) FROM links
        WHERE run_id IS NOT NULL AND publication_id IS NOT NULL GROUP BY k"""
    _LATEST_RUNS = """
        SELECT callback_id, latest.s, latest.r FROM (
            SELECT callback_id, max(struct_pack(s := start_ts, r := run_id)) AS latest FROM callback_runs
            WHERE run_id >= $lo_id AND run_id < $hi_id AND start_ts >= $since AND start_ts < $upto
              AND callback_id IS NOT NULL GROUP BY callback_id)"""
    _LATEST_PUBLICATIONS = f"""
        SELECT publisher_id, latest.s, latest.r FROM (
            SELECT publisher_id, max(struct_pack(s := {pub_ts()}, r := publication_id)) AS latest
            FROM publications
            WHERE publication_id >= $lo_id AND publication_id < $hi_id AND publisher_id IS NOT NULL
              AND {pub_ts()} >= $since AND {pub_ts()} < $upto
            GROUP BY publisher_id)"""
    _LINKED_PUBLICATIONS = """
        SELECT DISTINCT publication_id FROM links
        WHERE run_id IN (SELECT unnest($ids::BIGINT[])) AND publication_id IS NOT NULL"""
    _RUNS_OF = """
        SELECT DISTINCT run_id FROM publications
        WHERE publication_id IN (SELECT unnest($ids::BIGINT[])) AND run_id IS NOT NULL"""
    _RUN_BEFORE = """
        SELECT run_id FROM callback_runs
        WHERE callback_id = $cb AND start_ts < $t AND end_ts >= 0 AND end_ts <= $t
        ORDER BY start_ts DESC, run_id DESC LIMIT 1"""
    _NEWEST_BEFORE = f"""
        SELECT p.publication_id FROM publications p JOIN publishers u USING (publisher_id)
        WHERE u.name = $topic AND {pub_ts("p.")} < $t
        ORDER BY {pub_ts("p.")} DESC, p.publisher_id, p.publication_id DESC LIMIT 1"""

    def __init__(self, db: Database):
        self.db = db

    def _sql(self, sql: str, **params):
        return self.db.con.sql(sql, params=params)

    def counts(self) -> tuple[int, int, int, int]:
        """Rows of publications, callback_runs, callbacks, publishers."""
        return tuple(self.db.con.execute(
            "SELECT (SELECT count(*) FROM publications), (SELECT count(*) FROM callback_runs), "
            "(SELECT count(*) FROM callbacks), (SELECT count(*) FROM publishers)").fetchall()[0])

    def publication_blocks(self, block: int):
        """Per block of `block` publications: least and greatest time and run id."""
        return self._sql(self._PUBLICATION_BLOCKS, block=block)

    def run_blocks(self, block: int):
        """Per block of `block` runs: least and greatest start."""
        return self._sql(self._RUN_BLOCKS, block=block)

    def link_blocks(self, block: int):
        """Per block of `block` runs with transport links: (block, least publication, greatest)."""
        return self._sql(self._LINK_BLOCKS, block=block)

    def slice(self, a: int, b: int, c: int, d: int, xp: list[int], xr: list[int]) -> _core.FlowModel:
        """The model of a slice (`slice_model`)."""
        return slice_model(self.db, a, b, c, d, xp, xr)

    def latest_runs(self, lo_id: int, hi_id: int, since: int, upto: int):
        """Per callback its latest run (callback_id, start, run_id) among runs lo_id..hi_id started in [since, upto)."""
        return self._sql(self._LATEST_RUNS, lo_id=lo_id, hi_id=hi_id, since=since, upto=upto)

    def latest_publications(self, lo_id: int, hi_id: int, since: int, upto: int):
        """Per publisher its latest publication (publisher_id, time, publication_id) among lo_id..hi_id made in [since, upto)."""
        return self._sql(self._LATEST_PUBLICATIONS, lo_id=lo_id, hi_id=hi_id, since=since, upto=upto)

    def linked_publications(self, runs: list[int]):
        """The publications whose transport links fed `runs`."""
        return self._sql(self._LINKED_PUBLICATIONS, ids=runs)

    def runs_of(self, pubs: list[int]):
        """The runs in which `pubs` were published."""
        return self._sql(self._RUNS_OF, ids=pubs)

    def run_before(self, callback_id: int, t: int):
        """The latest completed run of a callback before `t` (no row: none)."""
        return self._sql(self._RUN_BEFORE, cb=callback_id, t=t)

    def newest_before(self, topic: str, t: int):
        """The newest publication on `topic` before `t` (no row: none)."""
        return self._sql(self._NEWEST_BEFORE, topic=topic, t=t)


def sliced(db: Database, slice_publications: int | None = None) -> bool:
    """Whether the data-flow search and causal links run over slices of the model
    (a database with more than `slice_publications`, default `SLICE_PUBLICATIONS`,
    publications) rather than over the whole model (`context`)."""
    n = slice_publications or SLICE_PUBLICATIONS
    return db.con.execute("SELECT count(*) FROM publications").fetchall()[0][0] > n
