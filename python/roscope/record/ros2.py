"""The ROS 2 side of a recording (roscope.ros2_pip): for a ROS 2 installed from PyPI,
roscope's ROS 2 tracer instead of the ROS 1 one, the variables a detached recording's
processes need, and the loud warning about processes whose ROS 2 tracer could not reach
the session daemon."""
from __future__ import annotations

import sys
from pathlib import Path

from roscope.record.options import RecordOptions
from roscope.record.tracer import find_tracer
from roscope.ros2_pip import HOOK_VAR, Ros2Recording, TracerWatch

#: What a process started elsewhere needs in its environment to be traced with roscope's ROS 2 tracer.
EXPORTED = ("LD_PRELOAD", "PYTHONPATH", HOOK_VAR, "ROSCOPE_RECORD_ID")


def tracers(opts: RecordOptions, command: list[str] | None) -> tuple[Path | None, Ros2Recording]:
    """(the ROS 1 tracer library, the pip-installed ROS 2's side) a recording preloads: with
    roscope's ROS 2 tracer (the command's environment, or --ros2), the ROS 1 tracer only when
    asked for (--tracer); with --no-preload, neither."""
    ros2 = Ros2Recording.setup(command, opts.ros2, opts.preload)
    ros1 = opts.preload and (not ros2.preload or opts.tracer is not None)
    return (find_tracer(opts.tracer) if ros1 else None), ros2


def exports(ros2: Ros2Recording, name: str) -> dict | None:
    """The variables `roscope record start` prints for the ROS 2 processes to trace (None
    without roscope's ROS 2 tracer)."""
    if not ros2.preload:
        return None
    env = ros2.environment({"ROSCOPE_RECORD_ID": name})
    return {k: env[k] for k in EXPORTED if k in env}


def warn(warnings: list[str]) -> None:
    """Says loudly which processes loaded a ROS 2 tracer that could not reach the daemon."""
    if warnings:
        bar = "!" * 72
        print(bar, file=sys.stderr)
        for w in warnings:
            print(f"roscope: WARNING: {w}", file=sys.stderr)
        print(bar, file=sys.stderr)


def check_at_stop(manifest: dict) -> dict | None:
    """At `roscope record stop`: the processes were started elsewhere and are not known, so
    every process of the machine is looked at. The manifest's new "ros2" entry when some
    loaded a ROS 2 tracer that did not reach the daemon (warned about), else None."""
    watch = TracerWatch()
    watch.poll(force=True)
    if not watch.unreachable:
        return None
    warn(watch.warnings())
    return {**(manifest.get("ros2") or {}), "tracer_unreachable": watch.unreachable}
