"""`roscope env [--ros2 ENV] [--shell]`: the environment a ROS system needs to be traced by a
later `roscope record --attach` or `roscope watch` (its tracers preloaded), without starting
and stopping a recording to learn it (issue 39)."""
from __future__ import annotations

import sys

from roscope.commands import _common as C


def register(sub) -> None:
    p = sub.add_parser(
        "env",
        help="print the variables that start a ROS system ready to be traced later (--attach, watch)",
        description="Prints the variables (LD_PRELOAD, PYTHONPATH, and for a ROS 2 installed from PyPI the rclpy "
        "hook's switch) with which processes started now are traced by any later 'roscope record --attach', "
        "'roscope record start --attach' or 'roscope watch': roscope's ROS 1 tracer and rospy hook by default, "
        "roscope's ROS 2 tracer and rclpy hook with --ros2 ENV (built into the user's cache if need be). "
        "With --shell, as quoted export lines: eval \"$(roscope env --ros2 jazzy --shell)\". A stock ROS 2 "
        "(ros2_tracing in rclcpp, from apt) needs none of this: its tracepoints reach LTTng as they are.",
    )
    p.add_argument("--ros2", metavar="ENV",
                   help="a ROS 2 installed from PyPI: a Python environment's path, or a distro `make setup` installed "
                        "(jazzy, kilted)")
    p.add_argument("--tracer", metavar="LIB", help="path of libroscope_ros1.so (default: found automatically)")
    p.add_argument("--shell", action="store_true", help="print export lines for a POSIX shell's eval")
    C.add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from roscope.record.tracer import attach_environment, find_tracer, shell_exports
    from roscope.ros2_pip import Ros2Recording
    from roscope.text import escape
    if args.ros2 is not None and not args.ros2:
        from roscope.errors import InputError
        raise InputError("--ros2: give a Python environment's path or a distro name (jazzy, kilted)")
    ros2 = Ros2Recording.setup(None, args.ros2, True) if args.ros2 else None
    tracer = find_tracer(args.tracer) if not args.ros2 or args.tracer else None
    env = attach_environment(tracer, ros2)
    if args.json:
        C.print_json(env)
    elif args.shell:
        sys.stdout.write("".join(line + "\n" for line in shell_exports(env)))
    else:
        for k, v in env.items():
            print(f"{k}={escape(v)}")
    return 0
