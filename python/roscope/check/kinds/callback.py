"""Callback budgets: `callback: RE` (a callback's label, roscope.selector: `node
topic-or-timer symbol`), infrastructure left out unless kept (roscope.check.infrastructure).

| measure | measured by |
|---|---|
| duration | `roscope.stats.callbacks` (`roscope stats`): `<stat>_ns` |
| jitter | `roscope.stats.callbacks`: a timer's `period_jitter_ns` |
| deadline | the callback's complete runs (`roscope stats`' runs) longer than the deadline |
| why | `roscope.sched.run_sched` (`roscope why`): its runs' parts over their duration |

A selected callback that never ran cannot break the budget: its lines pass with no value
(`no runs`, listed, not failed); the budget cannot be evaluated only when none of the
callbacks it selects ran.
"""
from __future__ import annotations

from roscope import selector, stats
from roscope.check import infrastructure as infra
from roscope.check.kind import (
    ALL_STATS,
    NO_KERNEL,
    Context,
    Kind,
    Measurement,
    Subject,
    Values,
    column,
    exact,
    left_out,
    per_run,
    run_sched,
    shown,
    suggested,
    yaml_text,
)
from roscope.check.limits import MeasureSpec
from roscope.check.units import COUNT, DURATION, SHARE

#: The statistics of a duration a budget may limit (upper bounds).
STATS = ("min", "mean", "std", "p50", "p90", "p99", "max")
#: The parts of a run's `why` (roscope.sched.run_sched): cpu_wait is waiting for a CPU (runnable).
WHY_PARTS = ("on_cpu", "cpu_wait", "blocked", "unknown")
_RUN_SHARES = {"on_cpu": "on_cpu_ns", "cpu_wait": "runnable_ns", "blocked": "blocked_ns", "unknown": "unknown_ns"}

#: The values behind each measure (docs/ci.md, "--baseline"), of one callback id.
_RUN_DURATIONS = "SELECT duration_ns FROM callback_runs WHERE callback_id = ? AND end_ts IS NOT NULL"
_PERIOD_DEVIATIONS = """
    SELECT abs(p - avg(p) OVER ()) FROM (
        SELECT start_ts - lag(start_ts) OVER (ORDER BY start_ts) AS p
        FROM callback_runs WHERE callback_id = ? AND end_ts IS NOT NULL) WHERE p IS NOT NULL"""


def _callbacks(ctx: Context) -> dict[int, dict]:
    """callback_id -> its row of `roscope.stats.callbacks` (those with a complete run)."""
    return ctx.once("callbacks", lambda: {r["callback_id"]: r for r in stats.callbacks(ctx.db)})


def _labels(ctx: Context) -> dict[int, str]:
    """callback_id -> its label (roscope.selector's `node topic-or-timer symbol`)."""
    return ctx.once("labels", lambda: selector.callback_labels(ctx.db))


def _info(ctx: Context) -> dict[int, dict]:
    """callback_id -> {infrastructure: bool, runs: its runs in the trace, complete or not}."""
    return ctx.once("callback_info", lambda: {
        r["callback_id"]: {"infrastructure": infra.callback(r["kind"], r["topic"], r["node"]), "runs": r["runs"]}
        for r in ctx.db.records("SELECT c.callback_id, c.kind, c.topic, c.node, count(r.callback_id) AS runs "
                                "FROM callbacks_info c LEFT JOIN callback_runs r USING (callback_id) GROUP BY ALL")})


# ---------------------------------------------------------------- its measures: (ctx, (cid, label, row), over) -> Values

def _duration(ctx: Context, cb, _over) -> Values:
    cid, _label, row = cb
    return Values({s: row.get(f"{s}_ns") for s in ALL_STATS},
                  samples=lambda _s: column(ctx, _RUN_DURATIONS, [cid]))


def _jitter(ctx: Context, cb, _over) -> Values:
    cid, label, row = cb
    if row.get("kind") != "timer":
        return Values(missing=f"{label}: not a timer (jitter is a timer's period jitter)")
    return Values(row.get("period_jitter_ns"), samples=lambda _s: column(ctx, _PERIOD_DEVIATIONS, [cid]))


