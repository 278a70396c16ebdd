"""The ROS 2 side of a recording (roscope.ros2_pip): for a ROS 2 installed from PyPI,
roscope's ROS 2 tracer instead of the ROS 1 one, the variables a detached recording's
processes need, and the loud warning about processes whose ROS 2 tracer could not reach
the session daemon."""
from __future__ import annotations

import sys
from pathlib import Path

from roscope.record.options import RecordOptions
from roscope.record.tracer import find_tracer, ros1_wanted
from roscope.ros2_pip import HOOK_VAR, Ros2Recording, TracerWatch

#: What a process started elsewhere needs in its environment to be traced with roscope's ROS 2 tracer.
EXPORTED = ("LD_PRELOAD", "PYTHONPATH", HOOK_VAR, "ROSCOPE_RECORD_ID")


def tracers(opts: RecordOptions, command: list[str] | None) -> tuple[Path | None, Ros2Recording]:
    """(the ROS 1 tracer library, the pip-installed ROS 2's side) a recording preloads: with
    roscope's ROS 2 tracer (the command's environment, or --ros2), the ROS 1 tracer only when
    asked for (--tracer); else the ROS 1 tracer when the command needs it (ros1_wanted:
    nothing of roscope's for a stock ROS 2); with --no-preload, neither. Which one and why
    is kept in `ros2.choice` (the manifest's "tracer")."""
    ros2 = Ros2Recording.setup(command, opts.ros2, opts.preload)
    if not opts.preload:
        ros1, why = False, "--no-preload"
    elif opts.tracer is not None:
        ros1, why = True, "--tracer"
    elif ros2.preload:
        ros1, why = False, f"{ros2.env.describe() if ros2.env else 'ROS 2'} from PyPI"
    else:
        ros1, why = ros1_wanted(command)
    tracer = find_tracer(opts.tracer) if ros1 else None
    used = [n for n, on in (("ros1", tracer is not None), ("ros2-pypi", bool(ros2.preload))) if on]
    ros2.choice = {"preloaded": used, "why": why, "ros1_library": str(tracer) if tracer else None}
    return tracer, ros2


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
