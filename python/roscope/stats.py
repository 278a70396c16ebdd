"""Statistics over the execution database: per callback, per topic, per service, per node.

All computed in SQL (DuckDB) over the model's tables; durations in ns, with the
standard statistic set of roscope.percentiles (docs/analyses.md defines each
value). Each function returns a list of dicts (or a dict) and writes nothing.
Each reads its parts with SQL and assembles them with a function of its own
(`callback_rows`, `topic_rows`, `node_rows`, `summary_of`), which a short
recording's statistics computed by the core (`roscope.stats_core`) share.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from roscope.percentiles import aggregates, grouped, keys

if TYPE_CHECKING:
    from roscope.database import Database

# Callback runs that count: complete (start and end seen).
_RUNS = "SELECT * FROM callback_runs WHERE end_ts IS NOT NULL"

# A window of the trace (`roscope stats --window`, `roscope watch`): (start, end) in ns
# of the trace clock; a record is in it when its start (a run's start, a publication's
# earliest layer time, a take's time) is in [start, end). Rates are per second of it.


def _within(col: str, window) -> str:
    """SQL condition: `col` in the window (integers only: never text from input)."""
    if window is None:
        return "TRUE"
    return f"({col} >= {int(window[0])} AND {col} < {int(window[1])})"


def trace_span(db: Database) -> tuple[int, int]:
    """(first, last) event time over all threads, ns."""
    r = (db.con.execute("SELECT min(first_ts), max(last_ts) FROM threads").fetchall() or [None])[0]
    return (int(r[0] or 0), int(r[1] or 0))


def callbacks(db: Database, window=None):
    """Per callback; `window`: only the runs that start in it (see `_within`)."""
    first, last = window or trace_span(db)
    runs = f"SELECT * FROM ({_RUNS}) WHERE {_within('start_ts', window)}"
    # Durations per callback through `percentiles.grouped`: its exact percentiles fall
    # back to a sort that spills when a callback's runs do not fit DuckDB's budget.
    durations = grouped(db, f"SELECT callback_id, duration_ns AS x FROM ({runs})", ["callback_id"],
                        extra="count(*) AS runs, sum(x) AS busy_ns", what="callback statistics")
    # The periods of each callback's runs, on their own: joined with callbacks_info in
    # one statement they did not fit a budget (32 MiB, 6M runs) that each part fits.
    periods = db.records(f"""
        SELECT callback_id, avg(period) AS period_mean_ns, stddev_samp(period) AS period_jitter_ns FROM (
            SELECT callback_id, start_ts - lag(start_ts) OVER (PARTITION BY callback_id ORDER BY start_ts) AS period
            FROM ({runs}))
        WHERE period IS NOT NULL GROUP BY callback_id""")
    info = db.records("SELECT hostname, pid, procname, node, callback_id, handle, symbol, kind, topic, "
                      "period_ns AS timer_period_ns FROM callbacks_info")
    return callback_rows(info, durations, periods, last - first)


def callback_rows(info: list[dict], durations: list[dict], periods: list[dict], span: int) -> list[dict]:
    """`callbacks`' rows from its parts (also the core's, `roscope.stats_core`): `info`,
    callbacks_info's columns; `durations`, `grouped` rows per callback_id with `runs` and
    `busy_ns`; `periods`, per callback_id its timer's period mean and jitter; `span`, ns."""
    span = max(span, 1)
    durations = {r["callback_id"]: r for r in durations}
    periods = {r["callback_id"]: r for r in periods}
    rows = []
    for c in info:
        d = durations.get(c["callback_id"])
        if d is None:  # no complete run
            continue
        p = periods.get(c["callback_id"], {}) if c["kind"] == "timer" else {}
        period = {k: p.get(k) for k in ("period_mean_ns", "period_jitter_ns")}
        rows.append({**c, "count": d["runs"], **{k: d[k] for k in _CALLBACK_KEYS}, **period, "cpu_share": d["busy_ns"] / span})
    # busy time DESC, then callback id
    rows.sort(key=lambda r: (-r["busy_ns"], r["callback_id"]))
    return rows


_CALLBACK_KEYS = (*keys(), "busy_ns")


