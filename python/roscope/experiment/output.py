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


#: A spreadsheet reads a cell starting with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v):
    """A value for a CSV cell: text that a spreadsheet would take for a formula (=, +, -, @, tab,
    carriage return first) is written with a ' before it, as OWASP advises; numbers stay numbers."""
    if isinstance(v, str) and v.lstrip(" ").startswith(FORMULA_STARTS):
        return "'" + v
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


def _number_or_none(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


#: What a trial result must hold to be read back: key -> (check, what it should be).
RESULT_SHAPE = {
    "trial_id": (lambda v: isinstance(v, str), "text"),
    "condition": (lambda v: isinstance(v, str), "text"),
    "scenario": (lambda v: isinstance(v, str), "text"),
    "status": (lambda v: isinstance(v, str), "text"),
    "metrics": (lambda v: isinstance(v, dict) and all(_number_or_none(x) for x in v.values()),
                "an object of numbers"),
    "seq": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an integer"),
    "level": (_number_or_none, "a number"),
    "flood_rate_achieved_hz": (_number_or_none, "a number"),
    "harness_cpu_s": (_number_or_none, "a number"),
    "system_cpu_s": (_number_or_none, "a number"),
    "lttng_cpu_s": (_number_or_none, "a number"),
    "cpuset": (lambda v: v is None or isinstance(v, dict), "an object"),
}


def _kind(v) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__)


def check_result(path: Path, r) -> dict:
    """`r` read back from `path` has the shape of a trial result (an InputError naming the
    file and the key otherwise: one line, never a traceback later)."""
    if not isinstance(r, dict):
        raise InputError(f"{path}: not a trial result of roscope experiment ({_kind(r)}, not an object)")
    for key, (ok, what) in RESULT_SHAPE.items():
        required = key in ("trial_id", "condition", "scenario", "status", "metrics")
        if (key in r or required) and not ok(r.get(key)):
            raise InputError(f"{path}: not a trial result of roscope experiment: {key!r} is "
                             f"{'missing' if key not in r else _kind(r[key])}, not {what}")
    return r


def trial_results(run: Path) -> list[dict]:
    """Every finished trial's result.json, in the order they finished."""
    out = []
    tdir = Path(run) / "trials"
    if not tdir.is_dir():
        return out
    for d in tdir.iterdir():
        r = read_json(d / "result.json") if d.is_dir() else None
        if r is None or (isinstance(r, dict) and r.get("status") == INTERRUPTED):
            continue   # an interrupted attempt is not a result
        out.append(check_result(d / "result.json", r))
    out.sort(key=lambda r: (r.get("seq") or 0, r["trial_id"]))
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
    w = csv.writer(buf, lineterminator="\n")
    columns = [*FIXED_COLUMNS, *names, "failure_reason"]
    w.writerow([csv_cell(c) for c in columns])
    for row in rows:
        w.writerow([csv_cell("" if row.get(c) is None else row.get(c)) for c in columns])
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
            row = [*head, m, d["count"], *[d.get(k, "") for k in ("mean", "std", "min", "p50", "p90", "p99", "max")]]
            w.writerow([csv_cell(c) for c in row])
        if not s["metrics"]:
            w.writerow([csv_cell(c) for c in [*head, "", 0, "", "", "", "", "", "", ""]])
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


def check_manifest(path: Path, man) -> dict:
    """`man` read back from `path` has the shape of a run's manifest (an InputError otherwise)."""
    if not isinstance(man, dict) or not isinstance(man.get("experiment"), dict):
        raise InputError(f"{path}: not the manifest of an experiment run ('experiment' is "
                         f"{_kind(man.get('experiment')) if isinstance(man, dict) else 'missing'}, not an object)")
    name = man["experiment"].get("name")
    if not isinstance(name, str):
        raise InputError(f"{path}: not the manifest of an experiment run: the experiment's 'name' is {_kind(name)}")
    cfg = man.get("metrics")
    if cfg is not None and not (isinstance(cfg, dict) and all(isinstance(v, dict) for v in cfg.values())):
        raise InputError(f"{path}: not the manifest of an experiment run: 'metrics' is not an object of objects")
    return man


def check_breaking_points(path: Path, bps) -> dict:
    """breaking_points.json read back: {scenario: {param, breaking_point, highest_passing, note, tried}}."""
    if bps is None:
        return {}
    ok = isinstance(bps, dict) and all(
        isinstance(b, dict) and isinstance(b.get("param"), str) and _number_or_none(b.get("breaking_point"))
        and _number_or_none(b.get("highest_passing")) and isinstance(b.get("tried", []), list)
        and all(isinstance(t, dict) and _number_or_none(t.get("level")) and _number_or_none(t.get("flood_rate_achieved_hz"))
                for t in b.get("tried", []))
        for b in bps.values())
    if not ok:
        raise InputError(f"{path}: not the breaking points of roscope experiment (an object per scenario with "
                         "param, breaking_point, highest_passing, tried)")
    return bps


def open_run(path) -> dict:
    """A results directory: its manifest and trial results (InputError if it is not one)."""
    run = Path(path)
    if not run.is_dir():
        raise InputError(f"{run}: not a directory (give an experiment results directory)")
    man = read_json(run / MANIFEST)
    if man is None:
        raise InputError(f"{run}: not an experiment results directory (no {MANIFEST} written by roscope experiment run)")
    return {"dir": run, "manifest": check_manifest(run / MANIFEST, man), "results": trial_results(run),
            "breaking_points": check_breaking_points(run / "breaking_points.json",
                                                     read_json(run / "breaking_points.json"))}
