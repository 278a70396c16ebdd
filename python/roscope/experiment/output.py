"""The results directory of one experiment run, written atomically file by file.

    DIR/manifest.json          config, host, CPU count, kernel, versions, git commit, state
    DIR/trials/ID/result.json  one trial's result (the record of truth; written last)
    DIR/trials/ID/...          its diagnostics: driver.stdout, driver.stderr, system.log, trace/
    DIR/trials.csv, trials.json  every trial (trial_id, scenario, condition, status, metrics...)
    DIR/summary.json, summary.csv  per condition: n, success rate, failure kinds, statistics per metric
    DIR/breaking_points.json   the bisections' levels and outcomes
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from roscope.errors import InputError
from roscope.experiment.stattests import describe
from roscope.files import atomic_write

MANIFEST = "manifest.json"
#: The status of a trial cut short by Ctrl-C / SIGTERM: its result.json says what was stopped,
#: but it is no result (left out of the tables; `--resume` runs it again).
INTERRUPTED = "interrupted"
FIXED_COLUMNS = ["trial_id", "scenario", "condition", "level", "status", "wall_ms", "score", "flood_rate_achieved_hz"]


def _clean(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, set):
        return sorted(_clean(x) for x in v)
    return v


def write_json(path: Path, obj) -> None:
    atomic_write(path, json.dumps(_clean(obj), indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read {path}: {e}") from None


def trial_results(run: Path) -> list[dict]:
    """Every finished trial's result.json, in the order they finished."""
    out = []
    tdir = Path(run) / "trials"
    if not tdir.is_dir():
        return out
    for d in tdir.iterdir():
        r = read_json(d / "result.json") if d.is_dir() else None
        if r is not None and r.get("status") != INTERRUPTED:   # an interrupted attempt is not a result
            out.append(r)
    out.sort(key=lambda r: (r.get("seq", 0), r["trial_id"]))
    return out


def metric_names(results: list[dict]) -> list[str]:
    names: list[str] = []
    for r in results:
        for k in r.get("metrics", {}):
            if k not in names:
                names.append(k)
    return names


def write_tables(run: Path, results: list[dict]) -> None:
    run = Path(run)
    names = metric_names(results)
    rows = []
    for r in results:
        row = {k: r.get(k) for k in FIXED_COLUMNS}
        row.update({m: r.get("metrics", {}).get(m) for m in names})
        row["failure_reason"] = r.get("reason")
        rows.append(row)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*FIXED_COLUMNS, *names, "failure_reason"], lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if v is None else v) for k, v in row.items()})
    atomic_write(run / "trials.csv", buf.getvalue())
    write_json(run / "trials.json", rows)
    summary = summarize(results)
    write_json(run / "summary.json", summary)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["condition", "scenario", "level", "n", "successes", "success_rate", "failures", "cpuset_verified", "metric",
                "count", "mean", "std", "min", "p50", "p90", "p99", "max"])
    for s in summary:
        fails = ";".join(f"{k}={v}" for k, v in s["failures"].items())
        head = [s["condition"], s["scenario"], s["level"], s["n"], s["successes"], s["success_rate"], fails,
                {True: "yes", False: "no"}.get(s.get("cpuset_verified"), "")]
        for m, d in s["metrics"].items():
            w.writerow([*head, m, d["count"], *[d.get(k, "") for k in ("mean", "std", "min", "p50", "p90", "p99", "max")]])
        if not s["metrics"]:
            w.writerow([*head, "", 0, "", "", "", "", "", "", ""])
    atomic_write(run / "summary.csv", buf.getvalue())


def summarize(results: list[dict]) -> list[dict]:
    """Per condition, in first-seen order: n, successes, success rate, failure kinds, and
    per metric the statistics over the successful trials (metrics of failed trials are
    summarized apart, under failed_metrics)."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["condition"], []).append(r)
    out = []
    for cond, rs in groups.items():
        ok = [r for r in rs if r["status"] == "success"]
        fails: dict[str, int] = {}
        for r in rs:
            if r["status"] != "success":
                fails[r["status"]] = fails.get(r["status"], 0) + 1
        names = metric_names(rs)
        s = {"condition": cond, "scenario": rs[0]["scenario"], "level": rs[0].get("level"), "n": len(rs),
             "successes": len(ok), "success_rate": len(ok) / len(rs), "failures": fails,
             "metrics": {m: describe([r["metrics"].get(m) for r in ok]) for m in names},
             "failed_metrics": {m: describe([r["metrics"].get(m) for r in rs if r["status"] != "success"]) for m in names}}
        rates = [r["flood_rate_achieved_hz"] for r in rs if r.get("flood_rate_achieved_hz") is not None]
        if rates:
            s["flood_rate_achieved_hz"] = sum(rates) / len(rates)
        cpus = [r.get("cpuset") for r in rs if r.get("cpuset")]
        if cpus:
            s["cpuset_verified"] = all(c.get("verified") for c in cpus)
        out.append(s)
    return out


def open_run(path) -> dict:
    """A results directory: its manifest and trial results (InputError if it is not one)."""
    run = Path(path)
    man = read_json(run / MANIFEST)
    if man is None or "experiment" not in man:
        raise InputError(f"{run}: not an experiment results directory (no {MANIFEST} written by roscope experiment run)")
    return {"dir": run, "manifest": man, "results": trial_results(run)}
