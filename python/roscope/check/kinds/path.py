"""Path budgets: `path: {from: RE, to: RE, ...}` (the options of `roscope flow`:
roscope.flow.FlowRequest's, and roscope.response_time's definition, end and case).

| measure | measured by |
|---|---|
| latency | `roscope.flow.data_flows` (`roscope flow`): the flows' `latency_ns`, statistics by `roscope.percentiles` as `flow.path_stats`; with a definition, `roscope.response_time.response_times` (`roscope flow --definition`) |
| deadline | the same flows (or response times) over the deadline |
| why | `roscope.sched.flow_sched` (`roscope why --from --to`): the flows' parts over their latency |
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roscope import choices, percentiles, response_time, sched
from roscope.check.kind import (
    ALL_STATS,
    NO_KERNEL,
    Context,
    Kind,
    Measurement,
    Selection,
    Subject,
    Values,
    column,
    per_run,
    suggested,
    yaml_text,
)
from roscope.check.limits import FileErrors, MeasureSpec
from roscope.check.units import COUNT, DURATION, SHARE
from roscope.errors import InputError
from roscope.flow import FlowRequest, data_flows

if TYPE_CHECKING:
    from roscope.database import Database

#: The options of a path (roscope.flow.FlowRequest's, and roscope.response_time's).
PATH_KEYS = ("from", "to", "definition", "end", "case", "implicit", "fallback", "exclude", "uncertain", "deps",
             "all_paths")
#: The words each path key may take: roscope.choices', as `roscope flow`'s options.
PATH_CHOICES = {"definition": choices.DEFINITIONS, "end": choices.CHOSEN_ENDS, "case": choices.CASES,
                "implicit": choices.IMPLICIT_MODES, "fallback": choices.FALLBACK_RULES,
                "uncertain": choices.UNCERTAIN_MODES}
#: The parts of a flow's `why` (roscope.sched.flow_sched); cpu_wait is runnable in callbacks and
#: between them plus wake-up in input waits (`CPU_WAIT`), so the parts that split a flow are the rest.
WHY_PARTS = ("on_cpu", "cpu_wait", "runnable", "wakeup", "blocked", "queued", "transport", "unknown")
CPU_WAIT = ("runnable", "wakeup")
#: flow_sched's `top` that keeps every flow.
ALL_FLOWS = 1 << 62


def flow_request(sel, **extra) -> FlowRequest:
    """The `roscope.flow.FlowRequest` of a path selection (as `roscope flow` builds one)."""
    p = sel.path_options
    return FlowRequest(p["from"], p["to"], implicit=p.get("implicit", "auto"), deps=p.get("deps"),
                       exclude=p.get("exclude", ()), uncertain=p.get("uncertain", "keep"),
                       all_paths=p.get("all_paths", False), definition=p.get("definition"), end=p.get("end"),
                       **({"fallback": p["fallback"]} if "fallback" in p else {}), **extra)


@dataclass
class PathRun:
    """A path's search on one trace: its summary, every flow's scheduling split (None: not
    asked), the SQL of its values `x` (one per flow, or per response time of its case) and
    the results that SQL reads (held here: a result no value refers to is dropped)."""
    summary: dict
    flows: list[dict] | None
    values: str
    held: tuple


def run_path(db: Database, sel, *, why: bool = False) -> PathRun:
    """Runs a path's data-flow search (with `why`, `roscope.sched.flow_sched`'s, which makes
    that search with every flow's steps and splits each flow) and, under a definition, its
    response times. InputError when a regex matches no topic."""
    rows = None
    if why:
        res = sched.flow_sched(db, flow_request(sel, all_steps=True), None, ALL_FLOWS)
        search, summary, rows = res["search"], res["summary"], res["flows"]
    else:
        search = data_flows(db, flow_request(sel))
        summary = dict(search)
    p = sel.path_options
    if not p.get("definition"):
        return PathRun(summary, rows, f"SELECT 1 AS g, latency_ns AS x FROM {search.sql('data_flows')}", (search,))
    if not summary["flows"]:
        return PathRun(summary, rows, "", (search,))
    times = response_time.response_time_rows(db, p["definition"], p.get("end"), flows=search)
    case = next(c for c in choices.CASES if c == p.get("case", choices.CASE_DEFAULT))  # one of roscope's own names
    # the cases `roscope flow --definition` leaves out of its statistics (a path's first output,
    # whose cycle may begin before the trace) are left out here too
    return PathRun(summary, rows, f"SELECT 1 AS g, response_ns AS x FROM {times.sql} "
                                  f"WHERE \"case\" = '{case}' AND NOT left_out", (search, times))


def flow_shares(flows: list[dict], part: str) -> list[float]:
    """Each flow's `part` (a `why` share's name) over its latency."""
    cols = CPU_WAIT if part == "cpu_wait" else (part,)
    return [sum(r[f"{c}_ns"] or 0 for c in cols) / r["latency_ns"] for r in flows if r["latency_ns"]]


def why_shares(flows: list[dict]) -> dict:
    """The parts of `roscope.sched.flow_sched`'s flows as shares of their summed latency."""
    total = sum(r["latency_ns"] or 0 for r in flows)
    parts = {k: sum(r[f"{k}_ns"] or 0 for r in flows) for k in WHY_PARTS if k != "cpu_wait"}
    parts["cpu_wait"] = sum(parts[k] for k in CPU_WAIT)
    return {k: (v / total if total else None) for k, v in parts.items()}


