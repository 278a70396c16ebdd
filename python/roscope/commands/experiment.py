"""`roscope experiment`: repeatable stress experiments on a ROS system (docs/experiment.md).

    roscope experiment run EXPERIMENT.yaml [-o DIR] [--resume]
    roscope experiment list [DIR...] [--json]
    roscope experiment report DIR [--json]
    roscope experiment compare A B [--a COND] [--b COND] [--alpha P] [--json]
"""
from __future__ import annotations

import sys

from roscope.commands import _common as C


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run stress experiments on a ROS system from an experiment file, and compare runs",
                       description="Run a ROS system through trials under scenarios (baseline, CPU load, message "
                                   "flood, CPU pinning, sweeps, breaking-point search) described by a YAML file, "
                                   "and summarize or compare the results (docs/experiment.md).")
    vs = p.add_subparsers(dest="verb", metavar="VERB")
    r = vs.add_parser("run", help="run (or --resume) an experiment file into a new results directory")
    r.add_argument("experiment", metavar="EXPERIMENT.yaml")
    r.add_argument("-o", "--output", metavar="DIR",
                   help="results directory to create (default ./experiment-NAME-TIME); never written into if it exists, "
                        "unless --resume")
    r.add_argument("--resume", action="store_true", help="complete the interrupted run in -o DIR (same experiment file)")
    r.add_argument("--profile", action="store_true",
                   help="record 'perf record -g' of the system's processes while each driver runs, and write "
                        "trials/ID/flame.svg with inferno or FlameGraph when on PATH (changes the timings)")
    r.set_defaults(func=_run)
    li = vs.add_parser("list", help="the results directories at or below DIRs (default: .; 4 levels down); "
                                    "one that cannot be read is left out with a warning")
    li.add_argument("dirs", nargs="*", metavar="DIR", default=["."])
    C.add_json(li)
    li.set_defaults(func=_list)
    rp = vs.add_parser("report", help="per condition: trials, success rate, failure kinds, metrics mean ± std")
    rp.add_argument("dir", metavar="DIR")
    rp.add_argument("--html", metavar="OUT", help="also write a self-contained HTML report (distributions per condition, "
                                                  "sweep curves with the breaking point); never replaces a file")
    C.add_json(rp)
    rp.set_defaults(func=_report)
    cp = vs.add_parser("compare", help="two runs (or two conditions) per metric: difference, bootstrap CI, Mann-Whitney U")
    cp.add_argument("a", metavar="A")
    cp.add_argument("b", metavar="B")
    cp.add_argument("--a", dest="a_cond", metavar="COND", help="condition of A to compare (default: every common one)")
    cp.add_argument("--b", dest="b_cond", metavar="COND", help="condition of B to compare")
    cp.add_argument("--alpha", type=C.number("a significance level", 0, 1, lo_open=True, hi_open=True), default=0.05,
                    help="significance level (default 0.05)")
    C.add_json(cp)
    cp.set_defaults(func=_compare)
    p.set_defaults(func=lambda _a: (p.print_help(), 2)[1])


def _run(args) -> int:
    from roscope.experiment import config, runner

    exp = config.load(args.experiment)
    try:
        out = runner.run(exp, args.output, args.resume, profile=args.profile)
    except KeyboardInterrupt:
        print("roscope: experiment interrupted; finished trials are kept: complete it with "
              "'roscope experiment run EXPERIMENT.yaml -o DIR --resume'", file=sys.stderr)
        raise
    print(C.escape(f"roscope: experiment results in {out}"))
    _print_report(_rep(out))
    return 0


def _rep(d):
    from roscope.experiment import analysis

    return analysis.report(d)


def _list(args) -> int:
    from roscope.experiment import analysis

    runs, warnings = analysis.list_runs(args.dirs)
    for w in warnings:
        print(C.escape(f"roscope: warning: {w}"), file=sys.stderr)
    if args.json:
        C.print_json(runs)
        return 0
    print(f"{'directory':40} {'experiment':20} {'state':12} {'trials':>6} {'ok':>4}  started")
    for r in runs:
        print(f"{C.cell(r['dir'], 40):40} {C.cell(r['experiment'], 20):20} {C.cell(r['state'], 12):12} "
              f"{r['trials']:6d} {r['successes']:4d}  {C.cell(r['started'], 25)}")
    return 0


def _report(args) -> int:
    rep = _rep(args.dir)
    C.show(args, rep, _print_report)
    if args.html:
        from roscope.experiment import html

        out = html.write(args.dir, args.html)
        print(C.escape(f"roscope: HTML report written to {out}"), file=sys.stderr)
    return 0


