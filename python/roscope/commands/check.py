"""`roscope check BUDGETS.yaml TRACE...|DB|DATASET [--run ID]`: latency budgets as a
pass/fail verdict for CI (docs/ci.md).

The budgets are roscope.check's (library): this module reads the arguments, runs the
check, and writes its text, JSON, JUnit XML and GitHub Actions annotations. Exit status:
0 every budget passes, 1 a budget fails, 2 a budget cannot be evaluated (nothing
selected, no flow, no kernel data for `why`) or the check cannot run at all (a wrong
budgets file or input: `roscope: error: ...`), so that 1 always means "a budget failed".
`--suggest DATASET` prints a budgets file instead.
"""
from __future__ import annotations

import os
import sys
import time

from roscope.check import infrastructure
from roscope.commands import _common as C
from roscope.errors import InputError, user_message

#: Exit status when the check cannot run or a budget cannot be evaluated.
EXIT_INCOMPLETE = 2


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check latency budgets (YAML) on a trace, database or dataset run: pass/fail for CI",
        description="Evaluates every budget of BUDGETS.yaml (callback durations and timer jitter, topic rates and "
        "latencies, end-to-end path latencies and deadline misses, executor utilization, why shares, lost events) "
        "on the trace, database or dataset run, and prints one line per budget: the measured value, the limit, the "
        "margin and pass/fail. Exit status 0 all pass, 1 a budget fails, 2 a budget cannot be evaluated or the "
        "check cannot run. `--suggest DATASET` prints a budgets file from a dataset's runs instead (docs/ci.md).",
        usage="roscope check BUDGETS.yaml TRACE...|DB|DATASET [--run ID] [--json] [--junit FILE] [--github] "
              "[--infrastructure keep|drop] [--baseline DATASET [--runs GLOB] [--alpha A]]\n       roscope check --suggest DATASET [--runs GLOB] "
              "[--from RE --to RE ...] [--margin M] [-o FILE]",
    )
    p.add_argument("inputs", nargs="*", type=C.input_path, metavar="BUDGETS.yaml TRACE|DB|DATASET",
                   help="the budgets file, then the trace directories, one database or one dataset")
    p.add_argument("--run", metavar="ID", help="with a dataset: the run to check")
    p.add_argument("--baseline", metavar="DATASET",
                   help="also compare each budget's metric with the runs of this dataset (bootstrap interval and "
                        "Mann-Whitney U, as `roscope experiment compare`)")
    p.add_argument("--runs", metavar="GLOB",
                   help="with --baseline or --suggest: the runs to use (a shell pattern; default all)")
    p.add_argument("--alpha", type=C.number("a significance level", 0, 1, lo_open=True, hi_open=True), default=0.05, metavar="A",
                   help="with --baseline: the family-wise significance level: the chance of any false 'worse' or "
                        "'better' among the lines compared, held by Holm-Bonferroni over them (default 0.05)")
    p.add_argument("--infrastructure", choices=infrastructure.CHOICES, default=None,
                   help="drop (the default): callback and topic budgets leave out parameter services, /rosout, "
                        "/parameter_events, /clock and their callbacks; keep: they select them too (a budget's own "
                        "`infrastructure:` wins)")
    p.add_argument("--junit", type=C.output_path, metavar="FILE", help="also write JUnit XML: one test case per budget line")
    p.add_argument("--github", action="store_true",
                   help="also print GitHub Actions annotations (::error file=...,line=...::) for each failing budget "
                        "(on stdout; on stderr with --json)")
    p.add_argument("--force", action="store_true", help="replace the --junit or -o FILE if it exists")
    p.add_argument("--suggest", metavar="DATASET", help="print a budgets file with margins over what the runs of "
                   "DATASET showed, instead of checking")
    p.add_argument("--from", dest="from_re", action="append", default=[], metavar="RE",
                   help="with --suggest: also a path budget from the topics matching RE (with --to; repeatable)")
    p.add_argument("--to", dest="to_re", action="append", default=[], metavar="RE",
                   help="with --suggest: the path's output topics")
    p.add_argument("--margin", type=C.number("a margin (a share: 0.5 is 50 %)", 0, 10), default=None, metavar="M",
                   help="with --suggest: room over the largest value seen (default 0.5: 50 %%)")
    p.add_argument("-o", "--output", type=C.output_path, metavar="FILE", help="with --suggest: write the budgets file here, not stdout")
    p.add_argument("--memory", type=C.size, metavar="SIZE", default=None,
                   help="DuckDB's memory budget (e.g. 512M, 2G)")
    C.add_heuristics(p)
    C.add_json(p)
    p.set_defaults(func=run)