class _Flows:
    """What a path's measures read: its values' SQL and statistics, the flows' scheduling split
    (None: not asked, or no kernel data) and, when the check keeps samples, the values."""

    def __init__(self, ctx: Context, run: PathRun, st: dict):
        self.run, self.src, self.st, self.flows = run, run.values, st, run.flows
        self.xs = column(ctx, f"SELECT x FROM ({self.src})", []) if ctx.samples else None


# ---------------------------------------------------------------- its measures: (ctx, _Flows, over) -> Values

def _latency(ctx: Context, f: _Flows, _over) -> Values:
    return Values({s: f.st.get(f"{s}_ns") for s in ALL_STATS}, samples=lambda _s: f.xs)


def _deadline(ctx: Context, f: _Flows, over) -> Values:
    late = ctx.db.con.execute(f"SELECT count(*) FILTER (WHERE x > ?) FROM ({f.src})", [over]).fetchall()[0][0]
    return Values({"count": late, "share": late / f.st["count"]}, samples=lambda _s: f.xs > over)


def _why(ctx: Context, f: _Flows, _over) -> Values:
    if f.flows is None:
        return Values(missing=NO_KERNEL)
    return Values(why_shares(f.flows), samples=lambda part: flow_shares(f.flows, part))


class Path(Kind):
    name = "path"
    why_split = tuple(p for p in WHY_PARTS if p not in CPU_WAIT)
    measures = Kind.specs(
        MeasureSpec("latency", DURATION, ALL_STATS, "stats", _latency),
        MeasureSpec("deadline", {"count": COUNT, "share": SHARE}, ("count", "share"), "deadline", _deadline),
        MeasureSpec("why", SHARE, WHY_PARTS, "stats", _why),
    )

    def parse_subject(self, f: FileErrors, item, key: str, base_dir: str) -> tuple[None, tuple]:
        line, key, value = item.line_of("path"), f"{key}.path", item["path"]
        m = f.mapping(line, key, value, PATH_KEYS)
        for need in ("from", "to"):
            if need not in m:
                raise f.error(line, key, f"a path needs '{need}' (a regular expression of topics)")
        out: dict = {"from": f.regex(m.line_of("from"), f"{key}.from", m["from"]),
                     "to": f.regex(m.line_of("to"), f"{key}.to", m["to"])}
        for k, allowed in PATH_CHOICES.items():
            if k in m:
                if m[k] not in allowed:
                    raise f.error(m.line_of(k), f"{key}.{k}", f"{m[k]!r} is not one of {', '.join(allowed)}")
                out[k] = m[k]
        if ("end" in out or "case" in out) and "definition" not in out:
            raise f.error(line, key, "'end' and 'case' choose a response time: give 'definition' (dataflow or caret) too")
        if out.get("end") and out.get("definition") != "caret":
            raise f.error(m.line_of("end"), f"{key}.end", "a path ends at a callback only under definition: caret")
        if "exclude" in m:
            ex = m["exclude"] if isinstance(m["exclude"], list) else [m["exclude"]]
            out["exclude"] = tuple(f.regex(m.line_of("exclude"), f"{key}.exclude", x) for x in ex)
        if "deps" in m:
            if not isinstance(m["deps"], str) or not m["deps"]:
                raise f.error(m.line_of("deps"), f"{key}.deps", "expected the path of a `roscope deps` file")
            out["deps"] = os.path.join(base_dir, m["deps"])
        if "all_paths" in m:
            if not isinstance(m["all_paths"], bool):
                raise f.error(m.line_of("all_paths"), f"{key}.all_paths", "expected true or false")
            out["all_paths"] = m["all_paths"]
        return None, tuple(out.items())

    def title(self, sel) -> str:
        p = sel.path_options
        return f"path {p['from']} -> {p['to']}" + (f" ({p['definition']} {p.get('case', 'best')})"
                                                     if p.get("definition") else "")

    def measure(self, ctx: Context, sel, asks) -> Measurement:
        """One subject, named by the selection's title."""
        why = any(name == "why" for name, _ in asks) and ctx.kernel
        try:
            run = run_path(ctx.db, sel, why=why)
        except InputError as e:
            return Measurement(missing=str(e))
        if not run.summary["flows"]:
            reason = next((w for w in run.summary["warnings"] if w.startswith("no data flow")), "no data flow")
            return Measurement(missing=f"0 flows: {reason}")
        rows = percentiles.grouped(ctx.db, run.values, ["g"], quartiles=True, what="budget path latency")
        st = rows[0] if rows else {}
        if not st.get("count"):
            return Measurement(missing=f"0 response times of the case {sel.path_options.get('case', 'best')!r} in "
                                       f"its {run.summary['flows']} flows")
        return Measurement([Subject(None, ref={"path": sel.path_options},
                                    values=self.values(ctx, asks, _Flows(ctx, run, st)))])

    def observe(self, ctx: Context, paths) -> dict:
        """The latency p99 of each path asked for (`--from`/`--to`), by its place among them."""
        out = {}
        for i, (a, b) in enumerate(paths):
            m = self.measure(ctx, Selection(self.name, path=(("from", a), ("to", b))), (("latency", None),))
            for s in m.subjects:
                x = s.values[("latency", None)].of("p99")
                if x is not None:
                    out[(i, "latency")] = x
        return out

    def suggest(self, seen: dict, runs, margin: float, paths) -> list[str]:
        out = []
        for i in sorted(k for k, _ in seen):
            a, b = paths[i]
            v = per_run(seen, (i, "latency"), runs)
            out += [f"  - path: {{from: {yaml_text(a)}, to: {yaml_text(b)}}}",
                    *suggested("latency", "latency p99", v, DURATION, margin, "p99")]
        return out


KIND = Path()
