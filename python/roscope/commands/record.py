"""`roscope record`: record a ROS system with LTTng (+ the ROS 1 preload tracer).

    roscope record [-o DIR] [--name N] [--kernel] [--events E,...] -- COMMAND...
    roscope record start [-o DIR] [--name N] [--kernel] [--events E,...]
    roscope record stop [--name N]
    roscope record recover [--dry-run] [--kill-children] [DIR...]

Options may come before or after 'start' / 'stop'. 'start', 'stop' and
'recover' are never looked up as programs ('roscope record -- stop' runs a
program named stop).
"""
from __future__ import annotations

import argparse
import sys

from roscope.commands import _common as C
from roscope.record import (
    DEFAULT_EVENTS,
    DEFAULT_NUM_SUBBUF,
    DEFAULT_SUBBUF_SIZE,
    RecordError,
    RecordOptions,
    active_sessions,
    record_command,
    recover,
    snapshot,
    start_session,
    stop_session,
)
from roscope.record.options import parse_pids
from roscope.record.tracer import shell_exports

SUBCOMMANDS = ("start", "stop", "recover", "snapshot")


def _add_recording_options(p: argparse.ArgumentParser) -> None:
    """The options of a recording (the command form and 'start')."""
    p.add_argument("-o", "--output", type=C.output_path, metavar="DIR",
                   help="trace directory to create (default: ./roscope-trace-<session name>)")
    p.add_argument("--name", metavar="N", help="LTTng session name (default: roscope-<time>-<pid>)")
    p.add_argument("--kernel", action="store_true",
                   help="also record sched_switch/sched_wakeup with 'perf record -k mono' into DIR/perf/")
    p.add_argument("--events", action="append", metavar="E[,E...]",
                   help=f"LTTng-UST events to enable instead of the default (repeatable; default: "
                        f"{','.join(DEFAULT_EVENTS)})")
    p.add_argument("--subbuf-size", default=DEFAULT_SUBBUF_SIZE, metavar="SIZE",
                   help=f"sub-buffer size per CPU (default {DEFAULT_SUBBUF_SIZE})")
    p.add_argument("--num-subbuf", type=int, default=DEFAULT_NUM_SUBBUF, metavar="N",
                   help=f"sub-buffers per CPU (default {DEFAULT_NUM_SUBBUF})")
    p.add_argument("--ros2", metavar="ENV",
                   help="trace the ROS 2 installed from PyPI in this Python environment (a path, or a distro that "
                        "`make setup` installed: jazzy, kilted) with roscope's ROS 2 tracer and rclpy hook "
                        "(default: the environment COMMAND runs with, if any; docs/ros2-pypi.md)")
    p.add_argument("--no-preload", action="store_true",
                   help="preload no tracer: neither the ROS 1 tracer nor roscope's ROS 2 tracer for a pip-installed "
                        "ROS 2 (whose own tracer then records nothing: roscope says so)")
    p.add_argument("--tracer", metavar="LIB", help="path of libroscope_ros1.so (default: found automatically)")
    p.add_argument("--attach", action="store_true",
                   help="include the processes already running: roscope's tracers in them re-emit their objects "
                        "when the session starts (a state dump), so they are named as if traced from their start "
                        "(docs/ros1-tracer.md, Attaching)")
    p.add_argument("--flight-recorder", action="store_true",
                   help="keep only the last --keep seconds in memory (LTTng snapshot mode) and write them when asked: "
                        "'roscope record snapshot [--name N] [LABEL]', or SIGUSR1 to 'roscope record' "
                        "(docs/flight-recorder.md)")
    p.add_argument("--keep", type=C.number("s", 0.1, 3600), default=10.0, metavar="SECONDS",
                   help="flight recorder: seconds the rings keep (default 10; 0.1 to 3600)")
    p.add_argument("--rate", type=C.number("events per second", 1, 10_000_000), default=20000.0, metavar="EVENTS_PER_S",
                   help="flight recorder: the event rate the rings are sized for (default 20000; the examples "
                        "emit 2000-4000)")
    p.add_argument("--pid", action="append", metavar="PID[,PID...]",
                   help="record only these processes and their descendants running when the session starts "
                        "(LTTng's vpid tracking; repeatable)")


