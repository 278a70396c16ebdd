"""`roscope trend DATASET --metric ...`: one metric across a dataset's runs, in time order.

The values come from roscope.trend (library); this module only renders
them: text in milliseconds, JSON in nanoseconds (docs/dataset.md).
"""
from __future__ import annotations

import sys

from roscope.commands import _common as C


def register(sub) -> None:
    from roscope import trend

    p = sub.add_parser(
        "trend",
        help="a metric across the runs of a dataset, with the runs where it changed",
        description="A callback's duration, a topic's publication-to-callback latency, or a path's end-to-end latency, "
        "per run of a dataset (`roscope load --dataset`), ordered by recorded time. A run is flagged when its value "
        "differs from the median of the runs before it (--window of them) by more than --threshold. "
        "Text in milliseconds, JSON in nanoseconds (docs/dataset.md).",
    )
    p.add_argument("dataset", metavar="DATASET", help="a dataset directory written by `roscope load --dataset`")
    p.add_argument("--metric", required=True, metavar="METRIC",
                   help="callback:REGEX (callbacks whose label, `node topic-or-timer symbol`, matches; their runs pooled), "
                        "topic:REGEX (latency of the matching topics' deliveries), or path:FROM->TO (end-to-end "
                        "latency of the data flows from topics matching FROM to topics matching TO, as `roscope flow`)")
    p.add_argument("--stat", choices=trend.TREND_STATS, default="p50", help="the statistic to follow (default %(default)s)")
    p.add_argument("--runs", metavar="GLOB", action="append", help="only these runs (ids or shell patterns; repeatable)")
    p.add_argument("--threshold", type=C.number("a share (0.1 is 10 %)", 0, 1e6), default=trend.TREND_THRESHOLD, metavar="SHARE",
                   help="flag a run whose value differs from its baseline by more than this share (default %(default)s)")
    p.add_argument("--window", type=C.int_range(1, 1000), default=trend.TREND_WINDOW, metavar="N",
                   help="a run's baseline is the median of the N runs before it (default %(default)s)")
    C.add_json(p)
    C.add_wide(p)
    p.set_defaults(func=run)


def render_text(d: dict, out=None, wide: bool = False) -> None:
    w = C.TextOut(out or sys.stdout).write
    rw = C.width(d["runs"], lambda r: r["run_id"], 28, wide)
    unit = "" if d["stat"] == "count" else " (ms)"
    w(f"{C.escape(d['metric'])}: {d['stat']}{unit} per run, in recorded-time order; * = changed by more than "
      f"{100 * d['threshold']:g}% from the median of the {d['window']} runs before\n")
    w(f"  {'run':<{rw}} {'recorded':<20} {'commit':<16} {'count':>8} {d['stat']:>11} {'baseline':>11} {'change':>8}\n")
    for r in d["runs"]:
        fmt = (lambda v: "-" if v is None else f"{int(v):,}") if d["stat"] == "count" else C.ms
        change = "-" if r["change"] is None else f"{100 * r['change']:+.1f}%"
        w(f"{'*' if r['flagged'] else ' '} {C.cell(r['run_id'], rw):<{rw}} {C.cell((r['recorded_at'] or '')[:19], 20):<20} "
          f"{C.cell(r['commit'], 16):<16} {r['count']:>8,} {fmt(r['value']):>11} {fmt(r['baseline']):>11} {change:>8}"
          + (f"  ({C.escape(r['note']) if wide else C.escape(r['note'])[:100]})" if r["note"] else "") + "\n")


def run(args) -> int:
    from roscope import trend

    d = trend.trend(args.dataset, args.metric, args.stat, args.runs, threshold=args.threshold, window=args.window)
    C.show(args, d, lambda r: render_text(r, wide=args.wide))
    return 0
