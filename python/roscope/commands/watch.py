"""`roscope watch [-- COMMAND...]`: a live view of a running system, one window per
second (roscope.watch; docs/watch.md). JSON lines with `--json`, else a terminal view
drawn with rich."""
from __future__ import annotations

import argparse
import json
import sys

from roscope.commands import _common as C

#: The ranges of --window and --duration (seconds).
WINDOW_S = (0.001, 86_400)
DURATION_S = (0.001, 30 * 86_400)


def register(sub) -> None:
    p = sub.add_parser(
        "watch",
        help="live per-callback and per-topic statistics of a running system",
        description="Records the running system (or COMMAND) with LTTng, reading the session as it records "
        "(--source), and shows every second the statistics of the last --window seconds: per "
        "callback rate, p50, p99, max duration; per topic rate and delivery latency; lost events. The "
        "definitions are roscope stats' (roscope stats TRACE --window START:END gives the same numbers). "
        "Ctrl-C stops it (exit 130) and leaves the trace in -o DIR (docs/watch.md).",
    )
    p.add_argument("-o", "--output", type=C.output_path,
                   help="the trace directory (default: a new one as roscope record makes)")
    p.add_argument("--window", type=C.number("s", *WINDOW_S), default=5.0, metavar="SECONDS",
                   help=f"the sliding window (default 5 s; {WINDOW_S[0]:g} to {WINDOW_S[1]:g})")
    p.add_argument("--source", choices=("rotation", "live"),
                   help="how the session is read: 'rotation' (trace chunks) or 'live' (LTTng's live protocol through "
                        "a private lttng-relayd, read by roscope's own client); default and why: docs/watch.md")
    p.add_argument("--rotate-ms", type=C.int_range(100, 60_000), default=250,
                   help="--source rotation: LTTng rotation period, ms (default 250)")
    p.add_argument("--live-ms", type=C.int_range(10, 60_000),
                   help="--source live: the session's live timer, ms (default: docs/watch.md)")
    p.add_argument("--duration", type=C.number("s", *DURATION_S), metavar="SECONDS",
                   help=f"stop after this long ({DURATION_S[0]:g} to {DURATION_S[1]:g} s: 30 days)")
    p.add_argument("--event", action="append", default=[], metavar="PATTERN",
                   help="also record these LTTng user-space events (repeatable; roscope's and ROS's are always on)")
    p.add_argument("--from", dest="from_re", type=C.regex, metavar="REGEX", help="watch the data flows from these topics ...")
    p.add_argument("--to", dest="to_re", type=C.regex, metavar="REGEX", help="... to these (end-to-end latency p50/p99/max per window)")
    p.add_argument("--deadline", action="append", type=_deadline, default=[], metavar="FROM->TO=MS",
                   help="alert the moment a flow from FROM to TO (topic regexes) takes longer than MS (repeatable); "
                        "watch then exits 3 at its end (docs/watch.md)")
    p.add_argument("--on-miss", metavar="COMMAND",
                   help="on each miss, run COMMAND (split like a shell would, run without one; the miss's facts in "
                        "ROSCOPE_MISS_* environment variables)")
    p.add_argument("--ros2", metavar="ENV",
                   help="the ROS 2 installed from PyPI that COMMAND runs (a Python environment's path, or jazzy / kilted "
                        "as `make setup` installed them): preload roscope's ROS 2 tracer and rclpy hook into it, as "
                        "'roscope record --ros2' does (default: the environment COMMAND's program belongs to, if any)")
    p.add_argument("--attach", action=argparse.BooleanOptionalAction, default=None,
                   help="ask the processes already running for their objects (a state dump) so that they are named "
                        "(default: on without a COMMAND, off with one; start them with 'roscope env')")
    p.add_argument("--pid", action="append", metavar="PID[,PID...]",
                   help="watch only these processes and their descendants (repeatable)")
    C.add_json(p)
    C.add_heuristics(p)
    p.add_argument("command", nargs="*", help="a command to run and watch (after --); none: attach to what runs")
    p.set_defaults(func=run)


