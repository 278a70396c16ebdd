"""`roscope executor`: executor states, utilization and input waits."""
from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "executor",
        help="executor states per thread (waiting, selecting, executing), utilization, input waits",
        description="Executor state shares per thread, where the trace has executor events, and per subscription "
        "callback how long its input waited from publication to callback start and how much of that the executor "
        "thread was busy running other callbacks.",
    )
    p.add_argument("input", metavar="TRACE|DB")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    import roscope
    from roscope import flow as fl

    db = roscope.open(args.input, read_only=False)
    d = fl.executor(db)
    if args.json:
        json.dump(d, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    if not d["threads"]:
        print("no executor states in this trace (ros2_tracing records executor events from Humble on; ROS 1 has none)")
    else:
        print(f"{'host':<14} {'pid':>8} {'tid':>8} {'procname':<18} {'traced s':>9} {'exec %':>7} {'wait %':>7} {'select %':>8} {'runs':>8}")
        for t in d["threads"]:
            tr = t["traced_ns"] or 1
            print(f"{str(t['hostname']):<14} {t['pid']:>8} {t['tid']:>8} {t['procname']:<18} {tr / 1e9:>9.3f} "
                  f"{100 * (t['executing_ns'] or 0) / tr:>7.2f} {100 * (t['waiting_ns'] or 0) / tr:>7.2f} "
                  f"{100 * (t['selecting_ns'] or 0) / tr:>8.2f} {t['executions']:>8}")
    if d["input_waits"]:
        print("\ninput wait, publication to callback start (µs): mean / p99 / max, of which executor busy (mean)")
        for w in d["input_waits"]:
            print(f"  {str(w['node']) + ' ' + str(w['topic']):<55} {w['mean'] / 1e3:>9.1f} {w['p99'] / 1e3:>9.1f} "
                  f"{w['max'] / 1e3:>9.1f}   busy {w['executor_busy_mean_ns'] / 1e3:>9.1f}  n={w['n']}")
    return 0
