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
# earliest layer time, a take's time) is in [start, end). Rates are per second of it
# (`topic_rate`).


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
    # their times, what the rate is computed from (`topic_rate`): how many have one, the
    # first and the last, the mean and sample deviation of the periods between them. The
    # deviation from exact integer sums (HUGEINT), not stddev_samp: its floating-point partial
    # states combine in an order DuckDB's threads and memory budget choose, so its last bits
    # varied between two runs of one query (test_cli_faults' budget test)
    """SELECT topic, count(publish_ts) AS timed_publications, min(publish_ts) AS first_publish_ts,
              max(publish_ts) AS last_publish_ts, avg(period) AS period_mean_ns,
              CASE WHEN count(period) > 1 THEN sqrt(greatest(0, (count(period) * sum(period::HUGEINT * period)
                   - sum(period::HUGEINT) * sum(period::HUGEINT))::DOUBLE)
                   / (count(period)::DOUBLE * (count(period) - 1))) END AS period_jitter_ns
        FROM (SELECT topic, publish_ts,
                     publish_ts - lag(publish_ts) OVER (PARTITION BY topic ORDER BY publish_ts) AS period
              FROM publications_info WHERE topic IS NOT NULL AND publish_ts IS NOT NULL AND {pub})
        GROUP BY topic""",
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
    return grouped(db, f"SELECT topic, {_NOT_NEGATIVE.format(d='d')} AS x, d, heuristic FROM ("
                       "SELECT topic, callback_start_ts - publish_ts AS d, heuristic FROM links_info "
                       f"WHERE callback_start_ts IS NOT NULL AND {_within('publish_ts', window)})", ["topic"],
                   extra="count(*) AS deliveries, count(*) FILTER (WHERE heuristic = 1) AS heuristic_links, "
                         "count(*) FILTER (WHERE d < 0) AS negative_latencies",
                   what="topic statistics")


#: SQL: a latency `d` as a measurement, NULL when negative. A negative latency measures no
#: time: the event of the earlier side was emitted after what it reports (an rclpy hook's
#: `rmw_send_request` after the DDS write, whose answer the client already took); such rows
#: are counted (`negative_latencies`, `rtt_negative`, ...) and said in `warnings`, never
#: shown as a minimum or in a mean.
_NOT_NEGATIVE = "CASE WHEN {d} >= 0 THEN {d} END"


_TRANSPORT_KEYS = keys(prefix="transport_")


def _transports(db: Database, window=None) -> list[dict]:
    """Per topic: the transport latency, publication to take, of each link with a take
    (`grouped` rows with `n`, the links): what a trace without callback events (or a
    take whose callback run is not known) still measures; `window`: the links whose
    publication is in it."""
    return grouped(db, f"SELECT topic, {_NOT_NEGATIVE.format(d='d')} AS x, d FROM ("
                       "SELECT topic, take_ts - publish_ts AS d FROM links_info "
                       f"WHERE take_ts IS NOT NULL AND {_within('publish_ts', window)})",
                   ["topic"], extra="count(*) AS n, count(*) FILTER (WHERE d < 0) AS negative", what="topic statistics")


def topics(db: Database, window=None):
    """Per topic; `window`: only the publications, takes, deliveries and transports (by
    their publication) in it (see `_within`); drops are then not counted (None)."""
    where = {"pub": _within("publish_ts", window), "pubi": _within("pi.publish_ts", window), "take": _within("t.ts", window)}
    pubs, times, linked, tk = (db.records(q.format(**where)) for q in _TOPIC_PARTS[:4])
    return topic_rows(db.records("SELECT topic, publishers, subscriptions FROM topics"), pubs, times, linked, tk,
                      db.records(_TOPIC_PARTS[4]) if window is None else None, _latencies(db, window),
                      _transports(db, window), None if window is None else window[1] - window[0])


def topic_rate(timed: int, first: int | None, last: int | None, window_ns: int | None = None) -> float | None:
    """A topic's rate, Hz: the one definition every verb shows (`roscope stats`, `watch`,
    `check`'s `rate:` budgets, the report, `dataset stats`; docs/analyses.md "Topic rate").

    Over the whole recording, the topic's own: its publications (`timed` of them with a
    time, all its publishers together) over its active span, the first to the last of them,
    (timed - 1) / (last - first), what `ros2 topic hz` says of a steady publisher, whatever
    the recording holds before the first or after the last (0 without any publication; None
    with one: no period). Over a window (`window_ns`, its length: `stats --window`, `watch`), its
    publications in the window per second of the window."""
    if window_ns is not None:
        return timed * 1e9 / max(window_ns, 1)
    if timed == 0:
        return 0.0
    if timed < 2 or first is None or last is None or last <= first:
        return None
    return (timed - 1) * 1e9 / (last - first)


def core_rows(p: dict, span: int, window_ns: int | None = None) -> tuple[list[dict], list[dict]]:
    """(`callbacks`' rows, `topics`' rows) from the core's parts (`_core.model_statistics`,
    `_core.LiveStats.window`): over the whole recording of `span` ns, or over a window of
    `window_ns` (as `callbacks(db, window)` and `topics(db, window)`: its length for the
    shares and rates, drops not counted)."""
    length = span if window_ns is None else window_ns
    return (callback_rows(p["callback_info"], p["durations"], p["periods"], length),
            topic_rows(p["topics"], p["publications"], p["publication_times"], p["linked"], p["takes"],
                       p["drops"] if window_ns is None else None, p["latencies"], p["transports"], window_ns))


