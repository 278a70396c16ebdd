"""`roscope check --suggest DATASET`: a budgets file from the runs of a dataset, each limit a
margin over what the runs showed (docs/ci.md, "Picking budgets from a baseline").

The values are measured as `roscope check` measures them, on each run, by each kind's
entry in roscope.check.kinds (`Kind.observe`; its entries written by `Kind.suggest`): per
callback the largest p99 of its duration over the runs, and per timer its largest period
jitter; per topic its lowest and highest rate and its largest p99 latency;
per executor node its threads' largest utilization; per path asked for (--from/--to) the
largest p99 of its latency. A limit is that value times (1 + margin), and at least a floor
above it (1 ms for durations, 5 points for utilization), rounded up to two significant
digits; a rate's bounds are the lowest times (1 - margin) and the highest times
(1 + margin). Only what every run has is budgeted.
"""
from __future__ import annotations

from collections.abc import Sequence

from roscope import dataset, opening
from roscope.check.kind import Context
from roscope.check.kinds import KINDS
from roscope.errors import InputError

MARGIN = 0.5


def observe(path: str, runs: str | None, paths: Sequence[tuple[str, str]], memory: int | None = None) -> dict:
    """{"runs": the run ids, "values": {(kind, subject key, what): {run: value}}}: what each
    kind reads of every chosen run (`Kind.observe`), kept when every run has it."""
    if not dataset.is_dataset(path):
        raise InputError(f"{path}: not a dataset (`roscope load TRACE --dataset DIR` makes one): --suggest reads one")
    ids = dataset.select(path, runs)
    if not ids:
        raise InputError(f"{path}: no run" + (f" matches {runs!r}" if runs else ""))
    seen: dict = {}
    for rid in ids:
        db = opening.open(path, runs=[rid], memory=memory)
        try:
            ctx = Context(db)
            for kind in KINDS.values():
                for (key, what), v in kind.observe(ctx, paths).items():
                    seen.setdefault((kind.name, key, what), {})[rid] = v
        finally:
            db.close()
    return {"runs": ids, "values": {k: v for k, v in seen.items() if len(v) == len(ids)}}


def render(obs: dict, paths: Sequence[tuple[str, str]], margin: float, source: str) -> str:
    """The budgets file (YAML text) of what `observe` saw: each kind's entries (`Kind.suggest`)."""
    n = len(obs["runs"])
    out = [f"# Budgets suggested by `roscope check --suggest` from {n} run{'s' if n != 1 else ''} of {source}",
           f"# ({', '.join(obs['runs'][:10])}{', ...' if n > 10 else ''}): each limit the largest value seen x "
           f"{1 + margin:g}, and at least 1 ms (5 points of utilization) above it; rates within x {1 - margin:g} .. "
           f"x {1 + margin:g} of the lowest and highest seen.", "budgets:"]
    for kind in KINDS.values():
        seen = {(key, what): v for (k, key, what), v in obs["values"].items() if k == kind.name}
        out += kind.suggest(seen, obs["runs"], margin, paths)
    out.append("")
    return "\n".join(out)


def suggest(path: str, runs: str | None = None, paths: Sequence[tuple[str, str]] = (), margin: float = MARGIN,
            memory: int | None = None) -> str:
    """A budgets file (YAML text) for the runs of the dataset `path` (those `runs` selects)."""
    if not 0 <= margin <= 10:
        raise InputError(f"--margin {margin}: a margin is between 0 and 10 (0.5: 50 % over what was seen)")
    return render(observe(path, runs, paths, memory), paths, margin, path)
