"""A recording's directory and its manifest (``roscope-manifest.json``): where it
goes (never into an existing trace), what it says at the start, and how it is
completed (end time, babeltrace2's event and loss counts, loud loss warnings)."""
from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import socket
import sys
import time
from dataclasses import asdict
from pathlib import Path

from roscope.files import atomic_write
from roscope.record.lttng import count_discarded, lttng_version
from roscope.record.options import DEFAULT_CHANNEL, DEFAULT_CONTEXTS, RecordError, RecordOptions
from roscope.record.tracer import rospy_hook_dir

MANIFEST_NAME = "roscope-manifest.json"
MANIFEST_FORMAT = "roscope-record-manifest"
MANIFEST_VERSION = 1
# What a failed setup may leave in the output besides its manifest (removed by its cleanup).
SETUP_OUTPUTS = ("ust", "kernel", "perf", "index", MANIFEST_NAME + ".tmp")


def now() -> tuple[str, int]:
    """(ISO 8601 UTC with microseconds, ns since the epoch) of the real-time clock."""
    t = time.time_ns()
    iso = _dt.datetime.fromtimestamp(t / 1e9, _dt.timezone.utc).isoformat(timespec="microseconds")
    return iso, t


def _failed_setup_leftover(out: Path) -> bool:
    """`out` holds only the manifest of a recording whose setup failed."""
    names = {x.name for x in out.iterdir() if not _manifest_temp(x.name)}
    if not names <= {MANIFEST_NAME} or MANIFEST_NAME not in names:
        return False
    try:
        return json.loads((out / MANIFEST_NAME).read_text()).get("state") == "failed"
    except (OSError, ValueError, AttributeError):
        return False


def _manifest_temp(name: str) -> bool:
    """A temporary file of a manifest's write (`files.atomic_write`, or older versions' NAME.tmp)."""
    return name == MANIFEST_NAME + ".tmp" or (name.startswith(f".{MANIFEST_NAME}.") and name.endswith(".tmp"))


def prepare_output(output: str | None, name: str) -> Path:
    """Create the recording directory. Refuses to write into a non-empty one, except one
    holding only the manifest of a failed setup (that manifest is replaced)."""
    if output is None:
        base = Path.cwd() / f"roscope-trace-{name}"
        out = base
        n = 1
        while out.exists():
            n += 1
            out = Path(f"{base}-{n}")
    else:
        out = Path(output).expanduser().absolute()
    if out.is_symlink():
        raise RecordError(f"output {out} is a symbolic link; give the path of the directory itself "
                          "(roscope never writes through a link)")
    if out.exists():
        if not out.is_dir():
            raise RecordError(f"output {out} exists and is not a directory; refusing to overwrite it")
        if any(out.iterdir()):
            if not _failed_setup_leftover(out):
                raise RecordError(f"output directory {out} is not empty; roscope record never overwrites "
                                  f"an existing trace (choose another -o)")
            for leftover in out.iterdir():
                if leftover.name == MANIFEST_NAME or _manifest_temp(leftover.name):
                    leftover.unlink(missing_ok=True)
    else:
        try:
            out.mkdir(parents=True)
        except FileExistsError:
            raise RecordError(f"output {out} appeared while starting; refusing to overwrite it") from None
        except OSError as e:
            raise RecordError(f"cannot create the output directory {out}: {e.strerror}") from None
    return out


def write_json(path: Path, obj: dict) -> Path:
    """Atomically (roscope.files: a new temporary file beside `path`, synced, then
    renamed; never through a link or over anything but a regular file)."""
    atomic_write(path, json_text(obj))
    return path


def json_text(obj: dict) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def write_manifest(out: Path, manifest: dict) -> Path:
    return write_json(out / MANIFEST_NAME, manifest)