def _suggest(args) -> int:
    from roscope import files
    from roscope.check import suggest

    if args.inputs or args.run or args.baseline or args.junit or args.infrastructure:
        raise InputError("--suggest DATASET prints a budgets file: give no budgets file, input, --run, --baseline, "
                         "--junit or --infrastructure")
    if len(args.from_re) != len(args.to_re):
        raise InputError(f"give --from and --to in pairs ({len(args.from_re)} --from, {len(args.to_re)} --to)")
    if args.output:  # before any work
        files.check(args.output, force=args.force, inputs=[args.suggest], what="budgets file")
    text = suggest.suggest(args.suggest, args.runs, list(zip(args.from_re, args.to_re)),
                           suggest.MARGIN if args.margin is None else args.margin, args.memory)
    if args.output:
        files.write_file(args.output, text, force=args.force, inputs=[args.suggest])
        print(f"roscope: budgets written to {C.escape(args.output)}", file=sys.stderr)
    else:
        C.TextOut(sys.stdout).write(text)
    return 0


def _check(args) -> int:
    from roscope import dataset, files
    from roscope.check import baseline, budgets, measure, output

    if len(args.inputs) < 2:
        raise InputError("give the budgets file and a trace, database or dataset to check "
                         "(roscope check BUDGETS.yaml TRACE)")
    if args.from_re or args.to_re or args.margin is not None or args.output:
        raise InputError("--from, --to, --margin and -o go with --suggest")
    if args.runs and not args.baseline:
        raise InputError("--runs chooses the baseline runs: give --baseline DATASET (the run to check is --run ID)")
    t0 = time.monotonic()
    infra = args.infrastructure or infrastructure.DEFAULT
    spec = budgets.load(args.inputs[0])
    targets = args.inputs[1:]
    reads = [*args.inputs, *([args.baseline] if args.baseline else [])]
    junit = args.junit
    if junit:  # before any work
        files.check(junit, force=args.force, inputs=reads, what="JUnit XML file")
    db = C.open_inputs(C.Inputs.of(args, paths=targets, runs=None))  # --runs: the baseline's runs
    try:  # with --baseline, each line keeps the values behind its statistic
        lines = measure.evaluate(db, spec.budgets, measure.Context(db, samples=bool(args.baseline),
                                                                   infrastructure=infra))
    finally:
        db.close()
        C.report_from(db)
    status = measure.exit_status(lines)
    comparisons = info = None
    if args.baseline:
        same = (len(targets) == 1 and dataset.is_dataset(targets[0])
                and os.path.realpath(targets[0]) == os.path.realpath(args.baseline))
        ids = baseline.baseline_runs(args.baseline, args.runs, exclude=args.run if same else None)
        comparisons = baseline.compare(lines, baseline.measure_runs(args.baseline, ids, spec.budgets, args.memory,
                                                                    infra), args.alpha)
        info = {"dataset": args.baseline, "runs": ids, "alpha": args.alpha, "min_runs": baseline.MIN_RUNS,
                **baseline.family(comparisons, args.alpha)}
    if args.json:
        C.print_json(output.document(lines, status, budgets_file=spec.path, inputs=targets, run=args.run,
                                     comparisons=comparisons, baseline=info))
    else:
        out = C.TextOut(sys.stdout)
        output.text(lines, status, comparisons, write=lambda s: out.write(s + "\n"), baseline=info)
    if args.github:
        stream = sys.stderr if args.json else sys.stdout
        for a in output.github(lines, comparisons):
            print(a, file=stream)
    if junit:
        files.write_file(junit, output.junit(lines, budgets_file=spec.path, inputs=targets, seconds=time.monotonic() - t0,
                                             comparisons=comparisons, baseline=info), force=args.force, inputs=reads)
    return status


def run(args) -> int:
    try:
        return _suggest(args) if args.suggest else _check(args)
    except Exception as exc:  # a user error: the check could not run (exit 2, not 1: 1 means a budget failed)
        msg = user_message(exc)
        if msg is None:
            raise
        print(f"roscope: error: {C.escape(msg)}", file=sys.stderr)
        return EXIT_INCOMPLETE
