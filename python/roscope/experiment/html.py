"""`roscope experiment report DIR --html OUT`: one self-contained offline page with roscope's
report machinery (roscope.report.html): the per-condition table, each metric's distribution
per condition side by side, and the sweep curves with the breaking point."""
from __future__ import annotations

import os
from pathlib import Path

from roscope import files
from roscope.experiment import output
from roscope.experiment.analysis import report
from roscope.report.html import Col, Page, esc, table
from roscope.version import __version__


def _box(rows: list[dict], cond_order: list[str], metric: str, unit: str) -> dict:
    data = []
    for c in cond_order:
        v = [r["metrics"][metric] for r in rows
             if r["condition"] == c and r["status"] == "success" and r["metrics"].get(metric) is not None]
        if v:
            data.append({"type": "box", "name": c, "y": v, "boxpoints": "all", "jitter": 0.3, "pointpos": 0})
    return {"data": data, "layout": {"title": {"text": f"{metric} per condition (successful trials)", "font": {"size": 15}},
                                     "height": 380, "showlegend": False, "margin": {"l": 60, "r": 20, "t": 50, "b": 90},
                                     "yaxis": {"title": {"text": f"{metric} ({unit})" if unit else metric}}}}


def _sweep(summary: list[dict], scenario: str, metric: str, unit: str, bp: dict | None) -> dict | None:
    pts = sorted((s for s in summary if s["scenario"] == scenario and s["level"] is not None), key=lambda s: s["level"])
    if len(pts) < 2:
        return None
    x = [s["level"] for s in pts]
    mean = [(s["metrics"].get(metric) or {}).get("mean") for s in pts]
    std = [(s["metrics"].get(metric) or {}).get("std") for s in pts]
    ok = [100 * s["success_rate"] for s in pts]
    data = [{"type": "scatter", "mode": "lines+markers", "name": f"{metric} mean ± std", "x": x, "y": mean,
             "error_y": {"type": "data", "array": std, "visible": True}},
            {"type": "scatter", "mode": "lines+markers", "name": "success %", "x": x, "y": ok, "yaxis": "y2",
             "line": {"dash": "dot"}}]
    shapes = []
    if bp and bp.get("breaking_point") is not None:
        shapes.append({"type": "line", "x0": bp["breaking_point"], "x1": bp["breaking_point"], "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#d62728", "dash": "dash"}})
    param = pts[0].get("condition", "").split("@")[-1].split("=")[0]
    return {"data": data, "layout": {"title": {"text": f"{scenario}: {metric} and success against {param}", "font": {"size": 15}},
                                     "height": 360, "margin": {"l": 60, "r": 60, "t": 50, "b": 50}, "shapes": shapes,
                                     "xaxis": {"title": {"text": param}},
                                     "yaxis": {"title": {"text": f"{metric} ({unit})" if unit else metric}},
                                     "yaxis2": {"title": {"text": "success %"}, "overlaying": "y", "side": "right",
                                                "range": [0, 105]}}}


def build(run_dir) -> str:
    rep = report(run_dir)
    rows = output.trial_results(Path(run_dir))
    page = Page(f"roscope experiment: {rep['experiment']}")
    names = list(dict.fromkeys(m for s in rep["summary"] for m in s["metrics"]))
    units = {m: (rep["metrics"].get(m) or {}).get("unit") or "" for m in names}
    trows = []
    for s in rep["summary"]:
        row = {"condition": s["condition"], "n": s["n"], "success": s["success_rate"],
               "failures": ", ".join(f"{k} {v}" for k, v in s["failures"].items()) or "-",
               "cpuset": {True: "verified", False: "NOT verified"}.get(s.get("cpuset_verified"), "-")}
        for m in names:
            d = s["metrics"].get(m) or {}
            row[m] = f"{d['mean']:.3f} ± {d['std']:.3f}" if d.get("count") else "-"
        trows.append(row)
    cols = [Col("condition", "condition"), Col("n", "trials", "int"), Col("success", "success %", "pct"),
            *[Col(m, f"{m} ({units[m]})" if units[m] else m) for m in names], Col("failures", "failures"), Col("cpuset", "cpuset")]
    head = (f"<p>{esc(rep['dir'])}: state {esc(rep['state'])}; host {esc(rep['host'])}, {esc(rep['cpu_count'])} CPUs, "
            f"{esc(rep['kernel'])}.</p>")
    oh = rep.get("overhead")
    if oh and oh.get("share") is not None:
        head += (f"<p>Harness overhead: roscope used {oh['harness_cpu_s']:.2f} s of CPU while the system used "
                 f"{oh['system_cpu_s']:.2f} s ({100 * oh['share']:.1f} %) over {oh['trials']} trials.</p>")
    page.add("summary", "Conditions", head + table("conditions", cols, trows))
    conds = [s["condition"] for s in rep["summary"]]
    page.add("distributions", "Distributions", "".join(page.fig(f"box-{m}", _box(rows, conds, m, units[m])) for m in names))
    sweeps = []
    for sc in dict.fromkeys(s["scenario"] for s in rep["summary"] if s["level"] is not None):
        bp = rep["breaking_points"].get(sc)
        if bp:
            txt = (f"first failing level {bp['breaking_point']}, highest passing {bp['highest_passing']}"
                   if bp.get("breaking_point") is not None else
                   f"no failure up to the highest level tried, {bp['highest_passing']}")
            sweeps.append(f"<p>Breaking point of {esc(sc)} ({esc(bp['param'])}): {esc(txt)}.</p>")
        for m in names:
            spec = _sweep(rep["summary"], sc, m, units[m], bp)
            if spec:
                sweeps.append(page.fig(f"sweep-{sc}-{m}", spec))
    if sweeps:
        page.add("sweeps", "Sweeps and breaking points", "".join(sweeps))
    return page.render(f"Made by roscope {__version__} from {os.path.basename(os.path.normpath(str(run_dir)))}. "
                       "Works offline: everything is in this file.")


def write(run_dir, out) -> Path:
    """Writes the HTML report of the results directory `run_dir` to `out` (roscope.files'
    rules; never over an existing file, nor over a file of the results it reads)."""
    run = Path(run_dir)
    inputs = [p for p in run.iterdir() if p.is_file()] + [run / "trials"] if run.is_dir() else []
    files.check(out, force=None, inputs=inputs, what="HTML file")
    files.write_file(out, build(run_dir), force=None, inputs=inputs)
    return Path(out)