#: The keys of a topic's rate and period in `topics`' rows (docs/analyses.md "Topic rate").
RATE_KEYS = ("rate_hz", "first_publish_ts", "last_publish_ts", "period_mean_ns", "period_jitter_ns")


def topic_rows(topics: list[dict], pubs: list[dict], times: list[dict], linked: list[dict], tk: list[dict],
               drops: list[dict] | None, lat: list[dict], trans: list[dict], window_ns: int | None) -> list[dict]:
    """`topics`' rows from its parts (also the core's, `roscope.stats_core`), each a list
    of rows with a `topic`: the `topics` view; per topic its publications, their times
    (`timed_publications`, `first_publish_ts`, `last_publish_ts`, `period_mean_ns`,
    `period_jitter_ns`: the rate's, `topic_rate`), unmatched publications, takes and
    unmatched takes, drops (None: not counted), delivery latencies (`_latencies`) and
    transport latencies (`_transports`); `window_ns`, the window's length (None: the
    whole recording)."""
    def by_topic(rows):
        return {r["topic"]: r for r in rows}

    pubs, times, linked, tk = by_topic(pubs), by_topic(times), by_topic(linked), by_topic(tk)
    lat, trans, dr = by_topic(lat), by_topic(trans), by_topic(drops or [])
    rows = []
    for t in topics:
        name, none = t["topic"], {}
        n = pubs.get(name, none).get("publications", 0)
        la, tr, ti = lat.get(name, none), trans.get(name, none), times.get(name, none)
        first, last = ti.get("first_publish_ts"), ti.get("last_publish_ts")
        rows.append({
            **t, "publications": n, "rate_hz": topic_rate(ti.get("timed_publications", 0), first, last, window_ns),
            "first_publish_ts": first, "last_publish_ts": last,
            "period_mean_ns": ti.get("period_mean_ns"), "period_jitter_ns": ti.get("period_jitter_ns"),
            "takes": tk.get(name, none).get("takes", 0), "deliveries": la.get("deliveries", 0),
            **{k: la.get(s) for k, s in zip(_LAT_KEYS, keys())}, "heuristic_links": la.get("heuristic_links", 0),
            "negative_latencies": la.get("negative_latencies", 0),
            "transport_count": tr.get("n", 0), **{k: tr.get(s) for k, s in zip(_TRANSPORT_KEYS, keys())},
            "negative_transports": tr.get("negative", 0),
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
    the client), in ns; a negative one is no measurement (`_NOT_NEGATIVE`): counted apart
    (`server_negative`, `rtt_negative`) and said in `service_warnings`."""
    if not db.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'service_calls'").fetchall()[0][0]:
        return []  # a database of an older roscope
    return db.records(f"""
        SELECT service, any_value(server_node) AS server_node, count(*) AS calls,
               count(DISTINCT client_id) AS clients, count(response_take_ts) AS answered,
               {aggregates(_NOT_NEGATIVE.format(d="(response_ts - take_ts)"), prefix="server_", count="server_count")},
               {aggregates(_NOT_NEGATIVE.format(d="(response_take_ts - request_ts)"), prefix="rtt_", count="rtt_count")},
               count(*) FILTER (WHERE response_ts < take_ts) AS server_negative,
               count(*) FILTER (WHERE response_take_ts < request_ts) AS rtt_negative,
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


def warnings(s: dict, rows: list[dict], services: list[dict] = ()) -> list[str]:
    """What a reader of `summary` `s`, the topic rows (`topics`) and the service rows
    (`services`) must know to read them: a trace without take events, with takes but no
    transport link, or without callback events, and topics whose publications were all
    left unmatched, each saying what the "unmatched" columns then mean; latencies that came
    out negative, left out of the statistics (`_NOT_NEGATIVE`), and why."""
    out = _negative_warnings(rows, services)
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


def _negative_warnings(rows: list[dict], services) -> list[str]:
    """The latencies left out of the statistics because they came out negative."""
    items = [f"{t['topic']}: {n:,} of {t[total]:,} {what}" for t in rows
             for key, total, what in (("negative_latencies", "deliveries", "deliveries"),
                                      ("negative_transports", "transport_count", "transport links"))
             if (n := t.get(key))]
    items += [f"{v['service']}: {n:,} of {v['calls']:,} calls' {what}" for v in services
              for key, what in (("server_negative", "server time"), ("rtt_negative", "round trip")) if (n := v.get(key))]
    if not items:
        return []
    return [f"{len(items)} latenc{'ies' if len(items) != 1 else 'y'} came out negative and are left out of the "
            f"statistics, counted apart ({'; '.join(items[:5])}{'; ...' if len(items) > 5 else ''}): the event of "
            "the earlier side was emitted after what it reports (e.g. a client's rmw_send_request traced after its DDS "
            "write, by which time the server had answered), so its time is late and the difference measures nothing "
            "(negative_latencies, negative_transports, server_negative, rtt_negative in --json)"]


#: The counts of `summary`, as the rows of one UNION ALL: one query instead of ten, and
#: not ten scalar subqueries of one SELECT, over which DuckDB searches a join order
#: (both slower: bench/README.md, "Figures behind choices in the code").
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
