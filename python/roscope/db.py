"""The execution database: roscope's model of a traced ROS system in DuckDB.

`load()` runs the Rust model builder over the traces and stores its tables
(docs/model.md) in a DuckDB file; `open()` gives a `Database` over a trace or a
database file, with DataFrames and raw SQL.
"""
from __future__ import annotations

import builtins
import datetime as _dt
import json
import os
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roscope import __version__, _core
from roscope.trace import _arrow_array, _paths

if TYPE_CHECKING:
    import duckdb

SCHEMA_VERSION = 1

#: Views over the base tables, created in every database.
VIEWS = {
    # Every topic that a publisher or a subscription names.
    "topics": """
        SELECT name AS topic, count(*) FILTER (WHERE kind = 'pub') AS publishers,
               count(*) FILTER (WHERE kind = 'sub') AS subscriptions
        FROM (SELECT name, 'pub' AS kind FROM publishers WHERE name IS NOT NULL
              UNION ALL SELECT name, 'sub' FROM subscriptions WHERE name IS NOT NULL)
        GROUP BY name""",
    # Callbacks with what they belong to: node, topic or period, process.
    "callbacks_info": """
        SELECT c.callback_id, c.proc_id, p.pid, p.procname, h.hostname, c.handle, c.symbol, c.kind,
               c.owner_id, c.known,
               CASE c.kind WHEN 'subscription' THEN s.name WHEN 'service' THEN sv.name ELSE NULL END AS topic,
               t.period_ns,
               n.name AS node_name, n.namespace AS node_namespace,
               CASE WHEN n.name IS NULL THEN NULL
                    WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                    ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node
        FROM callbacks c
        JOIN processes p USING (proc_id)
        JOIN hosts h ON h.host_id = p.host_id
        LEFT JOIN subscriptions s ON c.kind = 'subscription' AND s.subscription_id = c.owner_id
        LEFT JOIN services sv ON c.kind = 'service' AND sv.service_id = c.owner_id
        LEFT JOIN timers t ON c.kind = 'timer' AND t.timer_id = c.owner_id
        LEFT JOIN nodes n ON n.node_id = c.node_id""",
    # Publications with their topic and the earliest layer's time.
    "publications_info": """
        SELECT pb.*, pu.name AS topic, pu.node_id,
               coalesce(pb.rclcpp_ts, pb.rcl_ts, pb.rmw_ts, pb.ts) AS publish_ts
        FROM publications pb LEFT JOIN publishers pu USING (publisher_id)""",
    # Per subscription: messages that a publisher it receives from published
    # between the first and the last message it received from that publisher (by
    # exact links) and that it never received: dropped (a full queue or history,
    # an outbox) or lost in transport.
    "subscription_drops": """
        WITH pairs AS (
            SELECT t.subscription_id, pi.publisher_id, min(pi.publish_ts) AS first_pub, max(pi.publish_ts) AS last_pub
            FROM links l JOIN takes t USING (take_id) JOIN publications_info pi USING (publication_id)
            WHERE l.heuristic = 0 AND t.subscription_id IS NOT NULL AND pi.publisher_id IS NOT NULL GROUP BY 1, 2),
        cand AS (
            SELECT p.subscription_id, pi.topic, pi.publication_id FROM pairs p
            JOIN publications_info pi ON pi.publisher_id = p.publisher_id AND pi.publish_ts BETWEEN p.first_pub AND p.last_pub),
        delivered AS (SELECT DISTINCT l.publication_id, t.subscription_id FROM links l JOIN takes t USING (take_id))
        SELECT c.subscription_id, c.topic, count(*) AS expected, count(*) FILTER (WHERE d.publication_id IS NULL) AS dropped
        FROM cand c LEFT JOIN delivered d USING (publication_id, subscription_id)
        GROUP BY c.subscription_id, c.topic""",
    # Transport links with the times that matter for latency.
    "links_info": """
        SELECT l.*, pi.topic, pi.publish_ts, tk.ts AS take_ts, r.start_ts AS callback_start_ts,
               r.callback_id, tk.subscription_id
        FROM links l
        JOIN publications_info pi USING (publication_id)
        LEFT JOIN takes tk USING (take_id)
        LEFT JOIN callback_runs r ON r.run_id = l.run_id""",
}


def _table_from_core(name: str, rows: int, cols):
    import pyarrow as pa

    arrays = [_arrow_array(kind, rows, v, o, m) for (_, kind, v, o, m) in cols]
    return pa.table(arrays, names=[c[0] for c in cols])


@dataclass
class LoadResult:
    db_path: str
    tables: dict[str, int]
    stats: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    losses: list[tuple[str, int, int]] = field(default_factory=list)


def _import_arrow() -> None:
    import duckdb  # noqa: F401
    import pyarrow  # noqa: F401