def register(sub) -> None:
    p = sub.add_parser(
        "record",
        help="record a command (or a system started elsewhere) with LTTng and the ROS 1 tracer",
        description=(
            "Run COMMAND under a new LTTng session that enables what 'ros2 trace' enables (ros2:*, "
            "ros2_caret:*, dds:*; contexts vpid, vtid, procname), roscope_ros1:* and roscope_ros2:*, with the "
            "roscope ROS 1 tracer preloaded (for a ROS 2 installed from PyPI, the one COMMAND runs with or "
            "--ros2 ENV: roscope's ROS 2 tracer and rclpy hook instead, and a warning for any process whose "
            "ROS 2 tracer cannot reach the session daemon); stop cleanly when it exits or on Ctrl-C, and write a trace "
            "directory with roscope-manifest.json. 'start' and 'stop' instead record until told to "
            "stop (for systems started elsewhere: export the printed variables). 'recover' finishes "
            "recordings whose roscope record was killed (kill -9, a crash): it destroys their LTTng "
            "session, stops the perf they started (and with --kill-children their command's "
            "processes) and completes their manifest; --dry-run only lists them. Options may come "
            "before or after 'start'/'stop'; everything after '--' (or after the first word that is "
            "not an option, 'start', 'stop' or 'recover') is the command. An existing non-empty "
            "output directory is never written into. A failed setup cleans up what it made and marks "
            "its manifest \"failed\"."),
        usage="roscope record [options] -- COMMAND...\n"
              "       roscope record start [options]\n"
              "       roscope record stop [--name N]\n"
              "       roscope record recover [--dry-run] [--kill-children] [DIR...]",
    )
    _add_recording_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="the command to run, after '--'; or 'start' / 'stop'")
    p.set_defaults(func=run)


SUBCOMMAND_HELP = {
    "start": "Start a recording that runs until 'roscope record stop' (for systems started elsewhere: "
             "export the printed variables in their shells).",
    "stop": "Stop a recording made with 'roscope record start' and complete its manifest.",
    "snapshot": "Write a snapshot of a running flight recorder (--flight-recorder): DIR/snapshots/LABEL/ with "
                "the last seconds it kept and a manifest (docs/flight-recorder.md).",
    "recover": "Finish recordings whose roscope record was killed (kill -9, a crash): destroy their LTTng "
               "session, stop the perf they started (and with --kill-children the processes of their command "
               "that can be proven to be its own: by cgroup, or exact PID, start time and boot id) and complete "
               "their manifest as \"recovered\". Recordings still running are left alone. Exit status 1 if "
               "something could not be done (each such thing is printed as a problem).",
}


def _subcommand_parser(verb: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"roscope record {verb}", description=SUBCOMMAND_HELP[verb])
    if verb == "start":
        _add_recording_options(p)
    elif verb == "stop":
        p.add_argument("--name", metavar="N", help="the recording to stop")
    elif verb == "snapshot":
        p.add_argument("--name", metavar="N", help="the flight recording (default: the only one running)")
        p.add_argument("label", nargs="?", metavar="LABEL", help="the snapshot's name (default: the time)")
    else:
        p.add_argument("--dry-run", action="store_true", help="only list what would be done")
        p.add_argument("--kill-children", action="store_true",
                       help="also stop the processes of the recorded command (by default they are left running)")
        p.add_argument("dirs", nargs="*", metavar="DIR",
                       help="also look at the manifests of these recordings (default: the state directory's)")
    return p


def _recording_defaults() -> dict:
    p = argparse.ArgumentParser(add_help=False)
    _add_recording_options(p)
    return vars(p.parse_args([]))


def split_words(args) -> tuple[str, list[str]]:
    """('run', COMMAND) or ('start' | 'stop', []), with the options given after
    the subcommand parsed into ``args`` (they override those given before it).
    A subcommand name is never a program to run: '--' runs a program so named."""
    words = list(args.command)
    if words[:1] == ["--"]:
        return "run", words[1:]
    if not words or words[0] not in SUBCOMMANDS:
        return "run", words
    verb = words[0]
    sub = _subcommand_parser(verb)
    sub.set_defaults(**{k: getattr(args, k, v) for k, v in vars(sub.parse_args([])).items()})
    for k, v in vars(sub.parse_args(words[1:])).items():
        setattr(args, k, v)
    if verb in ("stop", "recover", "snapshot"):
        allowed = {"name"} if verb in ("stop", "snapshot") else set()
        extra = [k for k, v in _recording_defaults().items() if k not in allowed and getattr(args, k) != v]
        if extra:
            takes = "--name" if verb in ("stop", "snapshot") else "--dry-run, --kill-children and DIRs"
            sub.error(f"takes only {takes} (also given: {', '.join('--' + k.replace('_', '-') for k in extra)})")
    return verb, []