def _deadline(ctx: Context, cb, over) -> Values:
    cid = cb[0]
    n, late = ctx.db.con.execute(
        "SELECT count(*), count(*) FILTER (WHERE duration_ns > ?) FROM callback_runs "
        "WHERE callback_id = ? AND end_ts IS NOT NULL", [over, cid]).fetchall()[0]
    return Values({"count": late, "share": late / n if n else None},
                  samples=lambda _s: column(ctx, _RUN_DURATIONS, [cid]) > over)


def _why(ctx: Context, cb, _over) -> Values:
    if not ctx.kernel:
        return Values(missing=NO_KERNEL)
    cid = cb[0]
    runs = run_sched(ctx)
    r = ctx.db.records(f"""SELECT sum(duration_ns) AS d, sum(on_cpu_ns) AS on_cpu, sum(runnable_ns) AS cpu_wait,
                                  sum(blocked_ns) AS blocked, sum(unknown_ns) AS unknown
                           FROM {runs} WHERE callback_id = ?""", [cid])[0]
    d = r.pop("d") or 0
    return Values({k: (v / d if d else None) for k, v in r.items()},
                  # in the runs' order: the bootstrap of --baseline reads them in order (unordered, a
                  # parallel scan of the result gave another interval on each check of the same trace)
                  samples=lambda st: column(ctx, f"SELECT {_RUN_SHARES[st]} / duration_ns FROM {runs} "
                                                 "WHERE callback_id = ? AND duration_ns > 0 ORDER BY run_id", [cid]))


class Callback(Kind):
    name = "callback"
    infrastructure = True
    why_split = WHY_PARTS
    measures = Kind.specs(
        MeasureSpec("duration", DURATION, STATS, "stats", _duration),
        MeasureSpec("jitter", DURATION, ("max",), "bounds", _jitter, bare="max", read="max"),
        MeasureSpec("deadline", {"count": COUNT, "share": SHARE}, ("count", "share"), "deadline", _deadline),
        MeasureSpec("why", SHARE, WHY_PARTS, "stats", _why),
    )

    def measure(self, ctx: Context, sel, asks) -> Measurement:
        labels, info, rows = _labels(ctx), _info(ctx), _callbacks(ctx)
        ids = selector.Selector("callback", sel.select, "callback").pick(labels)
        keep = ctx.keeps_infrastructure(sel)
        dropped = [] if keep else [c for c in ids if info[c]["infrastructure"]]
        ids = [c for c in ids if c not in set(dropped)]
        if not ids:
            return Measurement(missing=f"no callback matches {sel.select!r} (callbacks: "
                                       f"{shown(lab for c, lab in labels.items() if keep or not info[c]['infrastructure'])})"
                                       + left_out("callback", [labels[c] for c in dropped]))
        if not any(info[c]["runs"] for c in ids):
            n = len(ids)
            return Measurement(missing=f"{'the callback' if n == 1 else f'none of the {n} callbacks'} it selects ran "
                                       f"in this trace ({shown(labels[c] for c in ids)})")
        out = []
        for cid in sorted(ids, key=lambda c: labels[c]):
            label, row = labels[cid], rows.get(cid)
            ref = {"callback_id": cid, "label": label}
            if not info[cid]["runs"]:  # never ran: cannot break a budget (listed, not failed)
                out.append(Subject(label, ref=ref, no_runs=True))
            elif row is None:  # ran, but no run ended in the trace: its duration is unknown
                out.append(Subject(label, missing=f"{label}: no complete run in this trace"))
            else:
                out.append(Subject(label, ref=ref, values=self.values(ctx, asks, (cid, label, row))))
        return Measurement(out)

    def observe(self, ctx: Context, paths) -> dict:
        """Every callback's duration p99, and every timer's jitter."""
        return self.observe_every(ctx, {"duration": "p99", "jitter": "max"})

    def suggest(self, seen: dict, runs, margin: float, paths) -> list[str]:
        """Per callback its duration's p99 (and per timer its jitter): the largest seen, with margin."""
        out = []
        for key in sorted(k for k, name in seen if name == "duration"):
            v = per_run(seen, (key, "duration"), runs)
            out += [f"  - callback: {yaml_text(exact(key))}", *suggested("duration", "p99", v, DURATION, margin, "p99")]
            j = per_run(seen, (key, "jitter"), runs)
            if j:
                out += suggested("jitter", "jitter", j, DURATION, margin)
        return out


KIND = Callback()
