"""The tracer libraries a recorded command gets preloaded: roscope's ROS 1 tracer
(``libroscope_ros1.so``, LD_PRELOAD) and its rospy import hook (PYTHONPATH); for a ROS 2
installed from PyPI, roscope's ROS 2 tracer and rclpy hook (roscope.ros2_pip)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from roscope.record.options import RecordError
from roscope.ros2_pip import Ros2Recording

TRACER_ENV = "ROSCOPE_ROS1_TRACER"
TRACER_NAME = "libroscope_ros1.so"


def find_tracer(explicit: str | None = None) -> Path:
    """Locate libroscope_ros1.so: explicit path, $ROSCOPE_ROS1_TRACER, or the repository build."""
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    elif os.environ.get(TRACER_ENV):
        candidates.append(Path(os.environ[TRACER_ENV]))
    else:
        here = Path(__file__).resolve()
        candidates.append(here.parents[3] / "instrument" / "ros1" / "build" / TRACER_NAME)
        candidates.append(Path(sys.prefix) / "lib" / "roscope" / TRACER_NAME)
        candidates.append(Path("/usr/local/lib/roscope") / TRACER_NAME)
    for c in candidates:
        if c.is_file():
            return c.resolve()
    where = ", ".join(str(c) for c in candidates)
    raise RecordError(
        f"the ROS 1 tracer library {TRACER_NAME} was not found (looked at: {where}); "
        f"build it with 'make -C instrument/ros1', set ${TRACER_ENV}, or pass --no-preload")


def rospy_hook_dir(tracer: Path) -> Path | None:
    """Directory holding the rospy import hook (sitecustomize.py), next to the tracer's build dir."""
    for d in (tracer.parent.parent / "rospy", tracer.parent / "rospy"):
        if (d / "sitecustomize.py").is_file() and (d / "roscope_rospy.py").is_file():
            return d
    return None


def environment(base: dict, name: str, tracer: Path | None, ros2: Ros2Recording | None = None) -> dict:
    """The recorded command's environment: `base` with the recording's id and the
    tracers preloaded (ahead of any LD_PRELOAD / PYTHONPATH already there): the ROS 1
    `tracer`, and `ros2`'s tracer and rclpy hook ahead of it."""
    env = dict(base)
    env["ROSCOPE_RECORD_ID"] = name
    if tracer:
        env["LD_PRELOAD"] = f"{tracer}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(tracer)
        hook = rospy_hook_dir(tracer)
        if hook:
            env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(hook)
    return ros2.environment(env) if ros2 is not None else env


#: Variables whose earlier value a process keeps behind roscope's (a list joined by ':').
PATH_LISTS = ("LD_PRELOAD", "PYTHONPATH")


def shell_exports(env: dict[str, str]) -> list[str]:
    """`export K=V` lines for a POSIX shell (`eval "$(roscope env --shell)"`), each value quoted
    (a path with a space or a '$' stays one word, and runs nothing); a list variable keeps the
    value the shell already has after roscope's."""
    import shlex
    lines = []
    for k, v in env.items():
        keep = f'"${{{k}:+:${k}}}"' if k in PATH_LISTS else ""
        lines.append(f"export {k}={shlex.quote(v)}{keep}")
    return lines


def attach_environment(tracer: Path | None, ros2: Ros2Recording | None) -> dict[str, str]:
    """What a process needs in its environment to be traced by a later `roscope record --attach`
    or `roscope watch`: the tracers preloaded, and no recording id (an attaching recording keeps
    the processes that have none)."""
    env = environment({}, "", tracer, ros2)
    env.pop("ROSCOPE_RECORD_ID", None)
    return {k: env[k] for k in sorted(env)}