def _fmt(d: dict | None, unit: str = "") -> str:
    if not d or not d.get("count"):
        return "-"
    return f"{d['mean']:.3f} ± {d['std']:.3f}"


def _print_report(rep: dict) -> None:
    out = C.TextOut()
    out.write(f"experiment {rep['experiment']} ({rep['dir']}): {rep['state']}; host {rep['host']}, "
              f"{rep['cpu_count']} CPUs, {rep['kernel']}\n")
    names = list(dict.fromkeys(m for s in rep["summary"] for m in s["metrics"]))
    head = ["condition", "trials", "success %", *[f"{m} ({(rep['metrics'].get(m) or {}).get('unit') or ''})".replace(" ()", "")
                                                  for m in names], "failures", "cpuset"]
    floods = any(s.get("flood_rate_achieved_hz") is not None for s in rep["summary"])
    if floods:
        head.append("flood Hz achieved")
    rows = []
    for s in rep["summary"]:
        rows.append([s["condition"], str(s["n"]), f"{100 * s['success_rate']:.0f}",
                     *[_fmt(s["metrics"].get(m)) for m in names],
                     ", ".join(f"{k} {v}" for k, v in s["failures"].items()) or "-",
                     {True: "verified", False: "NOT verified"}.get(s.get("cpuset_verified"), "-")])
        if floods:
            v = s.get("flood_rate_achieved_hz")
            rows[-1].append("-" if v is None else f"{v:.0f}")
    widths = [max(len(C.escape(x)) for x in col) for col in zip(head, *rows)]
    for row in [head, *rows]:
        out.write("  ".join(C.cell(x, w).ljust(w) for x, w in zip(row, widths)).rstrip() + "\n")
    for name, bp in (rep.get("breaking_points") or {}).items():
        if bp.get("breaking_point") is not None:
            out.write(f"breaking point of {name} ({bp['param']}): first failing level {bp['breaking_point']}, "
                      f"highest passing {bp['highest_passing']} ({bp['note']})\n")
        else:
            out.write(f"breaking point of {name} ({bp['param']}): none; highest level tried without failure "
                      f"{bp['highest_passing']}\n")
        got = [t for t in bp.get("tried", []) if t.get("flood_rate_achieved_hz") is not None]
        if got:
            out.write("  flood rate achieved per publisher: " + ", ".join(
                f"{t['level']} -> {t['flood_rate_achieved_hz']:.0f} Hz" + (" (failed)" if t["failed"] else "")
                for t in sorted(got, key=lambda t: t["level"])) + "\n")
    oh = rep.get("overhead")
    if oh and oh.get("share") is not None:
        out.write(f"harness overhead: roscope used {oh['harness_cpu_s']:.2f} s CPU while the system used "
                  f"{oh['system_cpu_s']:.2f} s ({100 * oh['share']:.1f} %) over {oh['trials']} trials\n")
        if oh.get("lttng_share") is not None:
            out.write(f"tracing: LTTng's daemons used {oh['lttng_cpu_s']:.2f} s CPU in the same windows "
                      f"({100 * oh['lttng_share']:.1f} % of the system's; they serve every session on the machine)\n")


def _compare(args) -> int:
    from roscope.experiment import analysis

    res = analysis.compare(args.a, args.b, args.a_cond, args.b_cond, alpha=args.alpha)
    C.show(args, res, _print_compare)
    return 0


def _print_compare(res: dict) -> None:
    out = C.TextOut()
    for c in res["comparisons"]:
        out.write(f"A {res['a']} [{c['a']}] ({c['a_trials']} trials, {100 * c['a_success_rate']:.0f} % success)  vs  "
                  f"B {res['b']} [{c['b']}] ({c['b_trials']} trials, {100 * c['b_success_rate']:.0f} % success)\n")
        out.write(f"  {'metric':12} {'A mean ± std':>22} {'B mean ± std':>22} {'B - A':>10} {'95% CI':>24} {'p':>7}  verdict\n")
        for m in c["metrics"]:
            if "diff" not in m:
                out.write(f"  {C.cell(m['metric'], 12):12} {_fmt(m['a']):>22} {_fmt(m['b']):>22} {'':>10} {'':>24} {'':>7}  "
                          f"{m['verdict']}\n")
                continue
            ci = f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
            out.write(f"  {C.cell(m['metric'], 12):12} {_fmt(m['a']):>22} {_fmt(m['b']):>22} {m['diff']:>10.3f} {ci:>24} "
                      f"{m['p']:>7.4f}  {m['verdict']}\n")