# The parts of a topic's row, one query each, keyed by topic. In one statement DuckDB
# holds every part's joins and aggregates at once: on 100M events (12M links) that
# needed more than the 256 MiB budget, while each part alone fits in it.
_TOPIC_PARTS = (
    # publications
    "SELECT topic, count(*) AS publications FROM publications_info WHERE topic IS NOT NULL AND {pub} GROUP BY topic",
    # (deliveries and their latency: `_latencies`)
    # publications without a link
    """SELECT pi.topic, count(*) FILTER (WHERE l.publication_id IS NULL) AS unmatched_publications
        FROM publications_info pi LEFT JOIN (SELECT DISTINCT publication_id FROM links) l USING (publication_id)
        WHERE pi.topic IS NOT NULL AND {pubi} GROUP BY pi.topic""",
    # takes, and those without a link
    """SELECT s.name AS topic, count(*) AS takes, count(*) FILTER (WHERE l.take_id IS NULL) AS unmatched_takes
        FROM takes t JOIN subscriptions s USING (subscription_id)
        LEFT JOIN (SELECT DISTINCT take_id FROM links WHERE take_id IS NOT NULL) l USING (take_id)
        WHERE t.taken = 1 AND s.name IS NOT NULL AND {take} GROUP BY s.name""",
    # drops
    "SELECT topic, sum(dropped) AS drops FROM subscription_drops GROUP BY topic",
)
_LAT_KEYS = keys(prefix="lat_")


def _latencies(db: Database, window=None) -> list[dict]:
    """Per topic: deliveries, their latency statistics and how many rest on a heuristic
    link (`grouped` rows with `deliveries` and `heuristic_links`); through
    `percentiles.grouped`, whose exact percentiles fall back to a sort that spills when
    a topic's deliveries do not fit the budget."""
    return grouped(db, "SELECT topic, callback_start_ts - publish_ts AS x, heuristic FROM links_info "
                       f"WHERE callback_start_ts IS NOT NULL AND {_within('publish_ts', window)}", ["topic"],
                   extra="count(*) AS deliveries, count(*) FILTER (WHERE heuristic = 1) AS heuristic_links",
                   what="topic statistics")


_TRANSPORT_KEYS = keys(prefix="transport_")


def _transports(db: Database, window=None) -> list[dict]:
    """Per topic: the transport latency, publication to take, of each link with a take
    (`grouped` rows with `n`, the links): what a trace without callback events (or a
    take whose callback run is not known) still measures; `window`: the links whose
    publication is in it."""
    return grouped(db, "SELECT topic, take_ts - publish_ts AS x FROM links_info "
                       f"WHERE take_ts IS NOT NULL AND {_within('publish_ts', window)}",
                   ["topic"], extra="count(*) AS n", what="topic statistics")


def topics(db: Database, window=None):
    """Per topic; `window`: only the publications, takes, deliveries and transports (by
    their publication) in it (see `_within`); drops are then not counted (None)."""
    first, last = window or trace_span(db)
    where = {"pub": _within("publish_ts", window), "pubi": _within("pi.publish_ts", window), "take": _within("t.ts", window)}
    pubs, linked, tk = (db.records(q.format(**where)) for q in _TOPIC_PARTS[:3])
    return topic_rows(db.records("SELECT topic, publishers, subscriptions FROM topics"), pubs, linked, tk,
                      db.records(_TOPIC_PARTS[3]) if window is None else None, _latencies(db, window),
                      _transports(db, window), last - first)


def topic_rows(topics: list[dict], pubs: list[dict], linked: list[dict], tk: list[dict], drops: list[dict] | None,
               lat: list[dict], trans: list[dict], span: int) -> list[dict]:
    """`topics`' rows from its parts (also the core's, `roscope.stats_core`), each a list
    of rows with a `topic`: the `topics` view; per topic its publications, unmatched
    publications, takes and unmatched takes, drops (None: not counted), delivery
    latencies (`_latencies`) and transport latencies (`_transports`); `span`, ns."""
    def by_topic(rows):
        return {r["topic"]: r for r in rows}

    pubs, linked, tk, lat, trans = by_topic(pubs), by_topic(linked), by_topic(tk), by_topic(lat), by_topic(trans)
    dr = by_topic(drops or [])
    span_s = max(span, 1) / 1e9
    rows = []
    for t in topics:
        name, none = t["topic"], {}
        n = pubs.get(name, none).get("publications", 0)
        la, tr = lat.get(name, none), trans.get(name, none)
        rows.append({
            **t, "publications": n, "rate_hz": n / span_s,
            "takes": tk.get(name, none).get("takes", 0), "deliveries": la.get("deliveries", 0),
            **{k: la.get(s) for k, s in zip(_LAT_KEYS, keys())}, "heuristic_links": la.get("heuristic_links", 0),
            "transport_count": tr.get("n", 0), **{k: tr.get(s) for k, s in zip(_TRANSPORT_KEYS, keys())},
            "unmatched_publications": linked.get(name, none).get("unmatched_publications", 0) if t["subscriptions"] > 0 else None,
            "unmatched_takes": tk.get(name, none).get("unmatched_takes", 0), "drops": dr.get(name, none).get("drops"),
        })
    # publications DESC, then topic as DuckDB orders text (by bytes); the view's topics are never null
    rows.sort(key=lambda r: (-r["publications"], r["topic"].encode()))
    return rows


