"""Reading results back: the per-condition table (`report`), two runs or two conditions
side by side (`compare`), and the runs below a directory (`list`)."""
from __future__ import annotations

from pathlib import Path

from roscope.errors import InputError
from roscope.experiment import output
from roscope.experiment.stattests import bootstrap_diff_ci, describe, mann_whitney_u

ALPHA = 0.05


def report(run_dir) -> dict:
    run = output.open_run(run_dir)
    man = run["manifest"]
    return {"dir": str(run["dir"]), "experiment": man["experiment"]["name"], "state": man.get("state"),
            "host": man.get("host"), "cpu_count": man.get("cpu_count"), "kernel": man.get("kernel"),
            "metrics": _metric_config(man), "summary": output.summarize(run["results"]),
            "breaking_points": run["breaking_points"],
            "overhead": overhead(run["results"])}


def _metric_config(man: dict) -> dict:
    return man.get("metrics") or (man["experiment"].get("config") or {}).get("metrics") or {}


def overhead(results: list[dict]) -> dict | None:
    """CPU time of roscope's own process during trials as a share of the system's CPU time."""
    rs = [r for r in results if r.get("system_cpu_s") and r.get("harness_cpu_s") is not None]
    if not rs:
        return None
    h = sum(r["harness_cpu_s"] for r in rs)
    s = sum(r["system_cpu_s"] for r in rs)
    out = {"trials": len(rs), "harness_cpu_s": h, "system_cpu_s": s, "share": h / s if s else None}
    lt = [r["lttng_cpu_s"] for r in rs if r.get("lttng_cpu_s") is not None]
    if len(lt) == len(rs):
        out["lttng_cpu_s"] = sum(lt)
        out["lttng_share"] = sum(lt) / s if s else None
    return out


def _values(results: list[dict], cond: str, metric: str) -> list[float]:
    return [r["metrics"][metric] for r in results
            if r["condition"] == cond and r["status"] == "success" and r["metrics"].get(metric) is not None]


def compare(a_dir, b_dir, a_cond: str | None = None, b_cond: str | None = None, *, alpha: float = ALPHA,
            resamples: int = 10000, seed: int = 0) -> dict:
    """Per condition pair and metric: mean of B minus mean of A with a percentile bootstrap
    interval, the two-sided Mann-Whitney U test, and a verdict: 'worse'/'better' when p < alpha
    and the interval excludes 0 (using the metric's `better` direction, lower by default),
    otherwise 'no significant difference'."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InputError(f"--alpha {alpha}: give a significance level between 0 and 1 (e.g. 0.05)")
    a, b = output.open_run(a_dir), output.open_run(b_dir)
    a_conds = list(dict.fromkeys(r["condition"] for r in a["results"]))
    b_conds = list(dict.fromkeys(r["condition"] for r in b["results"]))
    if a_cond or b_cond:
        pairs = [(a_cond or b_cond, b_cond or a_cond)]
        for run, c, conds in ((a, pairs[0][0], a_conds), (b, pairs[0][1], b_conds)):
            if c not in conds:
                raise InputError(f"{run['dir']}: no trials of condition {c!r} (it has: {', '.join(conds) or 'none'})")
    else:
        pairs = [(c, c) for c in a_conds if c in b_conds]
        if not pairs:
            raise InputError(f"{a['dir']} and {b['dir']} have no condition in common; name them with --a and --b")
    cfg = {**_metric_config(a["manifest"]), **_metric_config(b["manifest"])}
    out = []
    for ca, cb in pairs:
        metrics = [m for m in output.metric_names(a["results"]) if m in output.metric_names(b["results"])]
        na = [r for r in a["results"] if r["condition"] == ca]
        nb = [r for r in b["results"] if r["condition"] == cb]
        entry = {"a": ca, "b": cb, "a_trials": len(na), "b_trials": len(nb),
                 "a_success_rate": sum(r["status"] == "success" for r in na) / len(na),
                 "b_success_rate": sum(r["status"] == "success" for r in nb) / len(nb), "metrics": []}
        for m in metrics:
            entry["metrics"].append(_compare_metric(m, _values(a["results"], ca, m), _values(b["results"], cb, m),
                                                    (cfg.get(m) or {}).get("better", "lower"), alpha, resamples, seed))
        out.append(entry)
    return {"a": str(a["dir"]), "b": str(b["dir"]), "alpha": alpha, "comparisons": out}


def _compare_metric(m: str, va: list, vb: list, better: str, alpha: float, resamples: int, seed: int) -> dict:
    da, db = describe(va), describe(vb)
    res = {"metric": m, "a": da, "b": db, "better": better}
    if len(va) < 2 or len(vb) < 2:
        res["verdict"] = "too few successful trials"
        return res
    diff = db["mean"] - da["mean"]
    lo, hi = bootstrap_diff_ci(va, vb, resamples=resamples, seed=seed)
    u = mann_whitney_u(va, vb)
    res.update(diff=diff, rel_diff=diff / da["mean"] if da["mean"] else None, ci_low=lo, ci_high=hi,
               u=u["u"], p=u["p"], test=u["method"])
    if u["p"] < alpha and (lo > 0 or hi < 0):
        higher = diff > 0
        res["verdict"] = "worse" if higher == (better == "lower") else "better"
    else:
        res["verdict"] = "no significant difference"
    return res


#: How deep `list` looks below each directory it is given.
LIST_DEPTH = 4


def _candidates(top: Path) -> list[Path]:
    """Directories holding a manifest.json at or below `top`, at most LIST_DEPTH levels down;
    the inside of a results directory is not searched (its trials are not runs)."""
    found, todo = [], [(top, 0)]
    while todo:
        d, depth = todo.pop()
        if (d / output.MANIFEST).is_file():
            found.append(d)
            continue
        if depth >= LIST_DEPTH:
            continue
        try:
            kids = [k for k in d.iterdir() if k.is_dir() and not k.is_symlink()]
        except OSError:
            continue
        todo.extend((k, depth + 1) for k in kids)
    return sorted(found)


def list_runs(paths) -> tuple[list[dict], list[str]]:
    """The results directories at or below the given paths (LIST_DEPTH levels down), and a
    warning for each one that cannot be read (it is left out; the others are listed)."""
    found, warnings = [], []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise InputError(f"{p}: not a directory")
        for d in _candidates(p):
            try:
                man = output.read_json(d / output.MANIFEST)
                if not isinstance(man, dict) or "experiment" not in man:
                    continue   # another program's manifest.json
                output.check_manifest(d / output.MANIFEST, man)
                rs = output.trial_results(d)
            except InputError as e:
                warnings.append(f"left out {d}: {e}")
                continue
            found.append({"dir": str(d), "experiment": man["experiment"]["name"], "state": man.get("state"),
                          "started": man.get("started"), "trials": len(rs),
                          "successes": sum(r["status"] == "success" for r in rs)})
    return found, warnings
