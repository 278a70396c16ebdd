"""Evaluating budgets on one trace: every measured value comes from the library function
of the verb that shows it, never computed again here (docs/ci.md, "What each budget
measures"):

| budget | measured by |
|---|---|
| callback duration, jitter | `roscope.stats.callbacks` (`roscope stats`): `<stat>_ns`, `period_jitter_ns` |
| callback deadline | the callback's complete runs (`roscope stats`' runs) longer than the deadline |
| callback why | `roscope.sched.run_sched` (`roscope why`): its runs' parts over their duration |
| topic rate, latency | `roscope.stats.topics` (`roscope stats`): `rate_hz`, `lat_<stat>_ns` |
| path latency | `roscope.flow.data_flows` (`roscope flow`): the flows' `latency_ns`, statistics by `roscope.percentiles` as `flow.path_stats`; with a definition, `roscope.response_time.response_times` (`roscope flow --definition`) |
| path deadline | the same flows (or response times) over the deadline |
| path why | `roscope.sched.flow_sched` (`roscope why --from --to`): the flows' parts over their latency |
| executor utilization | `roscope.executor.threads` (`roscope executor`): `utilization` |
| lost | `roscope.stats.summary` (`roscope stats`): `events_discarded`, `packets_lost` |

`evaluate(db, budgets)` gives one `Line` per limit and subject (a budget whose
regular expression selects three callbacks gives three lines per limit). A line that
cannot be evaluated (nothing selected, no flow, no kernel data for `why`) is an
`error` line with the reason: never a pass.

A callback budget's regular expression selects callbacks by label, infrastructure left out
(roscope.check.infrastructure) unless the budget or the check keeps it. A selected callback
that never ran cannot break the budget: its lines pass with no value, `no runs` (listed,
not failed); the budget cannot be evaluated only when none of the callbacks it selects ran.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from roscope import choices, executor, percentiles, response_time, sched, selector, stats
from roscope.check import infrastructure as infra
from roscope.check.budgets import PATH_STATS, Budget, Limit, Measure
from roscope.check.units import COUNT
from roscope.errors import InputError
from roscope.flow import FlowRequest, data_flows

if TYPE_CHECKING:
    from roscope.database import Database

PASS, FAIL, ERROR = "pass", "fail", "error"
#: The message of a line that passes because its callback never ran (its value is None).
NO_RUNS = "no runs in this trace"
NO_KERNEL = ("no kernel scheduling data in this trace (record it with `roscope record --kernel`): `why` shares "
             "need it")


@dataclass
class Line:
    """One limit of one budget on one subject: its measured value and verdict."""
    budget: Budget
    measure: Measure
    limit: Limit | None
    subject: str                  # what was measured: a callback's label, a topic, a path, a thread
    key: str                      # the subject as it is named in every run (for --baseline)
    value: float | None = None
    status: str = ERROR
    message: str = ""
    kind: str = COUNT
    ref: dict = field(default_factory=dict)   # ids to explain it (callback_id, topic, budget)
    samples: object = None        # with Context(samples=True): the values the statistic is of (numpy array)

    @property
    def what(self) -> str:
        """The measure and statistic, e.g. "duration p99", "rate min", "deadline 30 ms share"."""
        m, s = self.measure.name, self.limit.stat if self.limit else ""
        if m == "deadline":
            return f"deadline {self.measure.over / 1e6:g} ms {s}"
        if m in ("jitter",) or (m == "utilization" and s == "max"):
            return m
        return f"{m} {s}".strip()

    @property
    def margin(self) -> float | None:
        return None if self.value is None or self.limit is None else self.limit.margin(self.value)

    @property
    def no_runs(self) -> bool:
        """A line that passes because the callback it measures never ran."""
        return self.status == PASS and self.value is None


class Context:
    """One trace's analyses, each made once for all the budgets (the verbs' library calls).
    `infrastructure` (keep or drop) is the default of the budgets that do not say."""

    def __init__(self, db, samples: bool = False, infrastructure: str = infra.DEFAULT):
        if infrastructure not in infra.CHOICES:
            raise InputError(f"infrastructure: {infrastructure!r} is not one of {', '.join(infra.CHOICES)}")
        self.db = db
        self.samples = samples
        self.infrastructure = infrastructure
        self._callbacks = self._topics = self._threads = self._labels = self._summary = None
        self._kernel = self._info = None

    def keeps_infrastructure(self, b: Budget) -> bool:
        return (b.infrastructure or self.infrastructure) == infra.KEEP

    @property
    def callbacks(self) -> list[dict]:
        if self._callbacks is None:
            self._callbacks = stats.callbacks(self.db)
        return self._callbacks

    @property
    def topics(self) -> list[dict]:
        if self._topics is None:
            self._topics = stats.topics(self.db)
        return self._topics

    @property
    def threads(self) -> list[dict]:
        if self._threads is None:
            self._threads = executor.threads(self.db)
            nodes = selector.thread_nodes(self.db)
            for t in self._threads:
                t["nodes"] = nodes.get(t["thread_id"], [])
        return self._threads

    @property
    def labels(self) -> dict[int, str]:
        """callback_id -> its label (roscope.selector's `node topic-or-timer symbol`)."""
        if self._labels is None:
            self._labels = selector.callback_labels(self.db)
        return self._labels

    @property
    def callback_info(self) -> dict[int, dict]:
        """callback_id -> {infrastructure: bool, runs: its runs in the trace, complete or not}."""
        if self._info is None:
            self._info = {r["callback_id"]: {"infrastructure": infra.callback(r["kind"], r["topic"], r["node"]),
                                             "runs": r["runs"]} for r in self.db.records(
                "SELECT c.callback_id, c.kind, c.topic, c.node, count(r.callback_id) AS runs FROM callbacks_info c "
                "LEFT JOIN callback_runs r USING (callback_id) GROUP BY ALL")}
        return self._info

    @property
    def summary(self) -> dict:
        if self._summary is None:
            self._summary = stats.summary(self.db)
        return self._summary

    @property
    def kernel(self) -> bool:
        if self._kernel is None:
            self._kernel = bool(sched.has_kernel_data(self.db))
        return self._kernel


def _lines(b: Budget, m: Measure, subject: str, key: str, value, ref: dict | None = None) -> list[Line]:
    """One line per limit of `m` for a measured `value` (a number, or {stat: number})."""
    out = []
    for lim in m.limits:
        v = value.get(lim.stat) if isinstance(value, dict) else value
        line = Line(b, m, lim, subject, key, v, kind=lim.kind, ref=dict(ref or {}))
        if v is None:
            line.status, line.message = ERROR, f"no value of {line.what} for {subject}"
        else:
            line.status = PASS if lim.holds(v) else FAIL
        out.append(line)
    return out


def _with(ctx: Context, lines: list[Line], values) -> list[Line]:
    """`lines` with their samples when `ctx` asks for them: `values(stat)` gives the values a
    line's statistic is of (called once per statistic)."""
    if not ctx.samples:
        return lines
    got: dict = {}
    for x in lines:
        if x.status != ERROR and x.limit is not None:
            if x.limit.stat not in got:
                got[x.limit.stat] = np.asarray(values(x.limit.stat), dtype=float)
            x.samples = got[x.limit.stat]
    return lines


def _column(ctx: Context, sql: str, params: list) -> np.ndarray:
    """One numeric column of `sql` as a numpy array (DuckDB's fetchnumpy: no Python object per value;
    NULLs are NaN)."""
    cols = ctx.db.con.execute(sql, params).fetchnumpy()
    col = next(iter(cols.values()), None)
    if col is None or not len(col):
        return np.zeros(0)
    return np.ma.filled(np.ma.asarray(col).astype(float), np.nan) if np.ma.isMaskedArray(col) else np.asarray(
        col, dtype=float)


#: The values behind each measure (docs/ci.md, "--baseline"), for a callback, topic or thread id.
_RUN_DURATIONS = "SELECT duration_ns FROM callback_runs WHERE callback_id = ? AND end_ts IS NOT NULL"
_PERIOD_DEVIATIONS = """
    SELECT abs(p - avg(p) OVER ()) FROM (
        SELECT start_ts - lag(start_ts) OVER (ORDER BY start_ts) AS p
        FROM callback_runs WHERE callback_id = ? AND end_ts IS NOT NULL) WHERE p IS NOT NULL"""
_RUN_SHARES = {"on_cpu": "on_cpu_ns", "cpu_wait": "runnable_ns", "blocked": "blocked_ns", "unknown": "unknown_ns"}
_DELIVERY_LATENCIES = ("SELECT callback_start_ts - publish_ts FROM links_info WHERE topic = ? "
                       "AND callback_start_ts IS NOT NULL")
#: Publications per whole second of the topic's own span, first to last publication (empty seconds included).
_RATE_PER_SECOND = """
    WITH w AS (SELECT range AS k FROM range(0, CAST(floor((?::HUGEINT - ?::HUGEINT) / 1e9) AS BIGINT)))
    SELECT count(p.publish_ts) FROM w LEFT JOIN (SELECT publish_ts FROM publications_info WHERE topic = ?) p
      ON p.publish_ts >= ?::HUGEINT + w.k * 1000000000 AND p.publish_ts < ?::HUGEINT + (w.k + 1) * 1000000000
    GROUP BY w.k ORDER BY w.k"""
#: A thread's executing share of each whole second of its executor states.
_UTILIZATION_PER_SECOND = """
    WITH s AS (SELECT start_ts, end_ts, state FROM executor_states WHERE thread_id = ?),
    b AS (SELECT min(start_ts) AS t0, max(end_ts) AS t1 FROM s),
    w AS (SELECT b.t0 + r.range * 1000000000 AS a, b.t0 + (r.range + 1) * 1000000000 AS z
          FROM b, range(0, CAST(floor((b.t1 - b.t0) / 1e9) AS BIGINT)) r)
    SELECT sum(greatest(0, least(s.end_ts, w.z) - greatest(s.start_ts, w.a))) FILTER (WHERE s.state = 'executing')
             / nullif(sum(greatest(0, least(s.end_ts, w.z) - greatest(s.start_ts, w.a))), 0)
    FROM w JOIN s ON s.start_ts < w.z AND s.end_ts > w.a GROUP BY w.a ORDER BY w.a"""


def _errors(b: Budget, message: str, subject: str | None = None) -> list[Line]:
    """Every limit of `b` as a line that cannot be evaluated, for `message`."""
    subj = subject or b.title()
    return [Line(b, m, lim, subj, subj, None, ERROR, message, lim.kind) for m in b.measures for lim in m.limits]


def _matching(pattern: str, names: Sequence[str]) -> list[int]:
    return selector.Selector("topic", pattern, "select").pick(dict(enumerate(names)))


def _shown(names) -> str:
    names = sorted({n for n in names if n})
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


# ---------------------------------------------------------------- callbacks

def _left_out(what: str, names: list[str]) -> str:
    """The part of a "no ... matches" message that names the infrastructure left out."""
    if not names:
        return ""
    return (f"; {len(names)} infrastructure {what}{'s' if len(names) != 1 else ''} left out ({_shown(names)}): "
            "`infrastructure: keep` (or --infrastructure keep) selects them too")


def _no_runs(b: Budget, label: str, cid: int) -> list[Line]:
    """Every limit of `b` on a callback that never ran: passes, with no value."""
    return [Line(b, m, lim, label, label, None, PASS, NO_RUNS, lim.kind, {"callback_id": cid, "label": label})
            for m in b.measures for lim in m.limits]


def _callback(ctx: Context, b: Budget) -> list[Line]:
    labels, info = ctx.labels, ctx.callback_info
    rows = {r["callback_id"]: r for r in ctx.callbacks}
    ids = selector.Selector("callback", b.select, "callback").pick(labels)
    keep = ctx.keeps_infrastructure(b)
    dropped = [] if keep else [c for c in ids if info[c]["infrastructure"]]
    ids = [c for c in ids if c not in set(dropped)]
    if not ids:
        return _errors(b, f"no callback matches {b.select!r} (callbacks: "
                          f"{_shown(lab for c, lab in labels.items() if keep or not info[c]['infrastructure'])})"
                          + _left_out("callback", [labels[c] for c in dropped]))
    if not any(info[c]["runs"] for c in ids):
        n = len(ids)
        return _errors(b, f"{'the callback' if n == 1 else f'none of the {n} callbacks'} it selects ran in this "
                          f"trace ({_shown(labels[c] for c in ids)})")
    out = []
    for cid in sorted(ids, key=lambda c: labels[c]):
        label, row = labels[cid], rows.get(cid)
        if not info[cid]["runs"]:  # never ran: cannot break a budget (listed, not failed)
            out += _no_runs(b, label, cid)
        elif row is None:  # ran, but no run ended in the trace: its duration is unknown
            out += _errors(b, f"{label}: no complete run in this trace", label)
        else:
            for m in b.measures:
                out += _callback_measure(ctx, b, m, cid, label, row)
    return out


def _callback_measure(ctx: Context, b: Budget, m: Measure, cid: int, label: str, row: dict) -> list[Line]:
    ref = {"callback_id": cid, "label": label}
    if m.name == "duration":
        return _with(ctx, _lines(b, m, label, label, {s: row.get(f"{s}_ns") for s in PATH_STATS}, ref),
                     lambda _s: _column(ctx, _RUN_DURATIONS, [cid]))
    if m.name == "jitter":
        if row.get("kind") != "timer":
            return [_error_line(b, m, lim, label, f"{label}: not a timer (jitter is a timer's period jitter)")
                    for lim in m.limits]
        return _with(ctx, _lines(b, m, label, label, row.get("period_jitter_ns"), ref),
                     lambda _s: _column(ctx, _PERIOD_DEVIATIONS, [cid]))
    if m.name == "deadline":
        n, over = ctx.db.con.execute(
            "SELECT count(*), count(*) FILTER (WHERE duration_ns > ?) FROM callback_runs "
            "WHERE callback_id = ? AND end_ts IS NOT NULL", [m.over, cid]).fetchall()[0]
        return _with(ctx, _lines(b, m, label, label, {"count": over, "share": over / n if n else None}, ref),
                     lambda _s: _column(ctx, _RUN_DURATIONS, [cid]) > m.over)
    # why
    if not ctx.kernel:
        return [_error_line(b, m, lim, label, NO_KERNEL) for lim in m.limits]
    sched.run_sched(ctx.db)
    r = ctx.db.records("""SELECT sum(duration_ns) AS d, sum(on_cpu_ns) AS on_cpu, sum(runnable_ns) AS cpu_wait,
                                 sum(blocked_ns) AS blocked, sum(unknown_ns) AS unknown
                          FROM run_sched WHERE callback_id = ?""", [cid])[0]
    d = r.pop("d") or 0
    return _with(ctx, _lines(b, m, label, label, {k: (v / d if d else None) for k, v in r.items()}, ref),
                 lambda st: _column(ctx, f"SELECT {_RUN_SHARES[st]} / duration_ns FROM run_sched "
                                         "WHERE callback_id = ? AND duration_ns > 0", [cid]))


def _error_line(b: Budget, m: Measure, lim: Limit, subject: str, message: str) -> Line:
    return Line(b, m, lim, subject, subject, None, ERROR, message, lim.kind)


# ---------------------------------------------------------------- topics

def _topic(ctx: Context, b: Budget) -> list[Line]:
    rows = ctx.topics
    idx = _matching(b.select, [t["topic"] for t in rows])
    keep = ctx.keeps_infrastructure(b)
    dropped = [] if keep else [i for i in idx if infra.topic(rows[i]["topic"])]
    idx = [i for i in idx if i not in set(dropped)]
    if not idx:
        return _errors(b, f"no topic matches {b.select!r} (topics: "
                          f"{_shown(t['topic'] for t in rows if keep or not infra.topic(t['topic']))})"
                          + _left_out("topic", [rows[i]["topic"] for i in dropped]))
    out = []
    for i in idx:
        t = rows[i]
        name, ref = t["topic"], {"topic": t["topic"]}
        for m in b.measures:
            if m.name == "rate":  # the topic's own rate (stats.topic_rate), its samples over its own span
                first, last = t["first_publish_ts"] or 0, t["last_publish_ts"] or 0
                out += _with(ctx, _lines(b, m, name, name, t["rate_hz"], ref), lambda _s, name=name, first=first, last=last:
                             _column(ctx, _RATE_PER_SECOND, [last, first, name, first, first]))
            elif not t["deliveries"]:
                out += [_error_line(b, m, lim, name, f"{name}: no delivery to a callback was traced (no latency)")
                        for lim in m.limits]
            else:
                out += _with(ctx, _lines(b, m, name, name, {s: t.get(f"lat_{s}_ns") for s in PATH_STATS}, ref),
                             lambda _s, name=name: _column(ctx, _DELIVERY_LATENCIES, [name]))
    return out


# ---------------------------------------------------------------- paths

def flow_request(b: Budget, **extra) -> FlowRequest:
    """The `roscope.flow.FlowRequest` of a path budget (as `roscope flow` builds one)."""
    p = b.path_options
    return FlowRequest(p["from"], p["to"], implicit=p.get("implicit", "auto"), deps=p.get("deps"),
                       exclude=p.get("exclude", ()), uncertain=p.get("uncertain", "keep"),
                       all_paths=p.get("all_paths", False), definition=p.get("definition"), end=p.get("end"),
                       **({"fallback": p["fallback"]} if "fallback" in p else {}), **extra)


def path_values(db: Database, b: Budget) -> str:
    """The SQL of a path budget's values `x` (one per flow, or per response time of its case),
    over the results of the last `data_flows` / `response_times` on `db`."""
    p = b.path_options
    if not p.get("definition"):
        return "SELECT 1 AS g, latency_ns AS x FROM data_flows"
    case = next(c for c in choices.CASES if c == p.get("case", choices.CASE_DEFAULT))  # one of roscope's own names
    # the cases `roscope flow --definition` leaves out of its statistics (a path's first output,
    # whose cycle may begin before the trace) are left out here too
    return f"SELECT 1 AS g, response_ns AS x FROM response_times WHERE \"case\" = '{case}' AND NOT left_out"


#: flow_sched's `top` that keeps every flow.
ALL_FLOWS = 1 << 62


def run_path(db: Database, b: Budget, *, why: bool = False) -> tuple[dict, list[dict] | None]:
    """Runs a path budget's data-flow search (and its response times): (the search's summary,
    with `why` every flow's scheduling split from `roscope.sched.flow_sched`, which makes
    that same search with every flow's steps). InputError when a regex matches no topic."""
    rows = None
    if why:
        res = sched.flow_sched(db, flow_request(b, all_steps=True), None, ALL_FLOWS)
        summary, rows = res["summary"], res["flows"]
    else:
        summary = dict(data_flows(db, flow_request(b)))
    p = b.path_options
    if p.get("definition") and summary["flows"]:
        response_time.response_times(db, p["definition"], p.get("end"))
    return summary, rows


def _path(ctx: Context, b: Budget) -> list[Line]:
    subject = b.title()
    why = any(m.name == "why" for m in b.measures) and ctx.kernel
    try:
        summary, flows = run_path(ctx.db, b, why=why)
    except InputError as e:
        return _errors(b, str(e), subject)
    if not summary["flows"]:
        reason = next((w for w in summary["warnings"] if w.startswith("no data flow")), "no data flow")
        return _errors(b, f"0 flows: {reason}", subject)
    ref = {"budget": b}
    src = path_values(ctx.db, b)
    rows = percentiles.grouped(ctx.db, src, ["g"], quartiles=True, what="budget path latency")
    st = rows[0] if rows else {}
    if not st.get("count"):
        return _errors(b, f"0 response times of the case {b.path_options.get('case', 'best')!r} in its "
                          f"{summary['flows']} flows", subject)
    out = []
    for m in b.measures:
        if m.name == "latency":
            out += _with(ctx, _lines(b, m, subject, subject, {s: st.get(f"{s}_ns") for s in PATH_STATS}, ref),
                         lambda _s: _column(ctx, f"SELECT x FROM ({src})", []))
        elif m.name == "deadline":
            over = ctx.db.con.execute(f"SELECT count(*) FILTER (WHERE x > ?) FROM ({src})", [m.over]).fetchall()[0][0]
            out += _with(ctx, _lines(b, m, subject, subject, {"count": over, "share": over / st["count"]}, ref),
                         lambda _s, m=m: _column(ctx, f"SELECT x FROM ({src})", []) > m.over)
        elif flows is None:
            out += [_error_line(b, m, lim, subject, NO_KERNEL) for lim in m.limits]
        else:
            out += _with(ctx, _lines(b, m, subject, subject, why_shares(flows), ref),
                         lambda st, flows=flows: flow_shares(flows, st))
    return out


def flow_shares(flows: list[dict], part: str) -> list[float]:
    """Each flow's `part` (a `why` share's name) over its latency."""
    cols = ("runnable", "wakeup") if part == "cpu_wait" else (part,)
    return [sum(r[f"{c}_ns"] or 0 for c in cols) / r["latency_ns"] for r in flows if r["latency_ns"]]


def why_shares(flows: list[dict]) -> dict:
    """The parts of `roscope.sched.flow_sched`'s flows as shares of their summed latency
    (cpu_wait: runnable in callbacks and between them, plus wake-up in input waits)."""
    total = sum(r["latency_ns"] or 0 for r in flows)
    parts = {k: sum(r[f"{k}_ns"] or 0 for r in flows) for k in
             ("on_cpu", "runnable", "wakeup", "blocked", "queued", "transport", "unknown")}
    parts["cpu_wait"] = parts["runnable"] + parts["wakeup"]
    return {k: (v / total if total else None) for k, v in parts.items()}


# ---------------------------------------------------------------- executors, lost

def thread_label(t: dict) -> str:
    nodes = ", ".join(t["nodes"]) or "no callbacks"
    return f"{t['procname']} [{t['pid']}] thread {t['tid']} ({nodes})"


def _executor(ctx: Context, b: Budget) -> list[Line]:
    rows = ctx.threads
    if not rows:
        return _errors(b, "no executor states in this trace (ros2_tracing records executor events from Humble on; "
                          "ROS 1 has none)")
    sel = selector.Selector("executor", b.select, "executor")
    hit = [t for t in rows if sel.matches_any(selector.executor_names(t))]
    if not hit:
        return _errors(b, f"no executor thread runs a node or is a process matching {b.select!r} (nodes: "
                          f"{_shown(n for t in rows for n in t['nodes'])})")
    out, seen = [], {}
    for t in sorted(hit, key=lambda t: (t["procname"] or "", t["nodes"], t["tid"])):
        base = f"{t['procname']} ({', '.join(t['nodes']) or 'no callbacks'})"
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base} #{seen[base]}"
        for m in b.measures:
            out += _with(ctx, _lines(b, m, thread_label(t), key, t["utilization"], {"thread_id": t["thread_id"]}),
                         lambda _s, t=t: _column(ctx, _UTILIZATION_PER_SECOND, [t["thread_id"]]))
    return out


def _lost(ctx: Context, b: Budget) -> list[Line]:
    s = ctx.summary
    m = b.measures[0]
    return [Line(b, m, lim, f"{lim.stat} lost", f"{lim.stat} lost", v, PASS if lim.holds(v) else FAIL, "", COUNT,
                 {"lost": lim.stat})
            for lim, v in ((lim, s["events_discarded"] if lim.stat == "events" else s["packets_lost"])
                           for lim in m.limits)]


_KINDS = {"callback": _callback, "topic": _topic, "path": _path, "executor": _executor, "lost": _lost}


def evaluate(db: Database, budgets: Sequence[Budget], ctx: Context | None = None) -> list[Line]:
    """Every budget on `db` (a `roscope.open` Database): its lines, in the budgets' order."""
    ctx = ctx or Context(db)
    out = []
    for b in budgets:
        out += _KINDS[b.kind](ctx, b)
    return out


def exit_status(lines: Sequence[Line]) -> int:
    """0 every line passes; 1 a line fails; 2 a line cannot be evaluated (and none fails)."""
    if any(x.status == FAIL for x in lines):
        return 1
    if any(x.status == ERROR for x in lines):
        return 2
    return 0
