"""`roscope check --suggest DATASET`: a budgets file from the runs of a dataset, each limit a
margin over what the runs showed (docs/ci.md, "Picking budgets from a baseline").

The values are measured as `roscope check` measures them (roscope.check.measure, on
each run): per callback the largest p99 of its duration over the runs, and per timer its
largest period jitter; per topic its lowest and highest rate and its largest p99 latency;
per executor node its threads' largest utilization; per path asked for (--from/--to) the
largest p99 of its latency. A limit is that value times (1 + margin), and at least a floor
above it (1 ms for durations, 5 points for utilization), rounded up to two significant
digits; a rate's bounds are the lowest times (1 - margin) and the highest times
(1 + margin). Only what every run has is budgeted.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from roscope import dataset, opening
from roscope.check import units
from roscope.check.budgets import Budget, Limit, Measure
from roscope.check.measure import ERROR, Context, evaluate
from roscope.check.units import DURATION, RATE, SHARE
from roscope.errors import InputError

MARGIN = 0.5
#: The smallest room a suggested limit leaves above the largest value seen.
FLOOR = {DURATION: 1e6, SHARE: 0.05}
#: Topics every ROS 2 node has, left out of the suggestion.
NOISE_TOPICS = ("/rosout", "/parameter_events")


def _probe(paths: Sequence[tuple[str, str]]) -> list[Budget]:
    """Budgets that select everything, to read each value (their limits are never used)."""
    big = float("inf")
    p99 = Limit("p99", "<=", big, DURATION)
    return [
        Budget("callback", (Measure("duration", (p99,)), Measure("jitter", (Limit("max", "<=", big, DURATION),))),
               select=".", index=0),
        Budget("topic", (Measure("rate", (Limit("min", ">=", 0, RATE),)), Measure("latency", (p99,))), select=".",
               index=1),
        *(Budget("path", (Measure("latency", (p99,)),), path=(("from", a), ("to", b)), index=2 + i)
          for i, (a, b) in enumerate(paths)),
    ]


def observe(path: str, runs: str | None, paths: Sequence[tuple[str, str]], memory: int | None = None) -> dict:
    """{(budget index, measure, subject key): [value per run]} over the chosen runs, and the run ids."""
    if not dataset.is_dataset(path):
        raise InputError(f"{path}: not a dataset (`roscope load TRACE --dataset DIR` makes one): --suggest reads one")
    ids = dataset.select(path, runs)
    if not ids:
        raise InputError(f"{path}: no run" + (f" matches {runs!r}" if runs else ""))
    probe = _probe(paths)
    seen: dict = {}
    nodes: dict = {}
    for rid in ids:
        db = opening.open(path, runs=[rid], memory=memory)
        try:
            ctx = Context(db)
            for line in evaluate(db, probe, ctx):
                if line.status == ERROR or line.value is None:  # or a callback with no runs
                    continue
                key = (line.budget.index, line.measure.name, line.key)
                seen.setdefault(key, {})[rid] = line.value
            for t in ctx.threads:
                for n in t["nodes"]:
                    nodes.setdefault(n, {}).setdefault(rid, []).append(t["utilization"] or 0)
        finally:
            db.close()
    return {"runs": ids, "values": {k: v for k, v in seen.items() if len(v) == len(ids)},
            "executors": {n: [max(v[r]) for r in ids] for n, v in nodes.items() if len(v) == len(ids)}}


def _up(x: float) -> float:
    """`x` rounded up to two significant digits."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return math.ceil(x / 10 ** e - 1e-9) * 10 ** e


def _down(x: float) -> float:
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return math.floor(x / 10 ** e + 1e-9) * 10 ** e


def limit(worst: float, kind: str, margin: float) -> float:
    """The suggested upper limit over the largest value seen."""
    return _up(max(worst * (1 + margin), worst + FLOOR.get(kind, 0)))


def _q(s: str) -> str:
    """A YAML scalar for any text (JSON's double-quoted form is YAML's too)."""
    return json.dumps(s, ensure_ascii=False)


def _exact(name: str) -> str:
    return "^" + re.escape(name) + "$"


def render(obs: dict, paths: Sequence[tuple[str, str]], margin: float, source: str) -> str:
    """The budgets file (YAML text) of what `observe` saw."""
    vals, n = obs["values"], len(obs["runs"])
    out = [f"# Budgets suggested by `roscope check --suggest` from {n} run{'s' if n != 1 else ''} of {source}",
           f"# ({', '.join(obs['runs'][:10])}{', ...' if n > 10 else ''}): each limit the largest value seen x "
           f"{1 + margin:g}, and at least 1 ms (5 points of utilization) above it; rates within x {1 - margin:g} .. "
           f"x {1 + margin:g} of the lowest and highest seen.", "budgets:"]

    def seen(kind: str, v: list) -> str:
        return ", ".join(units.show(x, kind) for x in v)

    for (i, m, key), per_run in sorted(vals.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        v = [per_run[r] for r in obs["runs"]]
        if i == 0 and m == "duration":
            out += [f"  - callback: {_q(_exact(key))}", f"    # p99 seen: {seen(DURATION, v)}",
                    f"    duration: {{p99: {units.text(limit(max(v), DURATION, margin), DURATION)}}}"]
            jit = vals.get((0, "jitter", key))
            if jit:
                j = [jit[r] for r in obs["runs"]]
                out += [f"    # jitter seen: {seen(DURATION, j)}",
                        f"    jitter: {units.text(limit(max(j), DURATION, margin), DURATION)}"]
        elif i == 1 and m == "rate" and key not in NOISE_TOPICS and min(v) > 0:
            out += [f"  - topic: {_q(_exact(key))}", f"    # rate seen: {seen(RATE, v)}",
                    f"    rate: {{min: {units.text(_down(min(v) * (1 - margin)), RATE)}, "
                    f"max: {units.text(_up(max(v) * (1 + margin)), RATE)}}}"]
            lat = vals.get((1, "latency", key))
            if lat:
                lv = [lat[r] for r in obs["runs"]]
                out += [f"    # latency p99 seen: {seen(DURATION, lv)}",
                        f"    latency: {{p99: {units.text(limit(max(lv), DURATION, margin), DURATION)}}}"]
        elif i >= 2:
            a, b = paths[i - 2]
            out += [f"  - path: {{from: {_q(a)}, to: {_q(b)}}}", f"    # latency p99 seen: {seen(DURATION, v)}",
                    f"    latency: {{p99: {units.text(limit(max(v), DURATION, margin), DURATION)}}}"]
    for node, u in sorted(obs["executors"].items()):
        cap = min(1.0, limit(max(u), SHARE, margin))
        out += [f"  - executor: {_q(_exact(node))}", f"    # utilization seen (busiest thread): {seen(SHARE, u)}",
                f"    utilization: {{max: {units.text(cap, SHARE)}}}"]
    out += ["  - lost: 0", ""]
    return "\n".join(out)


def suggest(path: str, runs: str | None = None, paths: Sequence[tuple[str, str]] = (), margin: float = MARGIN,
            memory: int | None = None) -> str:
    """A budgets file (YAML text) for the runs of the dataset `path` (those `runs` selects)."""
    if not 0 <= margin <= 10:
        raise InputError(f"--margin {margin}: a margin is between 0 and 10 (0.5: 50 % over what was seen)")
    return render(observe(path, runs, paths, memory), paths, margin, path)