def read_manifest(out: Path) -> dict:
    """The manifest of recording `out` (a RecordError naming it if it cannot be read or is not an object)."""
    path = out / MANIFEST_NAME
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"cannot read the manifest {path}: {e}") from None
    why = shape_problem(m)
    if why is not None:
        raise RecordError(f"{path}: not a manifest of roscope record: {why}")
    return m


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: The manifest fields that `stop` and `recover` act on: key -> (check, what it should be).
SHAPE = {
    "state": (lambda v: isinstance(v, str), "text"),
    "mode": (lambda v: v is None or isinstance(v, str), "text"),
    "session": (lambda v: v is None or isinstance(v, str), "text"),
    "owner": (lambda v: v is None or isinstance(v, dict), "an object"),
    "child": (lambda v: v is None or isinstance(v, dict), "an object"),
    "kernel": (lambda v: v is None or isinstance(v, dict), "an object"),
    "cgroup": (lambda v: v is None or isinstance(v, str), "text"),
    "members": (lambda v: v is None or isinstance(v, list), "a list"),
    "start_time_ns": (lambda v: v is None or _is_int(v), "an integer"),
}


def shape_problem(m) -> str | None:
    """Why `m` is not a manifest roscope record wrote (None if its fields have their types)."""
    if not isinstance(m, dict):
        return f"a JSON {type(m).__name__}, not an object"
    for key, (ok, what) in SHAPE.items():
        if key in m and not ok(m[key]):
            return f"{key!r} is {type(m[key]).__name__}, not {what}"
    if "state" not in m:
        return "it has no 'state'"
    return None


def warn_losses(counts: dict, out: Path) -> None:
    d = counts.get("discarded_events", 0) or 0
    lost = counts.get("packets_lost", 0) or 0
    if d or lost:
        bar = "!" * 72
        print(f"{bar}\nroscope: WARNING: {d} EVENTS WERE LOST (discarded by LTTng: buffers full)"
              + (f" and {lost} packets were lost" if lost else "")
              + f"\nroscope: in {out}\nroscope: record again with a larger --subbuf-size / --num-subbuf"
              f"\n{bar}", file=sys.stderr)
    if "error" in counts:
        print(f"roscope: warning: could not count lost events: {counts['error']}", file=sys.stderr)


def base_manifest(out: Path, name: str, opts: RecordOptions, tracer: Path | None, command) -> dict:
    iso, ns = now()
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "state": "recording",
        "command": command,
        "cwd": os.getcwd(),
        "host": socket.gethostname(),
        "user": getpass.getuser(),
        "start_time": iso,
        "start_time_ns": ns,
        "session": name,
        # Processes started under this recording emit roscope_ros1:process_init with this id;
        # LTTng also records any other traced process of the machine during the session.
        "record_id": name,
        # --attach: the processes running when the session started belong to it too.
        "attach": bool(opts.attach),
        "trace_dir": str(out),
        "lttng": {
            "version": lttng_version(),
            "channel": DEFAULT_CHANNEL,
            "events": opts.events,
            "contexts": DEFAULT_CONTEXTS,
            "subbuf_size": opts.subbuf_size,
            "num_subbuf": opts.num_subbuf,
            "buffers": "per-uid",
            "clock": "monotonic",
        },
        "options": {k: v for k, v in asdict(opts).items() if k not in ("tracer",)},
        "preload": str(tracer) if tracer else None,
        "rospy_hook": str(rospy_hook_dir(tracer)) if tracer and rospy_hook_dir(tracer) else None,
        "kernel": None,
    }


def finish_manifest(out: Path, manifest: dict, extra: dict, counts: dict | None = None) -> dict:
    """Completes the manifest: `extra`, the end time, the counts of events and losses:
    `counts` ({events, discarded_events, packets_lost} from a reader that already read
    the whole trace, e.g. `roscope watch`'s), else babeltrace2's (`count_discarded`)."""
    iso, ns = now()
    manifest.update(extra)
    manifest["end_time"] = iso
    manifest["end_time_ns"] = ns
    if isinstance(manifest.get("start_time_ns"), int):
        manifest["duration_s"] = round((ns - manifest["start_time_ns"]) / 1e9, 6)
    if counts is None:
        counts = count_discarded(out)
    manifest["events_recorded"] = counts.get("events")
    manifest["events_discarded"] = counts.get("discarded_events")
    manifest["packets_lost"] = counts.get("packets_lost")
    if "error" in counts:
        manifest["loss_count_error"] = counts["error"]
    write_manifest(out, manifest)
    warn_losses(counts, out)
    return manifest
