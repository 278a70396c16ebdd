"""Executor budgets: `executor: RE`, the executor threads that run a node matching RE or
whose process name matches it.

| measure | measured by |
|---|---|
| utilization | `roscope.executor.threads` (`roscope executor`): `utilization` |
"""
from __future__ import annotations

from roscope import executor, selector
from roscope.check import units
from roscope.check.kind import Context, Kind, Measurement, Subject, Values, column, exact, per_run, seen_text, shown, upper_limit, yaml_text
from roscope.check.limits import MeasureSpec
from roscope.check.units import SHARE

#: A thread's executing share of each whole second of its executor states.
_UTILIZATION_PER_SECOND = """
    WITH s AS (SELECT start_ts, end_ts, state FROM executor_states WHERE thread_id = ?),
    b AS (SELECT min(start_ts) AS t0, max(end_ts) AS t1 FROM s),
    w AS (SELECT b.t0 + r.range * 1000000000 AS a, b.t0 + (r.range + 1) * 1000000000 AS z
          FROM b, range(0, CAST(floor((b.t1 - b.t0) / 1e9) AS BIGINT)) r)
    SELECT sum(greatest(0, least(s.end_ts, w.z) - greatest(s.start_ts, w.a))) FILTER (WHERE s.state = 'executing')
             / nullif(sum(greatest(0, least(s.end_ts, w.z) - greatest(s.start_ts, w.a))), 0)
    FROM w JOIN s ON s.start_ts < w.z AND s.end_ts > w.a GROUP BY w.a ORDER BY w.a"""


def threads(ctx: Context) -> list[dict]:
    """`roscope.executor.threads`, each with `nodes`: the nodes whose callbacks ran on it."""
    def make():
        rows = executor.threads(ctx.db)
        nodes = selector.thread_nodes(ctx.db)
        for t in rows:
            t["nodes"] = nodes.get(t["thread_id"], [])
        return rows
    return ctx.once("threads", make)


def thread_label(t: dict) -> str:
    nodes = ", ".join(t["nodes"]) or "no callbacks"
    return f"{t['procname']} [{t['pid']}] thread {t['tid']} ({nodes})"


def _utilization(ctx: Context, t: dict, _over) -> Values:
    return Values(t["utilization"], samples=lambda _s: column(ctx, _UTILIZATION_PER_SECOND, [t["thread_id"]]))


class Executor(Kind):
    name = "executor"
    measures = Kind.specs(
        MeasureSpec("utilization", SHARE, ("min", "max"), "bounds", _utilization, at_least=("min",), bare="max",
                    read="max"),
    )

    def measure(self, ctx: Context, sel, asks) -> Measurement:
        """One subject per thread; its key (the same in every run) is its process and nodes."""
        rows = threads(ctx)
        if not rows:
            return Measurement(missing="no executor states in this trace (ros2_tracing records executor events from "
                                       "Humble on; ROS 1 has none)")
        pick = selector.Selector("executor", sel.select, "executor")
        hit = [t for t in rows if pick.matches_any(selector.executor_names(t))]
        if not hit:
            return Measurement(missing=f"no executor thread runs a node or is a process matching {sel.select!r} "
                                       f"(nodes: {shown(n for t in rows for n in t['nodes'])})")
        out, seen = [], {}
        for t in sorted(hit, key=lambda t: (t["procname"] or "", t["nodes"], t["tid"])):
            base = f"{t['procname']} ({', '.join(t['nodes']) or 'no callbacks'})"
            seen[base] = seen.get(base, 0) + 1
            out.append(Subject(thread_label(t), base if seen[base] == 1 else f"{base} #{seen[base]}",
                               ref={"thread_id": t["thread_id"]}, values=self.values(ctx, asks, t)))
        return Measurement(out)

    def observe(self, ctx: Context, paths) -> dict:
        """Per node the utilization of its busiest thread."""
        out: dict = {}
        for t in threads(ctx):
            for n in t["nodes"]:
                out[(n, "utilization")] = max(out.get((n, "utilization"), 0), t["utilization"] or 0)
        return out

    def suggest(self, seen: dict, runs, margin: float, paths) -> list[str]:
        out = []
        for node in sorted(k for k, _ in seen):
            u = per_run(seen, (node, "utilization"), runs)
            cap = min(1.0, upper_limit(max(u), SHARE, margin))
            out += [f"  - executor: {yaml_text(exact(node))}",
                    f"    # utilization seen (busiest thread): {seen_text(u, SHARE)}",
                    f"    utilization: {{max: {units.text(cap, SHARE)}}}"]
        return out


KIND = Executor()