def _deadline(text: str) -> tuple[str, str, int]:
    """argparse ``type=`` of --deadline: `alerts.parse_deadline` (its regexes and its number
    checked as every other option's)."""
    from roscope.alerts import parse_deadline
    from roscope.errors import InputError
    try:
        return parse_deadline(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--deadline ")) from None


def _json(d: dict) -> None:
    """One window as one JSON line."""
    sys.stdout.write(json.dumps(C.clean(d), separators=(",", ":")) + "\n")
    sys.stdout.flush()


class _View:
    """The terminal view: rich's Live display, redrawn each window. Every text from the
    trace (names, routes) goes in as `rich.text.Text`, never as markup: `/ns[/bold]x` is a
    name, not a style or an error."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.live import Live
        self.live = Live(console=console or Console(), auto_refresh=False)
        self.live.start()

    def __call__(self, d: dict) -> None:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text
        w = d["window"]
        span = max(w["end_s"] - w["start_s"], 1e-9)
        cb = Table(title=f"callbacks, window {w['start_s']:.1f}-{w['end_s']:.1f} s (durations ms)")
        for col in ("node", "kind", "topic / period", "rate Hz", "p50", "p99", "max"):
            cb.add_column(col, justify="right" if col[0] in "rpm" else "left")
        for c in d["callbacks"]:
            what = c["topic"] or (f"{c['timer_period_ns'] / 1e6:g} ms" if c.get("timer_period_ns") else "")
            cb.add_row(Text(C.cell(c["node"] or c["procname"], 32)), Text(C.cell(c["kind"], 12)), Text(C.cell(what, 30)), f"{c['count'] / span:.1f}",
                       C.ms(c["p50_ns"]), C.ms(c["p99_ns"]), C.ms(c["max_ns"]))
        tp = Table(title="topics (latency: publication to callback start, ms)")
        for col in ("topic", "rate Hz", "deliveries", "p50", "p99", "max"):
            tp.add_column(col, justify="left" if col == "topic" else "right")
        for t in d["topics"]:
            tp.add_row(Text(C.cell(t["topic"], 40)), f"{t['rate_hz']:.1f}", str(t["deliveries"]), C.ms(t["lat_p50_ns"]),
                       C.ms(t["lat_p99_ns"]), C.ms(t["lat_max_ns"]))
        parts = [cb, tp]
        if d["paths"]:
            pt = Table(title="paths (end-to-end latency, ms; misses: flows over the deadline)")
            for col in ("path", "route", "flows", "p50", "p99", "max", "misses"):
                pt.add_column(col, justify="left" if col in ("path", "route") else "right")
            for p in d["paths"]:
                for r in p["routes"]:
                    pt.add_row(Text(C.cell(p["path"], 30)), Text(C.cell(r["route"], 70)), str(r["flows"]), C.ms(r["p50_ns"]),
                               C.ms(r["p99_ns"]), C.ms(r["max_ns"]), "-" if r["misses"] is None else str(r["misses"]))
            parts.append(pt)
        parts.append(Text(f"lost events: {d['lost_events']} in the window, {d['lost_events_total']} in all"))
        self.live.update(Group(*parts), refresh=True)

    def stop(self) -> None:
        self.live.stop()


def run(args) -> int:
    from roscope.errors import InputError
    from roscope.record.options import parse_pids
    from roscope.watch import Watch, WatchOptions
    if (args.from_re is None) != (args.to_re is None):
        raise InputError("give both --from and --to, or neither")
    paths = list(args.deadline)
    if args.from_re is not None:
        paths.insert(0, (args.from_re, args.to_re, None))
    attach = not args.command if args.attach is None else args.attach
    opts = WatchOptions(paths=paths, on_miss=args.on_miss, output=args.output, window_s=args.window, rotate_ms=args.rotate_ms, duration_s=args.duration,
                        **({"source": args.source} if args.source else {}),
                        **({"live_ms": args.live_ms} if args.live_ms else {}),
                        heuristics=not args.no_heuristics, events=list(args.event), ros2=args.ros2, attach=attach,
                        pids=parse_pids(args.pid))
    view = None if args.json else _View()
    try:
        return Watch(args.command or None, opts, _json if args.json else view, _json if args.json else None).run()
    finally:
        if view is not None:
            view.stop()