# One row per service call (docs/model.md, Services): its service (the server's name, else the
# client's), the server's node, and the times of its request and response.
_CALLS = """
    SELECT coalesce(sv.name, cl.name) AS service, sc.client_id, sc.method,
           CASE WHEN n.name IS NULL THEN NULL WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                ELSE rtrim(n.namespace, '/') || '/' || n.name END AS server_node,
           rp.ts AS request_ts, rt.ts AS take_ts, sp.ts AS response_ts, st.ts AS response_take_ts
    FROM service_calls sc
    LEFT JOIN services sv ON sv.service_id = sc.service_id
    LEFT JOIN clients cl ON cl.client_id = sc.client_id
    LEFT JOIN nodes n ON n.node_id = sv.node_id
    LEFT JOIN publications rp ON rp.publication_id = sc.request_publication_id
    LEFT JOIN takes rt ON rt.take_id = sc.request_take_id
    LEFT JOIN publications sp ON sp.publication_id = sc.response_publication_id
    LEFT JOIN takes st ON st.take_id = sc.response_take_id"""


def services(db: Database):
    """Per service (actions: their goal, cancel and result services): calls (requests seen
    sent or taken), clients, answered calls (response taken by the client), server time (request
    taken to response sent, at the server) and round trip (request sent to response taken, at
    the client), in ns."""
    if not db.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'service_calls'").fetchall()[0][0]:
        return []  # a database of an older roscope
    return db.records(f"""
        SELECT service, any_value(server_node) AS server_node, count(*) AS calls,
               count(DISTINCT client_id) AS clients, count(response_take_ts) AS answered,
               {aggregates("response_ts - take_ts", prefix="server_", count="server_count")},
               {aggregates("response_take_ts - request_ts", prefix="rtt_", count="rtt_count")},
               count(*) FILTER (WHERE method = 'service_sequence_nearest') AS heuristic_links
        FROM ({_CALLS}) WHERE service IS NOT NULL
        GROUP BY service ORDER BY calls DESC, service""")


def nodes(db: Database):
    first, last = trace_span(db)
    return node_rows(db.records(
        f"""
        WITH runs AS ({_RUNS}),
        cb AS (
            SELECT c.node, c.hostname, c.pid, count(DISTINCT c.callback_id) AS callbacks, count(r.run_id) AS runs,
                   coalesce(sum(r.duration_ns), 0) AS busy_ns
            FROM callbacks_info c LEFT JOIN runs r USING (callback_id)
            WHERE c.node IS NOT NULL GROUP BY c.node, c.hostname, c.pid),
        pb AS (
            SELECT CASE WHEN n.namespace IS NULL OR n.namespace = '/' THEN '/' || ltrim(n.name, '/')
                        ELSE rtrim(n.namespace, '/') || '/' || n.name END AS node,
                   p.pid, count(*) AS publications
            FROM publications_info pi JOIN nodes n ON n.node_id = pi.node_id JOIN processes p ON p.proc_id = n.proc_id
            GROUP BY 1, 2)
        SELECT cb.node, cb.hostname, cb.pid, cb.callbacks, cb.runs, cb.busy_ns, coalesce(pb.publications, 0) AS publications
        FROM cb LEFT JOIN pb USING (node, pid)
        ORDER BY cb.busy_ns DESC, cb.node, cb.pid"""
    ), last - first)


def node_rows(rows: list[dict], span: int) -> list[dict]:
    """`nodes`' rows (node, hostname, pid, callbacks, runs, busy_ns, publications, in
    their order) with each node's CPU share of `span` (ns)."""
    span = max(span, 1)
    return [{**{k: r[k] for k in ("node", "hostname", "pid", "callbacks", "runs", "busy_ns")},
             "cpu_share": r["busy_ns"] / span, "publications": r["publications"]} for r in rows]