def _options(args) -> RecordOptions:
    events = []
    for item in args.events or []:
        events += [e.strip() for e in item.split(",") if e.strip()]
    if args.num_subbuf < 2:
        raise RecordError("--num-subbuf must be at least 2")
    if not (0 < args.keep <= 3600) or not (0 < args.rate <= 1e8):
        raise RecordError("--keep must be in (0, 3600] seconds and --rate in (0, 1e8] events/s")
    if args.flight_recorder and (args.pid or args.kernel):
        raise RecordError("--flight-recorder takes neither --pid nor --kernel (yet)")
    pids = parse_pids(args.pid)
    return RecordOptions(output=args.output, name=args.name, kernel=args.kernel,
                         events=events or list(DEFAULT_EVENTS), subbuf_size=args.subbuf_size,
                         num_subbuf=args.num_subbuf, preload=not args.no_preload, tracer=args.tracer,
                         ros2=args.ros2, attach=args.attach, pids=pids, flight=args.flight_recorder,
                         keep=args.keep, rate=args.rate)


def _start(args) -> int:
    state = start_session(_options(args))
    print(f"roscope: recording session {state['name']} into {state['output']}")
    if state.get("tracer"):
        print("roscope: start the ROS 1 processes to trace with (PYTHONPATH: rospy nodes):")
        ros1 = {"LD_PRELOAD": state["tracer"], "ROSCOPE_RECORD_ID": state["name"]}
        if state.get("rospy_hook"):
            ros1["PYTHONPATH"] = state["rospy_hook"]
        print("".join(f"  {line}\n" for line in shell_exports(ros1)), end="")
    if state.get("ros2_environment"):
        print("roscope: start the ROS 2 (pip-installed) processes to trace with:")
        print("".join(f"  {line}\n" for line in shell_exports(state["ros2_environment"])), end="")
    print(f"roscope: stop with: roscope record stop --name {state['name']}")
    return 0


def _recover(args) -> int:
    results = recover(args.dirs, dry_run=args.dry_run, kill_children=args.kill_children)
    failed = False
    for r in results:
        head = {"recover": "would recover" if args.dry_run else "recovered", "forget": "cleaned up",
                "leave": "left alone", "done": "nothing to do for"}[r["verdict"]]
        parts = [r["why"]] if r["verdict"] != "recover" or args.dry_run else []
        parts += r["actions"]
        if r["left_running"]:
            parts.append(("would leave" if args.dry_run else "left") + " running: "
                         + ", ".join(f"PID {p['pid']} ({p['name']})" for p in r["left_running"])
                         + " (--kill-children stops them)")
        if r["verdict"] == "recover" and not args.dry_run:
            parts.append(f"manifest completed (state \"recovered\", {r.get('events_recorded')} events, "
                         f"{r.get('events_discarded')} discarded)")
        for p in r["problems"]:
            parts.append(f"problem: {p}")
            failed = True
        print(C.escape(f"roscope: {head} {r['name']} ({r['output']}): " + "; ".join(parts)))
    if not results:
        print("roscope: no recording to recover")
    return 1 if failed else 0


def _flight_name(name: str | None) -> str:
    """The flight recording to snapshot: `name`, or the only one running."""
    if name:
        return name
    names = [s["name"] for s in active_sessions() if s.get("flight")]
    if len(names) != 1:
        raise RecordError(f"give --name: running flight recordings: {', '.join(names) or 'none'}")
    return names[0]


def run(args) -> int:
    """Errors of the recording are RecordError (a UserError): the CLI prints them, exit 1."""
    verb, command = split_words(args)
    if verb == "start":
        return _start(args)
    if verb == "recover":
        return _recover(args)
    if verb == "snapshot":
        dest = snapshot(_flight_name(args.name), args.label, trigger="roscope record snapshot")
        print(f"roscope: snapshot written to {dest}")
        return 0
    if verb == "stop":
        m = stop_session(args.name)
        print(f"roscope: trace written to {m['trace_dir']} "
              f"({m.get('events_recorded')} events, {m.get('events_discarded')} discarded)")
        return 0
    if not command:
        print("roscope record: error: give a command after '--', or 'start' / 'stop' / 'recover'", file=sys.stderr)
        return 2
    return record_command(command, _options(args))
