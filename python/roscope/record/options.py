"""What a recording is asked for (``RecordOptions``), its defaults, and its error."""
from __future__ import annotations

from dataclasses import dataclass, field

from roscope.errors import UserError

# What `ros2 trace` enables by default (ros2_tracing's events, CARET's, the DDS
# layer's), plus roscope's ROS 1 tracer and its ROS 2 (rclpy) events. Enabling a
# pattern no process has registered is harmless in LTTng: it matches nothing.
DEFAULT_EVENTS = ["ros2:*", "ros2_caret:*", "dds:*", "roscope_ros1:*", "roscope_ros2:*"]
# The contexts `ros2 trace` adds by default.
DEFAULT_CONTEXTS = ["vpid", "vtid", "procname"]
DEFAULT_CHANNEL = "roscope"
# Per CPU, per user: 8 x 1 MiB, with which the example pipeline and the overhead
# benchmark at 1 kHz lose nothing (their event rates: bench/README.md).
DEFAULT_SUBBUF_SIZE = "1M"
DEFAULT_NUM_SUBBUF = 8
STOP_GRACE_S = 10.0


class RecordError(UserError):
    """A recording could not be made; the message says why (a user error: no traceback)."""


def parse_pids(items: list[str] | None) -> list[int]:
    """`--pid PID[,PID...]` (repeatable), for every verb that records."""
    pids = []
    for item in items or []:
        for w in item.split(","):
            w = w.strip()
            if not (w.isascii() and w.isdigit()) or not 0 < int(w) <= 4_194_304:   # the kernel's pid_max limit
                raise RecordError(f"--pid: not a process id: {w.encode('unicode_escape').decode()!r}")
            pids.append(int(w))
    return pids


@dataclass
class RecordOptions:
    output: str | None = None
    name: str | None = None
    kernel: bool = False
    events: list[str] = field(default_factory=lambda: list(DEFAULT_EVENTS))
    subbuf_size: str = DEFAULT_SUBBUF_SIZE
    num_subbuf: int = DEFAULT_NUM_SUBBUF
    preload: bool = True
    tracer: str | None = None
    #: A pip-installed ROS 2 to trace with roscope's ROS 2 tracer (a path or a distro name);
    #: None: the one the command runs with, if any (roscope.ros2_pip).
    ros2: str | None = None
    #: Rotate the session into a trace chunk every this many microseconds (`roscope watch`
    #: reads each chunk as it is archived); None: no rotation.
    rotate_us: int | None = None
    #: The channel's monitor timer (us; LTTng's default when None): how often the consumer
    #: samples its buffers, which paces a rotation's completion.
    monitor_timer_us: int | None = None
    #: A live session (`roscope watch --source live`): its live timer (us), the session
    #: streaming through a private relay daemon (roscope.record.relay) writing the recording;
    #: None: a session writing its own output.
    live_timer_us: int | None = None
    #: Include the processes already running (their tracers' state dumps name their objects).
    attach: bool = False
    #: Record only these processes and their descendants (LTTng's vpid tracking), if any.
    pids: list[int] = field(default_factory=list)
    #: Flight recorder (roscope.record.flight): snapshot-mode sessions keeping `keep` seconds
    #: at about `rate` events/s.
    flight: bool = False
    keep: float = 10.0
    rate: float = 20000.0