def warnings(s: dict, rows: list[dict]) -> list[str]:
    """What a reader of `summary` `s` and the topic rows (`topics`) must know to read
    them: a trace without take events, with takes but no transport link, or without
    callback events, and topics whose publications were all left unmatched; each says
    what the "unmatched" columns then mean."""
    out = []
    subscribed = [t for t in rows if t["subscriptions"] and t["publications"]]
    unm = sum(t["unmatched_publications"] or 0 for t in subscribed)
    if s["publications"] and not s["takes"]:
        out.append(
            f"the trace has no take events (rmw_take/rcl_take, or a ROS 1 tracer's): publications are matched to the "
            f"callbacks that received them only where something else links them ({s['links']:,} transport links), so "
            f"'unm pubs' ({unm:,} on subscribed topics) counts publications roscope could not match, not lost messages, "
            "and a topic without links has no delivery latency (ros2_tracing records takes from Humble on)")
    elif s["takes"] and not s["links"]:
        out.append(
            f"the trace has {s['takes']:,} takes but no transport link: nothing in it says which publication each take "
            "received (a DDS source timestamp, CARET's stamps, a ROS 1 connection and sequence number), so 'unm pubs' "
            f"({unm:,}) and 'unm takes' ({s['takes']:,}) count messages roscope could not match, not lost messages; "
            "there are no latencies")
    elif unm:
        none = [t["topic"] for t in subscribed if t["unmatched_publications"] == t["publications"]]
        if none:
            out.append(
                f"{len(none)} subscribed topic{'s have' if len(none) != 1 else ' has'} no publication matched to a take "
                f"({', '.join(none[:5])}{', ...' if len(none) > 5 else ''}): their subscribers may be untraced (another "
                "host, a process outside the session) or their takes not matchable; 'unm pubs' counts publications that "
                "no traced take received, not necessarily lost messages")
    if s["publications"] and not s["callback_runs"] and not s["incomplete_runs"]:
        n = sum(t["transport_count"] for t in rows)
        out.append(
            "the trace has no callback events (callback_start/callback_end: an rclpy system without roscope's hook, "
            "or a recording without them): there are no callback durations and no delivery latency (publication to "
            f"callback start); the topics' transport latency (publication to take) is shown instead ({n:,} links)"
            if n else "the trace has no callback events: there are no callback durations and no delivery latency")
    return out


#: The counts of `summary`, as the rows of one UNION ALL (one query instead of ten:
#: 4 ms instead of 7 on a 113,754-event trace; as ten scalar subqueries of one SELECT,
#: DuckDB's join-order search over them took 48 ms).
_SUMMARY_COUNTS = {
    "processes": "SELECT count(*) FROM processes",
    "nodes": "SELECT count(*) FROM nodes",
    "callbacks": "SELECT count(*) FROM callbacks",
    "callback_runs": "SELECT count(*) FROM callback_runs WHERE end_ts IS NOT NULL",
    "incomplete_runs": "SELECT count(*) FROM callback_runs WHERE end_ts IS NULL",
    "publications": "SELECT count(*) FROM publications",
    "takes": "SELECT count(*) FROM takes WHERE taken = 1",
    "links": "SELECT count(*) FROM links",
    "events_discarded": "SELECT coalesce(sum(events_discarded), 0) FROM traces",
    "packets_lost": "SELECT coalesce(sum(packets_lost), 0) FROM traces",
}


def summary(db: Database) -> dict:
    rows = db.con.execute(" UNION ALL ".join(f"SELECT {i} AS i, ({q}) AS n" for i, q in enumerate(_SUMMARY_COUNTS.values()))
                          + " ORDER BY i").fetchall()
    return summary_of(trace_span(db), dict(zip(_SUMMARY_COUNTS, (n for _i, n in rows))),
                      dict(db.con.execute("SELECT method, count(*) FROM links GROUP BY 1 ORDER BY 1").fetchall()),
                      db.meta.get("stats", {}))


def summary_of(span: tuple[int, int], counts: dict, links_by_method: dict, model_stats: dict) -> dict:
    """`summary` from its parts (also the core's, `roscope.stats_core`): the trace's span
    (first, last), the counts of `_SUMMARY_COUNTS`, links per method, the build's stats."""
    first, last = span
    return {
        "first_ts": first,
        "last_ts": last,
        "duration_ns": last - first,
        **{k: counts[k] for k in ("processes", "nodes", "callbacks", "callback_runs", "incomplete_runs",
                                  "publications", "takes", "links")},
        "links_by_method": links_by_method,
        "model_stats": model_stats,
        "events_discarded": counts["events_discarded"],
        "packets_lost": counts["packets_lost"],
    }
