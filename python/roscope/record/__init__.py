"""Record a ROS system with LTTng (and optionally perf sched events).

``record_command`` runs one command under a fresh LTTng session that enables
what ``ros2 trace`` enables (``ros2:*``, ``ros2_caret:*``, ``dds:*``, contexts
vpid, vtid, procname) plus ``roscope_ros1:*`` and ``roscope_ros2:*``, with the
roscope ROS 1 tracer preloaded (for a ROS 2 installed from PyPI, roscope's ROS 2
tracer and rclpy hook instead: roscope.ros2_pip); ``start_session`` /
``stop_session`` serve systems started elsewhere; ``recover`` finishes recordings
whose ``roscope record`` was killed.
Each recording is a directory holding the LTTng trace (``ust/...``),
``roscope-manifest.json`` and, with ``kernel=True``, ``perf/perf.data``. An
existing, non-empty directory is never written into (one holding only the
manifest of a failed setup is reused).

The parts, lowest first:

- ``options``: ``RecordOptions``, the defaults, ``RecordError`` (a ``UserError``);
- ``tracer``: the preloaded tracers (ROS 1 library, rospy hook) and the command's environment;
- ``ros2``: the ROS 2 side (roscope.ros2_pip): which tracer, the variables a detached
  recording prints, the warning about processes whose ROS 2 tracer cannot reach the daemon;
- ``lttng``: LTTng's commands, and babeltrace2's count of what a session wrote;
- ``manifest``: the output directory and ``roscope-manifest.json``;
- ``claims``: a recording's name, claimed by its state file
  (``$XDG_STATE_HOME/roscope/record/<name>.json``), which records the processes
  involved by identity (``roscope.processes.identity``: pid, exact start time, boot id);
- ``perf``: the kernel's sched events (``--kernel``);
- ``session``: ``Recording`` (setup with one cleanup path that marks the manifest
  ``"failed"``), ``record_command``, ``start_session``, ``stop_session``;
- ``recover``: recordings whose roscope was killed;
- ``flight``: the flight recorder's sessions and ``snapshot`` (also for callers such as a
  deadline watcher: ``roscope.record.snapshot(name, label, trigger=...)``).

This package does not import roscope._core: it works before the Rust core is built.
"""
from __future__ import annotations

from roscope.record.flight import snapshot
from roscope.record.lttng import count_discarded, ensure_sessiond, lttng_sessions
from roscope.record.manifest import MANIFEST_FORMAT, MANIFEST_NAME, MANIFEST_VERSION, prepare_output, write_manifest
from roscope.record.options import (
    DEFAULT_CHANNEL,
    DEFAULT_CONTEXTS,
    DEFAULT_EVENTS,
    DEFAULT_NUM_SUBBUF,
    DEFAULT_SUBBUF_SIZE,
    RecordError,
    RecordOptions,
)
from roscope.record.recover import recover
from roscope.record.session import Recording, active_sessions, record_command, start_session, stop_session
from roscope.record.tracer import TRACER_ENV, TRACER_NAME, find_tracer, rospy_hook_dir

__all__ = [
    "DEFAULT_CHANNEL", "DEFAULT_CONTEXTS", "DEFAULT_EVENTS", "DEFAULT_NUM_SUBBUF", "DEFAULT_SUBBUF_SIZE",
    "MANIFEST_FORMAT", "MANIFEST_NAME", "MANIFEST_VERSION", "TRACER_ENV", "TRACER_NAME",
    "RecordError", "RecordOptions", "Recording", "active_sessions", "count_discarded", "ensure_sessiond",
    "find_tracer", "lttng_sessions", "prepare_output", "record_command", "recover", "rospy_hook_dir", "snapshot",
    "start_session", "stop_session", "write_manifest",
]
