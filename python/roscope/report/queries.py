"""What the report needs beyond the analyses of roscope.stats and roscope.flow:
aggregated or sampled in DuckDB, so that what reaches the page is bounded
whatever the trace's length (docs/report.md says what each function bounds).

Library functions over the model's tables (docs/model.md) and the flow's result
tables; each returns plain lists/dicts and writes nothing into the database.
"""
from __future__ import annotations

import numpy as np

from roscope.flavour import detect
from roscope.percentiles import aggregates
from roscope.trace import Trace

#: The model tables that have a `known` column (objects whose init event may be missing).
OBJECT_TABLES = ("nodes", "publishers", "subscriptions", "timers", "services", "clients", "callbacks")


def records(con, sql: str, params=None) -> list[dict]:
    cur = con.execute(sql, params if params is not None else [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


# ---------------------------------------------------------------- overview


def overview(con) -> dict:
    """Hosts, processes (ROS ones listed, the others counted), nodes."""
    hosts = [r[0] for r in con.execute("SELECT hostname FROM hosts ORDER BY hostname").fetchall()]
    procs = records(con, """
        SELECT h.hostname, p.pid, p.procname, p.first_ts, p.last_ts, p.events,
               (SELECT count(*) FROM nodes n WHERE n.proc_id = p.proc_id) AS nodes,
               (SELECT count(*) FROM callbacks c WHERE c.proc_id = p.proc_id) AS callbacks,
               (SELECT count(*) FROM callback_runs r JOIN callbacks c USING (callback_id) WHERE c.proc_id = p.proc_id) AS runs
        FROM processes p JOIN hosts h USING (host_id) ORDER BY h.hostname, p.pid, p.first_ts""")
    ros = [p for p in procs if p["nodes"] or p["callbacks"]]
    nodes = records(con, """
        SELECT CASE WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                    ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node, p.pid, h.hostname
        FROM nodes n JOIN processes p USING (proc_id) JOIN hosts h USING (host_id) ORDER BY 1""")
    return {"hosts": hosts, "processes": ros, "other_processes": len(procs) - len(ros), "nodes": nodes}


def flavours(paths) -> list[str]:
    """The ROS flavour of each trace ("ROS 2 (Humble) + CARET"), from the traces' events."""
    try:
        summary = Trace(list(paths)).summary()
    except Exception:  # the traces are gone (a database whose sources moved): not worth failing the report
        return []
    out = []
    for tr in summary["traces"]:
        f = detect(tr)
        text = f["flavour"] + (f" ({f['distro']})" if f.get("distro") else "") + (" + CARET" if f.get("caret") else "")
        if text not in out:
            out.append(text)
    return out


def quality(con, summary: dict, topics: list[dict]) -> dict:
    """The facts that limit what the numbers mean, counted."""
    unknown = {}
    have = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.columns WHERE column_name = 'known'").fetchall()}
    for t in OBJECT_TABLES:
        if t in have:  # names from OBJECT_TABLES only, never from the database
            n = con.execute(f'SELECT count(*) FROM "{t}" WHERE known = 0').fetchall()[0][0]
            if n:
                unknown[t] = int(n)
    heur = (con.execute("SELECT count(*) FILTER (WHERE heuristic = 1), count(*) FROM links").fetchall() or [None])[0]
    return {
        "events_discarded": int(summary.get("events_discarded") or 0),
        "packets_lost": int(summary.get("packets_lost") or 0),
        "lost_reports": int(con.execute("SELECT count(*) FROM lost").fetchall()[0][0]),
        "unmatched_publications": int(sum(t.get("unmatched_publications") or 0 for t in topics)),
        "unmatched_takes": int(sum(t.get("unmatched_takes") or 0 for t in topics)),
        "heuristic_links": int(heur[0]),
        "links": int(heur[1]),
        "unknown_init": unknown,
        "incomplete_runs": int(summary.get("incomplete_runs") or 0),
        "unmatched_callback_ends": int((summary.get("model_stats") or {}).get("unmatched_callback_ends") or 0),
    }


# ---------------------------------------------------------------- callbacks


def callback_quartiles(con) -> dict[int, dict]:
    """Per callback: the standard statistics with quartiles of its run durations."""
    rows = records(con, f"""
        SELECT callback_id, {aggregates("duration_ns", quartiles=True)}
        FROM callback_runs WHERE end_ts IS NOT NULL GROUP BY callback_id""")
    return {r["callback_id"]: r for r in rows}


def callback_series(con, first: int, last: int, callback_ids: list[int], points: int) -> dict[int, dict]:
    """Duration over time per callback, at most `points` points each: every run
    when it has that few, else `points` equal time bins with the min, mean and
    max duration of the runs in each (times in ms from the trace's start)."""
    if not callback_ids:
        return {}
    width = max(last - first, 1) / points
    con.execute("CREATE OR REPLACE TEMP TABLE _report_cbs AS SELECT unnest(?::BIGINT[]) AS callback_id", [list(callback_ids)])
    raw = con.execute("""
        WITH r AS (SELECT callback_id, start_ts, duration_ns, count(*) OVER (PARTITION BY callback_id) AS n
                   FROM callback_runs JOIN _report_cbs USING (callback_id) WHERE end_ts IS NOT NULL)
        SELECT callback_id, (start_ts - ?) / 1e6 AS t, duration_ns / 1e6 AS y FROM r WHERE n <= ?
        ORDER BY callback_id, start_ts""", [first, points]).fetchnumpy()
    binned = con.execute("""
        WITH r AS (SELECT callback_id, start_ts, duration_ns, count(*) OVER (PARTITION BY callback_id) AS n
                   FROM callback_runs JOIN _report_cbs USING (callback_id) WHERE end_ts IS NOT NULL)
        SELECT callback_id, floor((start_ts - ?) / ?) AS bin, (min(start_ts) - ?) / 1e6 AS t,
               avg(duration_ns) / 1e6 AS y, min(duration_ns) / 1e6 AS lo, max(duration_ns) / 1e6 AS hi, count(*) AS runs
        FROM r WHERE n > ? GROUP BY callback_id, bin ORDER BY callback_id, bin""", [first, width, first, points]).fetchnumpy()
    con.execute("DROP TABLE _report_cbs")
    out: dict[int, dict] = {}
    for data, is_binned in ((raw, False), (binned, True)):
        ids = np.asarray(data["callback_id"])
        for cb in np.unique(ids):
            sel = ids == cb
            s = {"binned": is_binned, "t": _round(data["t"][sel], 3), "y": _round(data["y"][sel], 4)}
            if is_binned:
                s["lo"] = _round(data["lo"][sel], 4)
                s["hi"] = _round(data["hi"][sel], 4)
            out[int(cb)] = s
    return out


def _round(a, digits: int) -> list:
    return np.round(np.asarray(a, dtype=np.float64), digits).tolist()


def timer_periods(con) -> list[dict]:
    """Per timer callback: its nominal period and the statistics of the actual
    periods (time between the starts of consecutive runs)."""
    return records(con, f"""
        WITH p AS (SELECT r.callback_id,
                          r.start_ts - lag(r.start_ts) OVER (PARTITION BY r.callback_id ORDER BY r.start_ts) AS period
                   FROM callback_runs r JOIN callbacks c USING (callback_id) WHERE c.kind = 'timer')
        SELECT p.callback_id, any_value(ci.period_ns) AS nominal_ns, {aggregates("p.period", quartiles=True)}
        FROM p JOIN callbacks_info ci USING (callback_id) WHERE p.period IS NOT NULL
        GROUP BY p.callback_id ORDER BY p.callback_id""")


# ---------------------------------------------------------------- topics


def topic_latency_quartiles(con) -> dict[str, dict]:
    """Per topic: publication-to-callback-start latency with quartiles (the set
    of `roscope stats`' lat_* values, plus lat_p25_ns and lat_p75_ns)."""
    rows = records(con, f"""
        SELECT topic, {aggregates("callback_start_ts - publish_ts", prefix="lat_", quartiles=True)}
        FROM links_info WHERE callback_start_ts IS NOT NULL GROUP BY topic""")
    return {r["topic"]: r for r in rows}


# ---------------------------------------------------------------- threads


def threads(con) -> list[dict]:
    """Per thread that ran callbacks or has executor states: what ran there, and
    how busy it was (outermost callback runs / the thread's traced span)."""
    return records(con, """
        WITH busy AS (SELECT thread_id, count(*) AS runs, sum(duration_ns) FILTER (WHERE depth = 0) AS busy_ns
                      FROM callback_runs WHERE end_ts IS NOT NULL GROUP BY thread_id),
        names AS (SELECT r.thread_id, string_agg(DISTINCT c.node, ', ' ORDER BY c.node) AS nodes
                  FROM callback_runs r JOIN callbacks_info c USING (callback_id) WHERE c.node IS NOT NULL GROUP BY 1),
        ex AS (SELECT DISTINCT thread_id FROM executor_states)
        SELECT t.thread_id, t.tid, p.pid, p.procname, h.hostname, n.nodes, coalesce(b.runs, 0) AS runs,
               coalesce(b.busy_ns, 0) AS busy_ns, t.last_ts - t.first_ts AS traced_ns,
               ex.thread_id IS NOT NULL AS has_executor
        FROM threads t JOIN processes p USING (proc_id) JOIN hosts h USING (host_id)
        LEFT JOIN busy b USING (thread_id) LEFT JOIN names n USING (thread_id) LEFT JOIN ex USING (thread_id)
        WHERE b.thread_id IS NOT NULL OR ex.thread_id IS NOT NULL
        ORDER BY h.hostname, p.pid, t.tid""")


def default_window(con, first: int, last: int, limit: int) -> tuple[int, int]:
    """A window around the middle of the trace holding at most about `limit`
    intervals (callback runs and executor states), at most 1 s and at least 1 ms."""
    n = con.execute("""SELECT (SELECT count(*) FROM callback_runs WHERE end_ts IS NOT NULL)
                              + (SELECT count(*) FROM executor_states)""").fetchall()[0][0]
    length = max(last - first, 1)
    if n > limit:
        length = int(length * limit / n)
    length = int(min(max(length, 1_000_000), 1_000_000_000, max(last - first, 1)))
    mid = first + (last - first) // 2
    lo = max(first, mid - length // 2)
    return lo, lo + length


def timeline(con, lo: int, hi: int, limit: int) -> dict:
    """Executor states and callback runs that overlap [lo, hi], at most `limit`
    of each (the earliest), clipped to the window; times in ms from `lo`."""
    states = records(con, """
        SELECT e.thread_id, e.state, (greatest(e.start_ts, $lo) - $lo) / 1e6 AS t0,
               (least(e.end_ts, $hi) - greatest(e.start_ts, $lo)) / 1e6 AS d
        FROM executor_states e WHERE e.end_ts >= $lo AND e.start_ts <= $hi ORDER BY e.start_ts LIMIT $n""",
                     {"lo": lo, "hi": hi, "n": limit + 1})
    runs = records(con, """
        SELECT r.thread_id, r.callback_id, r.depth, (greatest(r.start_ts, $lo) - $lo) / 1e6 AS t0,
               (least(r.end_ts, $hi) - greatest(r.start_ts, $lo)) / 1e6 AS d, r.duration_ns
        FROM callback_runs r WHERE r.end_ts IS NOT NULL AND r.end_ts >= $lo AND r.start_ts <= $hi
        ORDER BY r.start_ts LIMIT $n""", {"lo": lo, "hi": hi, "n": limit + 1})
    truncated = len(states) > limit or len(runs) > limit
    return {"lo": lo, "hi": hi, "states": states[:limit], "runs": runs[:limit], "truncated": truncated}


# ---------------------------------------------------------------- data flows


def latency_samples(con, flows: str, per_path: int) -> dict[int, dict]:
    """End-to-end latencies (ms) per path: all of them, or `per_path` chosen by a
    hash of the flow id (a deterministic uniform sample)."""
    x = con.execute(f"""
        WITH f AS (SELECT path_id, latency_ns, row_number() OVER (PARTITION BY path_id ORDER BY hash(flow_id)) AS k,
                          count(*) OVER (PARTITION BY path_id) AS n FROM {flows})
        SELECT path_id, latency_ns / 1e6 AS ms, n FROM f WHERE k <= ? ORDER BY path_id, ms""", [per_path]).fetchnumpy()
    out = {}
    ids = np.asarray(x["path_id"])
    for p in np.unique(ids):
        sel = ids == p
        out[int(p)] = {"ms": _round(x["ms"][sel], 4), "of": int(x["n"][sel][0])}
    return out


def segment_means(con, segments: str) -> dict[tuple, dict]:
    """Mean duration of the distinct segments of the data flows (`segments`: the
    flow's `data_flow_segments`), per path element: communication by (topic,
    receiving callback), computation by (callback, topic it publishes on, or None
    for a run followed by another run of its node), idle by (callback, next
    callback). Keys: ("communication", topic, callback_id), ("computation",
    callback_id, topic or None), ("idle", callback_id, callback_id)."""
    rows = con.execute(f"""
        SELECT s.kind,
               CASE s.kind WHEN 'communication' THEN pa.topic ELSE ra.callback_id::VARCHAR END AS ka,
               CASE s.kind WHEN 'communication' THEN rb.callback_id::VARCHAR WHEN 'idle' THEN rb.callback_id::VARCHAR
                           ELSE pb.topic END AS kb,
               count(*) AS n, avg(s.duration_ns) AS mean_ns
        FROM {segments} s
        LEFT JOIN publications_info pa ON s.kind = 'communication' AND pa.publication_id = s.a
        LEFT JOIN callback_runs ra ON s.kind <> 'communication' AND ra.run_id = s.a
        LEFT JOIN callback_runs rb ON s.kind IN ('communication', 'idle') AND rb.run_id = s.b
        LEFT JOIN publications_info pb ON s.kind = 'computation' AND s.b IS NOT NULL AND pb.publication_id = s.b
        GROUP BY ALL""").fetchall()
    return {(k, a, b): {"count": n, "mean_ns": m} for k, a, b, n, m in rows}


def representative_steps(con, flows: str, steps: str, path_ids: list[int]) -> dict[int, list[dict]]:
    """The steps of one flow (the first) of each path, labelled: callback runs by
    node, kind and topic/period; publications by topic."""
    if not path_ids:
        return {}
    rows = records(con, f"""
        WITH first AS (SELECT path_id, min(flow_id) AS flow_id FROM {flows} WHERE list_contains(?::BIGINT[], path_id) GROUP BY 1)
        SELECT f.path_id, s.step, s.is_run, s.id, s.edge, c.callback_id, c.node, c.kind, c.topic AS cb_topic, c.period_ns,
               pi.topic AS topic, pi.publish_ts, r.start_ts, r.end_ts
        FROM first f JOIN {steps} s ON s.flow_id = f.flow_id
        LEFT JOIN callback_runs r ON s.is_run = 1 AND r.run_id = s.id
        LEFT JOIN callbacks_info c ON c.callback_id = r.callback_id
        LEFT JOIN publications_info pi ON s.is_run = 0 AND pi.publication_id = s.id
        ORDER BY f.path_id, s.step""", [list(path_ids)])
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["path_id"], []).append(r)
    return out


def path_doubts(con, flows: str) -> dict[int, dict]:
    """Per path of a data-flow search (`flows`: the SQL name of its `data_flows`
    table, `DataFlows.sql`): its flows, how many rest on fallback
    intra-node edges, and, when the search marks racy flows (an `uncertain`
    column), how many are uncertain (else None)."""
    cols = {r[0] for r in con.execute(f"SELECT * FROM {flows} LIMIT 0").description}
    racy = "count(*) FILTER (WHERE coalesce(uncertain::BOOLEAN, false))" if "uncertain" in cols else "NULL"
    rows = records(con, f"""
        SELECT path_id, count(*) AS flows, count(*) FILTER (WHERE fallback_edges > 0) AS on_fallback, {racy} AS uncertain
        FROM {flows} GROUP BY path_id""")
    return {r["path_id"]: r for r in rows}
