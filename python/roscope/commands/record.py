"""`roscope record`: record a ROS system with LTTng (+ the ROS 1 preload tracer).

    roscope record [-o DIR] [--name N] [--kernel] [--events E,...] -- COMMAND...
    roscope record start [-o DIR] [--name N] [--kernel] [--events E,...]
    roscope record stop [--name N]
"""
from __future__ import annotations

import argparse
import sys

from roscope.record import (
    DEFAULT_EVENTS,
    DEFAULT_NUM_SUBBUF,
    DEFAULT_SUBBUF_SIZE,
    RecordError,
    RecordOptions,
    record_command,
    start_session,
    stop_session,
)


def register(sub) -> None:
    p = sub.add_parser(
        "record",
        help="record a command (or a system started elsewhere) with LTTng and the ROS 1 tracer",
        description=(
            "Run COMMAND with the roscope ROS 1 tracer preloaded under a new LTTng session "
            "(contexts vpid, vtid, procname), stop cleanly when it exits or on Ctrl-C, and write "
            "a trace directory with roscope-manifest.json. 'start' and 'stop' instead record "
            "until told to stop (for systems started elsewhere: export the printed LD_PRELOAD). "
            "An existing non-empty output directory is never written into."),
        usage="roscope record [options] -- COMMAND...\n"
              "       roscope record [options] start\n"
              "       roscope record [--name N] stop",
    )
    p.add_argument("-o", "--output", metavar="DIR",
                   help="trace directory to create (default: ./roscope-trace-<session name>)")
    p.add_argument("--name", metavar="N", help="LTTng session name (default: roscope-<time>-<pid>)")
    p.add_argument("--kernel", action="store_true",
                   help="also record sched_switch/sched_wakeup with 'perf record -k mono' into DIR/perf/")
    p.add_argument("--events", action="append", metavar="E[,E...]",
                   help=f"LTTng-UST events to enable (repeatable; default: {','.join(DEFAULT_EVENTS)})")
    p.add_argument("--subbuf-size", default=DEFAULT_SUBBUF_SIZE, metavar="SIZE",
                   help=f"sub-buffer size per CPU (default {DEFAULT_SUBBUF_SIZE})")
    p.add_argument("--num-subbuf", type=int, default=DEFAULT_NUM_SUBBUF, metavar="N",
                   help=f"sub-buffers per CPU (default {DEFAULT_NUM_SUBBUF})")
    p.add_argument("--no-preload", action="store_true",
                   help="do not preload the ROS 1 tracer (e.g. for ROS 2 programs with ros2_tracing)")
    p.add_argument("--tracer", metavar="LIB", help="path of libroscope_ros1.so (default: found automatically)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="the command to run, after '--'; or 'start' / 'stop'")
    p.set_defaults(func=run)


def _options(args) -> RecordOptions:
    events = []
    for item in args.events or []:
        events += [e.strip() for e in item.split(",") if e.strip()]
    if args.num_subbuf < 2:
        raise RecordError("--num-subbuf must be at least 2")
    return RecordOptions(output=args.output, name=args.name, kernel=args.kernel,
                         events=events or list(DEFAULT_EVENTS), subbuf_size=args.subbuf_size,
                         num_subbuf=args.num_subbuf, preload=not args.no_preload, tracer=args.tracer)


def run(args) -> int:
    command = list(args.command)
    explicit = bool(command) and command[0] == "--"
    if explicit:
        command = command[1:]
    try:
        if not explicit and command == ["start"]:
            state = start_session(_options(args))
            print(f"roscope: recording session {state['name']} into {state['output']}")
            if state.get("tracer"):
                print("roscope: start the ROS 1 processes to trace with:")
                print(f"  export LD_PRELOAD={state['tracer']}")
                print(f"  export ROSCOPE_RECORD_ID={state['name']}")
                if state.get("rospy_hook"):
                    print(f"  export PYTHONPATH={state['rospy_hook']}${{PYTHONPATH:+:$PYTHONPATH}}  # rospy nodes")
            print(f"roscope: stop with: roscope record stop --name {state['name']}")
            return 0
        if not explicit and command == ["stop"]:
            m = stop_session(args.name)
            print(f"roscope: trace written to {m['trace_dir']} "
                  f"({m.get('events_recorded')} events, {m.get('events_discarded')} discarded)")
            return 0
        if not command:
            print("roscope record: error: give a command after '--', or 'start' / 'stop'", file=sys.stderr)
            return 2
        return record_command(command, _options(args))
    except RecordError as e:
        print(f"roscope record: error: {e}", file=sys.stderr)
        return 1