def record_ids(paths: Sequence[str]) -> list[str]:
    """The recording names of `roscope record` manifests at, above or inside the
    given paths (a trace directory, or a folder of several)."""
    from roscope import manifest

    ids = []
    for _m, man in manifest.find(paths, below=True):
        rid = man.get("record_id") if isinstance(man, dict) else None
        if rid and rid not in ids:
            ids.append(rid)
    return ids


def build(paths: Sequence[str], heuristics: bool = True, progress: bool | None = None):
    """Runs the model builder; returns ({table: arrow table}, stats, warnings, losses)."""
    if progress is None:
        progress = sys.stderr.isatty()
    # The core leaves the GIL while it builds: import Arrow meanwhile.
    warm = threading.Thread(target=_import_arrow, daemon=True)
    warm.start()
    tables, stats, warnings, losses = _core.build_model(list(paths), heuristics, progress, record_ids(paths) or None)
    warm.join()
    arrow = {name: _table_from_core(name, rows, cols) for name, rows, cols in tables}
    return arrow, dict(stats), list(warnings), [tuple(x) for x in losses]


def _fill(con: duckdb.DuckDBPyConnection, arrow: dict, meta: dict) -> None:
    for name, tbl in arrow.items():
        con.register("_src", tbl)
        con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _src')
        con.unregister("_src")
    for name, sql in VIEWS.items():
        con.execute(f'CREATE VIEW "{name}" AS {sql}')
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])


def load(
    paths: Sequence[str],
    out: str | None = None,
    *,
    heuristics: bool = True,
    parquet_dir: str | None = None,
    force: bool = False,
) -> tuple[Database, LoadResult]:
    """Builds the model of `paths` into a DuckDB file `out` (in memory if None)."""
    paths = _paths(paths)
    if out is not None and os.path.exists(out):
        if not force:
            raise FileExistsError(f"{out}: already exists (roscope never overwrites; pass --force to replace it)")
        os.remove(out)
    arrow, stats, warnings, losses = build(paths, heuristics)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "roscope_version": __version__,
        "sources": [os.path.abspath(p) for p in paths],
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "host": socket.gethostname(),
        "heuristic_links": heuristics,
        "stats": stats,
        "warnings": warnings,
        "losses": losses,
    }
    import duckdb

    con = duckdb.connect(out if out is not None else ":memory:")
    _fill(con, arrow, meta)
    if parquet_dir:
        os.makedirs(parquet_dir, exist_ok=True)
        for name in arrow:
            target = os.path.join(parquet_dir, f"{name}.parquet")
            if os.path.exists(target) and not force:
                raise FileExistsError(f"{target}: already exists (pass --force to replace it)")
            con.execute(f"COPY \"{name}\" TO '{target}' (FORMAT PARQUET)")
    db = Database(con, out or ":memory:", meta)
    res = LoadResult(out or ":memory:", {k: v.num_rows for k, v in arrow.items()}, stats, warnings, losses)
    return db, res


class Database:
    """An execution database: `db.sql(...)`, `db.table(name)`, `db.df(name)`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, meta: dict | None = None):
        self.con = con
        self.path = path
        if meta is None:
            meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
        self.meta = meta

    @property
    def warnings(self) -> list[str]:
        return list(self.meta.get("warnings", []))

    @property
    def losses(self) -> list:
        return list(self.meta.get("losses", []))

    def sql(self, query: str, params=None):
        """Runs SQL; returns a pandas DataFrame."""
        return self.con.execute(query, params or []).df()

    def records(self, query: str, params=None) -> list[dict]:
        """Runs SQL; returns a list of dicts (no pandas needed)."""
        cur = self.con.execute(query, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def table(self, name: str):
        """A table or view as a pandas DataFrame."""
        return self.con.execute(f'SELECT * FROM "{name}"').df()

    def arrow(self, query: str):
        return self.con.execute(query).arrow()

    def tables(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def is_db(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    with builtins.open(path, "rb") as f:
        head = f.read(16)
    return b"DUCK" in head


def open(trace_or_db, *, heuristics: bool = True, read_only: bool = True) -> Database:  # noqa: A001 - the API's name
    """A Database over a DuckDB file written by `roscope load`, or over traces
    (loaded in memory). Analyses that store their results need `read_only=False`."""
    if isinstance(trace_or_db, (str, os.PathLike)) and is_db(os.fspath(trace_or_db)):
        import duckdb

        path = os.fspath(trace_or_db)
        con = duckdb.connect(path, read_only=read_only)
        try:
            ver = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.Error as exc:
            raise ValueError(f"{path}: not a roscope database ({exc})") from None
        if ver is None or json.loads(ver[0]) != SCHEMA_VERSION:
            raise ValueError(f"{path}: roscope database schema {ver and ver[0]} is not {SCHEMA_VERSION}; load the trace again")
        return Database(con, path)
    paths = [trace_or_db] if isinstance(trace_or_db, (str, os.PathLike)) else list(trace_or_db)
    db, _ = load(paths, None, heuristics=heuristics)
    return db
