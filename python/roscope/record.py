"""Record a ROS system with LTTng (and optionally perf sched events).

``record_command`` runs one command under a fresh LTTng session that enables
what ``ros2 trace`` enables (``ros2:*``, ``ros2_caret:*``, ``dds:*``, contexts
vpid, vtid, procname) plus ``roscope_ros1:*``, with the roscope ROS 1 tracer
preloaded; ``start_session`` / ``stop_session`` serve systems started
elsewhere; ``recover`` finishes recordings whose ``roscope record`` was killed.
Each recording is a directory holding the LTTng trace (``ust/...``),
``roscope-manifest.json`` and, with ``kernel=True``, ``perf/perf.data``. An
existing, non-empty directory is never written into (one holding only the
manifest of a failed setup is reused).

Every recording is set up by one ``Recording``: it remembers what it has
created (output directory, manifest, the name's state file, LTTng session,
perf, the command), so whatever fails, one cleanup path undoes it and marks
the manifest ``"state": "failed"`` with the reason. The state file
(``$XDG_STATE_HOME/roscope/record/<name>.json``) claims the name and records
the processes involved (the recording ``roscope``, perf, the command) by
identity: pid, start time and boot id, so a pid is trusted only while it is
still the same process.

This module does not import roscope._core: it works before the Rust core is
built. Its errors are ``RecordError``, a ``UserError``.
"""
from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from roscope import ros2_pip
from roscope.errors import UserError

MANIFEST_NAME = "roscope-manifest.json"
MANIFEST_FORMAT = "roscope-record-manifest"
MANIFEST_VERSION = 1
# What `ros2 trace` enables by default (ros2_tracing's events, CARET's, the DDS
# layer's), plus roscope's ROS 1 tracer and its ROS 2 (rclpy) events. Enabling a
# pattern no process has registered is harmless in LTTng: it matches nothing.
DEFAULT_EVENTS = ["ros2:*", "ros2_caret:*", "dds:*", "roscope_ros1:*", "roscope_ros2:*"]
# The contexts `ros2 trace` adds by default.
DEFAULT_CONTEXTS = ["vpid", "vtid", "procname"]
DEFAULT_CHANNEL = "roscope"
# Per CPU, per user: 8 x 1 MiB. The example pipeline writes ~60 KiB/s of
# events; the overhead benchmark at 1 kHz ~200 KiB/s. Both lose nothing.
DEFAULT_SUBBUF_SIZE = "1M"
DEFAULT_NUM_SUBBUF = 8
TRACER_ENV = "ROSCOPE_ROS1_TRACER"
TRACER_NAME = "libroscope_ros1.so"
STOP_GRACE_S = 10.0
# What a failed setup may leave in the output besides its manifest (removed by its cleanup).
SETUP_OUTPUTS = ("ust", "kernel", "perf", "index", MANIFEST_NAME + ".tmp")


class RecordError(UserError):
    """A recording could not be made; the message says why (a user error: no traceback)."""


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


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _now() -> tuple[str, int]:
    t = time.time_ns()
    iso = _dt.datetime.fromtimestamp(t / 1e9, _dt.timezone.utc).isoformat(timespec="microseconds")
    return iso, t


def _stamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def find_tracer(explicit: str | None = None) -> Path:
    """Locate libroscope_ros1.so: explicit path, $ROSCOPE_ROS1_TRACER, or the repository build."""
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    elif os.environ.get(TRACER_ENV):
        candidates.append(Path(os.environ[TRACER_ENV]))
    else:
        here = Path(__file__).resolve()
        candidates.append(here.parents[2] / "instrument" / "ros1" / "build" / TRACER_NAME)
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


def _lttng(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    if shutil.which("lttng") is None:
        raise RecordError("the 'lttng' command was not found; install lttng-tools")
    p = subprocess.run(["lttng", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise RecordError(f"'lttng {' '.join(args)}' failed: {' / '.join(msg[-3:]) if msg else p.returncode}")
    return p


def ensure_sessiond() -> bool:
    """Start a user-space lttng-sessiond if none answers. Returns True if one was started."""
    if subprocess.run(["pgrep", "-x", "lttng-sessiond"], capture_output=True).returncode == 0:
        return False
    if shutil.which("lttng-sessiond") is None:
        raise RecordError("no lttng-sessiond is running and the 'lttng-sessiond' command was not found")
    p = subprocess.run(["lttng-sessiond", "--daemonize", "--no-kernel"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RecordError(f"could not start lttng-sessiond: {p.stderr.strip()}")
    for _ in range(50):
        if _lttng("list", check=False).returncode == 0:
            return True
        time.sleep(0.1)
    raise RecordError("lttng-sessiond was started but does not answer")


def lttng_sessions() -> dict[str, str]:
    """{session name: output path} of the LTTng sessions the session daemon knows ({} if none answers)."""
    if shutil.which("lttng") is None:
        return {}
    p = subprocess.run(["lttng", "--mi", "xml", "list"], capture_output=True, text=True)
    if p.returncode != 0:
        return {}
    try:
        root = ET.fromstring(p.stdout)
    except ET.ParseError:
        return {}
    out = {}
    for s in root.iter():
        if s.tag.rsplit("}", 1)[-1] != "session":
            continue
        kids = {c.tag.rsplit("}", 1)[-1]: (c.text or "") for c in s}
        if kids.get("name"):
            out[kids["name"]] = kids.get("path", "")
    return out


def _failed_setup_leftover(out: Path) -> bool:
    """`out` holds only the manifest of a recording whose setup failed."""
    names = {x.name for x in out.iterdir()}
    if not names <= {MANIFEST_NAME, MANIFEST_NAME + ".tmp"} or MANIFEST_NAME not in names:
        return False
    try:
        return json.loads((out / MANIFEST_NAME).read_text()).get("state") == "failed"
    except (OSError, ValueError, AttributeError):
        return False


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
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise RecordError(f"output {out} exists and is not a directory; refusing to overwrite it")
        if any(out.iterdir()):
            if not _failed_setup_leftover(out):
                raise RecordError(f"output directory {out} is not empty; roscope record never overwrites "
                                  f"an existing trace (choose another -o)")
            for leftover in (MANIFEST_NAME, MANIFEST_NAME + ".tmp"):
                (out / leftover).unlink(missing_ok=True)
    else:
        try:
            out.mkdir(parents=True)
        except FileExistsError:
            raise RecordError(f"output {out} appeared while starting; refusing to overwrite it") from None
        except OSError as e:
            raise RecordError(f"cannot create the output directory {out}: {e.strerror}") from None
    return out


def _write_json(path: Path, obj: dict) -> Path:
    """Atomically: a temporary file beside `path`, synced, then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def write_manifest(out: Path, manifest: dict) -> Path:
    return _write_json(out / MANIFEST_NAME, manifest)


def count_discarded(trace_dir: Path) -> dict:
    """Count events and discarded events of an LTTng trace with babeltrace2's Python bindings.

    Runs in /usr/bin/python3 when bt2 is not importable here. Returns
    {"events": N, "discarded_events": D, "packets_lost": P} or {"error": "..."}.
    """
    script = r"""
import json, sys
import bt2
ev = disc = lost = 0
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    t = type(m)
    if t is bt2._EventMessageConst:
        ev += 1
    elif t is bt2._DiscardedEventsMessageConst:
        disc += m.count or 0
    elif t is bt2._DiscardedPacketsMessageConst:
        lost += m.count or 0
print(json.dumps({"events": ev, "discarded_events": disc, "packets_lost": lost}))
"""
    if not any(trace_dir.rglob("metadata")):
        return {"events": 0, "discarded_events": 0, "packets_lost": 0, "note": "no trace data was written"}
    for py in (sys.executable, "/usr/bin/python3"):
        if not py or not os.path.exists(py):
            continue
        p = subprocess.run([py, "-c", script, str(trace_dir)], capture_output=True, text=True)
        if p.returncode == 0:
            try:
                return json.loads(p.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                pass
        err = p.stderr.strip().splitlines()
        if err and "No module named 'bt2'" in err[-1]:
            continue
        return {"error": f"babeltrace2 could not read {trace_dir}: {err[-1] if err else p.returncode}"}
    return {"error": "babeltrace2 Python bindings (bt2) are not available to count lost events"}


def _warn_losses(counts: dict, out: Path) -> None:
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


def _warn_ros2(warnings: list[str]) -> None:
    """Says loudly which processes loaded a ROS 2 tracer that could not reach the daemon."""
    if warnings:
        bar = "!" * 72
        print(bar, file=sys.stderr)
        for w in warnings:
            print(f"roscope: WARNING: {w}", file=sys.stderr)
        print(bar, file=sys.stderr)


# --------------------------------------------------------------------------
# processes by identity: a recorded pid is trusted only while it is the same
# process (same boot, same start time, and the expected command line)
# --------------------------------------------------------------------------

def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, process group, session, start time in clock ticks since boot), or None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    f = text[text.rfind(")") + 2:].split()
    try:
        return f[0], int(f[2]), int(f[3]), int(f[19])
    except (IndexError, ValueError):
        return None


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def identity(pid: int) -> dict | None:
    """What identifies process `pid` later: {"pid", "start_ticks", "boot_id"} (None if it is gone)."""
    st = _proc_stat(pid)
    if st is None:
        return None
    return {"pid": pid, "start_ticks": st[3], "boot_id": _boot_id()}


def same_process(ident: dict | None, looks_like=None) -> bool:
    """The process `ident` describes still runs (not a zombie, not a reused pid), and its
    command line passes `looks_like` (a predicate over argv) when given."""
    if not isinstance(ident, dict) or not isinstance(ident.get("pid"), int):
        return False
    if ident.get("boot_id") != _boot_id():
        return False
    st = _proc_stat(ident["pid"])
    if st is None or st[0] in "ZX" or st[3] != ident.get("start_ticks"):
        return False
    return looks_like is None or bool(looks_like(cmdline(ident["pid"])))


def _is_roscope_record(argv: list[str]) -> bool:
    return "record" in argv and any("roscope" in a for a in argv)


def _is_perf_of(out: Path):
    data = str(out / "perf" / "perf.data")
    return lambda argv: bool(argv) and os.path.basename(argv[0]) == "perf" and "record" in argv and data in argv


def command_processes(child: dict | None) -> list[dict]:
    """The live processes of the session the command was started in (roscope starts it with
    setsid, so its session id is its pid), started no earlier than it: {"pid", "name"}."""
    if not isinstance(child, dict) or child.get("boot_id") != _boot_id():
        return []
    sid, since = child.get("pid"), child.get("start_ticks")
    if not isinstance(sid, int) or not isinstance(since, int):
        return []
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        st = _proc_stat(int(d.name))
        if st is None or st[0] in "ZX" or st[2] != sid or st[3] < since:
            continue
        try:
            name = (d / "comm").read_text().strip()
        except OSError:
            name = "?"
        found.append({"pid": int(d.name), "start_ticks": st[3], "boot_id": child["boot_id"], "name": name})
    return sorted(found, key=lambda p: p["pid"])


def _signal_process(ident: dict, sig: int) -> bool:
    """Sends `sig` to the process `ident` if it is still that process."""
    if not same_process(ident):
        return False
    try:
        os.kill(ident["pid"], sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _wait_gone(idents: list[dict], timeout: float) -> list[dict]:
    """Waits until every process is gone; returns those still running after `timeout`."""
    end = time.monotonic() + timeout
    alive = [p for p in idents if same_process(p)]
    while alive and time.monotonic() < end:
        time.sleep(0.1)
        alive = [p for p in alive if same_process(p)]
    return alive


def kill_command_processes(child: dict | None) -> list[dict]:
    """SIGINT to the command's processes (ROS nodes shut down cleanly), SIGKILL after 5 s."""
    procs = command_processes(child)
    for p in procs:
        _signal_process(p, signal.SIGINT)
    for p in _wait_gone(procs, 5.0):
        _signal_process(p, signal.SIGKILL)
    _wait_gone(procs, 2.0)
    return procs


# --------------------------------------------------------------------------
# state files: one per recording, named after it (the name's claim)
# --------------------------------------------------------------------------

def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    d = Path(base) / "roscope" / "record"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _state_path(name: str) -> Path:
    return _state_dir() / f"{name}.json"


def _read_state(path: Path) -> dict | None:
    try:
        s = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) and s.get("name") else None


def _owner_alive(state: dict) -> bool:
    return same_process(state.get("owner"), _is_roscope_record)


def _detached(state: dict) -> bool:
    """A start/stop recording after its setup: no roscope process owns it until 'stop'
    (state files of older versions, without a mode, are such recordings)."""
    return state.get("mode", "start/stop") == "start/stop" and not state.get("owner")


def check_name(name: str) -> None:
    """A recording name becomes a file name and an LTTng session name."""
    if not name or "/" in name or name.startswith(".") or any(ord(c) < 32 for c in name):
        raise RecordError(f"--name {name!r} is not usable: give a name without '/', control "
                          f"characters or a leading '.'")


def _name_taken(name: str, path: Path) -> RecordError:
    other = _read_state(path) or {}
    where = f" (recording into {other['output']})" if other.get("output") else ""
    if other and _detached(other):
        return RecordError(f"a recording named {name} is already active{where} (state in {path}); "
                           f"stop it with 'roscope record stop --name {name}', or choose another --name")
    if other and not _owner_alive(other):
        return RecordError(f"a recording named {name}{where} was left by a roscope record that is no "
                           f"longer running (state in {path}); finish it with 'roscope record recover'")
    return RecordError(f"a recording named {name} is already active{where} (state in {path}); "
                       f"choose another --name")


# --------------------------------------------------------------------------
# LTTng session, perf, manifest
# --------------------------------------------------------------------------

PERF_EVENTS = ["sched:sched_switch", "sched:sched_wakeup"]


def _stop_session(name: str) -> list[str]:
    problems = []
    for args in (("stop", name), ("destroy", name)):
        p = _lttng(*args, check=False)
        if p.returncode != 0:
            problems.append(f"lttng {' '.join(args)}: {p.stderr.strip()}")
    return problems


def _lttng_version() -> str:
    p = _lttng("--version", check=False)
    return p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"


def _perf_ok(out: Path) -> bool:
    """perf wrote its file completely (it re-raises SIGINT after writing, so its status is -2)."""
    log = out / "perf" / "perf-record.log"
    data = out / "perf" / "perf.data"
    try:
        return data.stat().st_size > 0 and "Captured and wrote" in log.read_text()
    except OSError:
        return False


def _stop_perf(p: subprocess.Popen, out: Path) -> dict:
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    ok = _perf_ok(out)
    if not ok:
        print(f"roscope: WARNING: perf did not finish writing {out / 'perf' / 'perf.data'} "
              f"(see {out / 'perf' / 'perf-record.log'})", file=sys.stderr)
    return {"perf_exit_status": p.returncode, "perf_ok": ok}


def _stop_perf_by_pid(ident: dict | None, out: Path) -> str | None:
    """Stops the perf a recording started, by its recorded identity (never another process).
    Returns what was done, or None when that perf no longer runs."""
    if not same_process(ident, _is_perf_of(out)):
        return None
    _signal_process(ident, signal.SIGINT)
    if _wait_gone([ident], 30.0):
        _signal_process(ident, signal.SIGKILL)
        _wait_gone([ident], 5.0)
        return f"killed perf (PID {ident['pid']}): it did not stop on SIGINT"
    return f"stopped perf (PID {ident['pid']})"


def _base_manifest(out: Path, name: str, opts: RecordOptions, tracer: Path | None, command) -> dict:
    iso, ns = _now()
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
        "trace_dir": str(out),
        "lttng": {
            "version": _lttng_version(),
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


def _finish_manifest(out: Path, manifest: dict, extra: dict) -> dict:
    iso, ns = _now()
    manifest.update(extra)
    manifest["end_time"] = iso
    manifest["end_time_ns"] = ns
    manifest["duration_s"] = round((ns - manifest["start_time_ns"]) / 1e9, 6)
    counts = count_discarded(out)
    manifest["events_recorded"] = counts.get("events")
    manifest["events_discarded"] = counts.get("discarded_events")
    manifest["packets_lost"] = counts.get("packets_lost")
    if "error" in counts:
        manifest["loss_count_error"] = counts["error"]
    write_manifest(out, manifest)
    _warn_losses(counts, out)
    return manifest


# --------------------------------------------------------------------------
# one recording: setup with one cleanup path, the command's run, the end
# --------------------------------------------------------------------------

class Recording:
    """Sets up one recording (``mode`` "command": runs ``command``; "start/stop": detaches).

    Every step records what it created; if any step fails, or a signal comes,
    ``_fail`` undoes all of it (perf stopped, LTTng session destroyed, what
    they wrote removed, the name's state file removed), marks the manifest
    "failed" with the reason and raises a one-line RecordError (a
    KeyboardInterrupt stays one)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, opts: RecordOptions, command: list[str] | None, mode: str):
        self.opts, self.command, self.mode = opts, command, mode
        self.name = opts.name or f"roscope-{_stamp()}-{os.getpid()}"
        self.tracer: Path | None = None
        self.ros2: ros2_pip.Ros2Recording = ros2_pip.Ros2Recording(None)
        self.out: Path | None = None
        self.manifest: dict = {}
        self.state: dict = {}
        self.state_file: Path | None = None   # set once this recording holds its name
        self.session = False                  # the LTTng session exists (this recording made it)
        self.perf: subprocess.Popen | None = None
        self.child: subprocess.Popen | None = None
        self.interrupted: list[int] = []
        self._old_handlers: dict = {}
        self._setting_up = False

    # -- checks that create nothing (a failure leaves nothing behind)
    def check(self) -> None:
        check_name(self.name)
        if shutil.which("lttng") is None:
            raise RecordError("the 'lttng' command was not found; install lttng-tools")
        if self.opts.kernel and shutil.which("perf") is None:
            raise RecordError("--kernel needs the 'perf' command (Debian package linux-perf)")
        if self.command is not None:
            if not self.command:
                raise RecordError("no command to record (usage: roscope record [options] -- COMMAND...)")
            if shutil.which(self.command[0]) is None and not os.path.exists(self.command[0]):
                raise RecordError(f"command not found: {self.command[0]}")
        self.ros2 = ros2_pip.Ros2Recording.setup(self.command, self.opts.ros2, self.opts.preload)
        # With roscope's ROS 2 tracer, the ROS 1 tracer only when asked for (--tracer).
        ros1 = self.opts.preload and (not self.ros2.preload or self.opts.tracer is not None)
        self.tracer = find_tracer(self.opts.tracer) if ros1 else None

    # -- signals: during setup they abort it (cleanly); once the command runs they stop it
    def _on_signal(self, signum, _frame) -> None:
        if self._setting_up:
            raise KeyboardInterrupt(signal.Signals(signum).name)
        self.interrupted.append(signum)
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def restore_signals(self) -> None:
        for s, h in self._old_handlers.items():
            signal.signal(s, h)
        self._old_handlers = {}

    def setup(self) -> None:
        self.check()
        self.out = prepare_output(self.opts.output, self.name)
        self._setting_up = True
        try:
            for s in self.SIGNALS:
                self._old_handlers[s] = signal.signal(s, self._on_signal)
            self.manifest = _base_manifest(self.out, self.name, self.opts, self.tracer, self.command)
            self.manifest["ros2"] = self.ros2.manifest()
            self.manifest.update(mode=self.mode, owner=identity(os.getpid()))
            write_manifest(self.out, self.manifest)
            self._claim_name()
            ensure_sessiond()
            self._create_session()
            if self.opts.kernel:
                self._start_perf()
            if self.command is not None:
                print(f"roscope: recording session {self.name} into {self.out}", file=sys.stderr)
                self._setting_up = False
                self._spawn()
            else:
                self.state["owner"] = None  # detached: 'roscope record stop' ends it
                env = self.ros2.environment({"ROSCOPE_RECORD_ID": self.name})
                if self.ros2.preload:
                    self.state["ros2_environment"] = {k: env[k] for k in ("LD_PRELOAD", "PYTHONPATH", ros2_pip.HOOK_VAR,
                                                                          "ROSCOPE_RECORD_ID") if k in env}
            self.state["phase"] = "recording"
            self._save()
        except BaseException as exc:
            self._fail(exc)
        finally:
            self._setting_up = False
            if self.command is None:
                self.restore_signals()

    def _claim_name(self) -> None:
        """The state file, created only if absent (link(2) of a complete file): the name's claim."""
        path = _state_path(self.name)
        self.state = {"name": self.name, "output": str(self.out), "mode": self.mode, "phase": "setup",
                      "owner": self.manifest["owner"], "perf": None, "child": None,
                      "tracer": str(self.tracer) if self.tracer else None,
                      "rospy_hook": self.manifest["rospy_hook"], "created": self.manifest["start_time"]}
        tmp = path.with_name(f".{self.name}.{os.getpid()}.claim")
        _write_json(tmp, self.state)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise _name_taken(self.name, path) from None
        finally:
            tmp.unlink(missing_ok=True)
        self.state_file = path

    def _save(self) -> None:
        write_manifest(self.out, self.manifest)
        if self.state_file is not None:
            _write_json(self.state_file, self.state)

    def _create_session(self) -> None:
        name, opts = self.name, self.opts
        _lttng("create", name, f"--output={self.out}")
        self.session = True
        _lttng("enable-channel", "--userspace", DEFAULT_CHANNEL, f"--subbuf-size={opts.subbuf_size}",
               f"--num-subbuf={opts.num_subbuf}", f"--session={name}")
        for ev in opts.events:
            _lttng("enable-event", "--userspace", ev, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
        ctx = []
        for c in DEFAULT_CONTEXTS:
            ctx += ["-t", c]
        _lttng("add-context", "--userspace", f"--channel={DEFAULT_CHANNEL}", f"--session={name}", *ctx)
        _lttng("start", name)

    def _start_perf(self) -> None:
        out = self.out
        (out / "perf").mkdir()
        cmd = ["perf", "record", "-k", "mono", "-a", "-o", str(out / "perf" / "perf.data")]
        for e in PERF_EVENTS:
            cmd += ["-e", e]
        with open(out / "perf" / "perf-record.log", "w") as log:
            self.perf = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        ident = identity(self.perf.pid)
        self.manifest["kernel"] = {"tool": "perf", "command": cmd, "file": "perf/perf.data", "events": PERF_EVENTS,
                                   "clock": "monotonic", "pid": self.perf.pid, "process": ident}
        self.state["perf"] = ident
        self._save()
        time.sleep(0.5)
        if self.perf.poll() is not None:
            text = (out / "perf" / "perf-record.log").read_text(errors="replace").strip().splitlines()
            raise RecordError(f"perf record failed to start (exit {self.perf.returncode}): "
                              f"{' / '.join(text[-3:]) if text else 'no output'}")

    def environment(self) -> dict:
        env = dict(os.environ)
        env["ROSCOPE_RECORD_ID"] = self.name
        if self.tracer:
            env["LD_PRELOAD"] = f"{self.tracer}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(self.tracer)
            hook = rospy_hook_dir(self.tracer)
            if hook:
                env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(hook)
        return self.ros2.environment(env)

    def _spawn(self) -> None:
        try:
            self.child = subprocess.Popen(self.command, env=self.environment(), start_new_session=True)
        except OSError as e:
            raise RecordError(f"could not run {self.command[0]}: {e.strerror or e}") from None
        ident = identity(self.child.pid)
        self.ros2.start_watch(self.child.pid)  # its session: start_new_session
        self.manifest["child"] = ident
        self.state["child"] = ident
        if self.interrupted:  # a signal came while it started
            os.killpg(self.child.pid, signal.SIGINT)

    def _undo(self) -> list[str]:
        """Undoes what setup created; returns what could not be undone."""
        problems = []
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.child.wait()
        if self.perf is not None and self.perf.poll() is None:
            self.perf.kill()
            self.perf.wait()
        if self.session:
            problems += _stop_session(self.name)
            self.session = False
        if self.out is not None:
            for n in SETUP_OUTPUTS:
                p = self.out / n
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                elif p.exists() or p.is_symlink():
                    p.unlink(missing_ok=True)
        if self.state_file is not None:
            self.state_file.unlink(missing_ok=True)
            self.state_file = None
        return problems

    def _fail(self, exc: BaseException):
        if isinstance(exc, KeyboardInterrupt):
            reason = f"interrupted ({exc.args[0] if exc.args else 'SIGINT'}) while setting up"
        elif isinstance(exc, RecordError):
            reason = str(exc)
        elif isinstance(exc, OSError):
            reason = f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        problems = self._undo()
        iso, ns = _now()
        self.manifest.update(state="failed", error=reason, end_time=iso, end_time_ns=ns)
        if problems:
            self.manifest["cleanup_problems"] = problems
        where = ""
        if self.out is not None and self.manifest.get("format"):
            try:
                where = f" ({write_manifest(self.out, self.manifest)}: state \"failed\")"
            except OSError as e:
                where = f" (its manifest could not be marked failed: {e.strerror})"
        self.restore_signals()
        if isinstance(exc, KeyboardInterrupt):
            print(f"roscope: recording {self.name} {reason}; nothing was recorded{where}", file=sys.stderr)
            raise exc
        if isinstance(exc, (RecordError, OSError)):
            raise RecordError(f"{reason}; nothing was recorded{where}") from None
        raise exc

    # -- the command's run
    def wait(self) -> int:
        """Waits for the command; after an interrupt it gets STOP_GRACE_S to exit on its
        own, then SIGTERM, then SIGKILL to its process group. Returns its wait status."""
        child = self.child
        deadline = None
        escalated = 0
        while True:
            try:
                rc = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            self.ros2.poll()
            if self.interrupted and deadline is None:
                deadline = time.monotonic() + STOP_GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                sig = signal.SIGTERM if escalated == 0 else signal.SIGKILL
                escalated += 1
                deadline = time.monotonic() + 3.0
                try:
                    os.killpg(child.pid, sig)
                except ProcessLookupError:
                    pass
        # Reap anything left in the command's process group.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return rc

    def finish(self, result: dict) -> dict:
        """Stops perf and the session, completes the manifest, releases the name."""
        try:
            if self.perf is not None:
                self.manifest["kernel"].update(_stop_perf(self.perf, self.out))
            problems = _stop_session(self.name)
            self.session = False
            if problems:
                result["lttng_problems"] = problems
            result["state"] = "complete"
            _warn_ros2(self.ros2.finish())
            result["ros2"] = self.ros2.manifest()
            _finish_manifest(self.out, self.manifest, result)
        finally:
            self.restore_signals()
            if self.state_file is not None:
                self.state_file.unlink(missing_ok=True)
        return self.manifest


def record_command(command: list[str], opts: RecordOptions) -> int:
    """Run COMMAND under a new LTTng session; returns the command's exit status."""
    rec = Recording(opts, list(command), "command")
    rec.setup()
    result: dict = {"exit_code": None}
    try:
        rc = rec.wait()
        result["exit_code"] = rc if rc >= 0 else None
        result["exit_signal"] = signal.Signals(-rc).name if rc < 0 else None
    finally:
        result["interrupted"] = bool(rec.interrupted)
        if rec.interrupted:
            result["interrupt_signal"] = signal.Signals(rec.interrupted[0]).name
        rec.finish(result)
    status = result.get("exit_code")
    if status is None:
        status = 128 + signal.Signals[result["exit_signal"]].value if result.get("exit_signal") else 1
    how = (f"exit code {result['exit_code']}" if result.get("exit_code") is not None
           else f"signal {result.get('exit_signal')}")
    print(f"roscope: trace written to {rec.out} (command ended with {how}"
          + (", interrupted" if rec.interrupted else "") + ")", file=sys.stderr)
    return status


# --------------------------------------------------------------------------
# start / stop for systems started elsewhere
# --------------------------------------------------------------------------

def start_session(opts: RecordOptions) -> dict:
    rec = Recording(opts, None, "start/stop")
    rec.setup()
    return rec.state


def active_sessions() -> list[dict]:
    """The recordings of the state directory (start/stop ones and running commands)."""
    out = []
    for f in sorted(_state_dir().glob("*.json")):
        s = _read_state(f)
        if s is not None:
            out.append(s)
    return out


def _perf_identity(state: dict, manifest: dict) -> dict | None:
    ident = state.get("perf") or ((manifest.get("kernel") or {}).get("process"))
    if ident is None and state.get("perf_pid"):  # a state file of an older version: no start time
        st = _proc_stat(state["perf_pid"])
        ident = {"pid": state["perf_pid"], "start_ticks": st[3] if st else None, "boot_id": _boot_id()}
    return ident


def stop_session(name: str | None) -> dict:
    states = [s for s in active_sessions() if _detached(s)]
    if name is None:
        if len(states) != 1:
            names = ", ".join(s["name"] for s in states) or "none"
            raise RecordError(f"give --name: active start/stop recordings: {names}")
        state = states[0]
    else:
        matches = [s for s in states if s["name"] == name]
        if not matches:
            other = _read_state(_state_path(name)) if "/" not in name else None
            if other is not None:
                how = ("it stops when its command ends, or on Ctrl-C" if _owner_alive(other)
                       else "its roscope record is no longer running: finish it with 'roscope record recover'")
                raise RecordError(f"recording {name} was started by 'roscope record -- COMMAND', not "
                                  f"'record start': {how}")
            raise RecordError(f"no active recording named {name} (active: "
                              f"{', '.join(s['name'] for s in states) or 'none'})")
        state = matches[0]
    out = Path(state["output"])
    manifest_path = out / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"cannot read the manifest {manifest_path}: {e}") from None
    extra: dict = {"state": "complete"}
    _stop_perf_by_pid(_perf_identity(state, manifest), out)
    if manifest.get("kernel"):
        manifest["kernel"]["perf_ok"] = _perf_ok(out)
    # The processes started elsewhere are not known: any of the machine's.
    watch = ros2_pip.TracerWatch(None)
    watch.poll(force=True)
    problems = _stop_session(state["name"])
    if problems:
        extra["lttng_problems"] = problems
    if watch.unreachable:
        extra["ros2"] = {**(manifest.get("ros2") or {}), "tracer_unreachable": watch.unreachable}
        _warn_ros2(watch.warnings())
    manifest = _finish_manifest(out, manifest, extra)
    _state_path(state["name"]).unlink(missing_ok=True)
    return manifest


# --------------------------------------------------------------------------
# recover: recordings whose `roscope record` was killed
# --------------------------------------------------------------------------

def _same_path(a, b) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


def _candidates(paths) -> list[dict]:
    """The recordings to look at: every state file, and the manifests at `paths`."""
    found: dict[str, dict] = {}
    for f in sorted(_state_dir().glob("*.json")):
        s = _read_state(f)
        out = Path(s["output"]) if s and s.get("output") else None
        found[os.path.realpath(out) if out else str(f)] = {"state_file": f, "state": s, "out": out}
    for p in paths:
        p = Path(p).expanduser().absolute()
        m = p if p.name == MANIFEST_NAME else p / MANIFEST_NAME
        if not m.is_file():
            raise RecordError(f"{p}: no {MANIFEST_NAME} there (give a directory written by roscope record)")
        found.setdefault(os.path.realpath(m.parent), {"state_file": None, "state": None, "out": m.parent})
    return list(found.values())


def _judge(c: dict, sessions: dict[str, str]) -> tuple[str, str]:
    """(verdict, why): "recover" (its roscope record is gone), "forget" (a stale state
    file of a finished recording), "leave" (alive, or not provably abandoned), "done"."""
    state, out = c["state"], c["out"]
    if state is None and c["state_file"] is not None:
        return "leave", f"cannot read the state file {c['state_file']}"
    try:
        m = json.loads((out / MANIFEST_NAME).read_text())
        if not isinstance(m, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        return "leave", f"cannot read its manifest {out / MANIFEST_NAME}: {e}"
    c["manifest"] = m
    c["name"] = (state or {}).get("name") or m.get("session")
    if m.get("state") != "recording":
        if c["state_file"] is not None:
            return "forget", f"its manifest says {m.get('state')!r}: only its state file was left"
        return "done", f"nothing to do: its manifest says {m.get('state')!r}"
    info = state if state is not None else m
    mode = info.get("mode", "start/stop" if state is not None else "command")
    session_ours = _same_path(sessions.get(c["name"]), out)
    if mode == "start/stop" and (state is None or _detached(state)):
        if session_ours:
            return "leave", f"a start/stop recording in progress: stop it with 'roscope record stop --name {c['name']}'"
        return "recover", "a start/stop recording whose LTTng session is gone"
    owner = info.get("owner")
    if not isinstance(owner, dict):
        return "leave", "no owner process recorded (made by an older roscope): cannot tell it was abandoned"
    if _owner_alive(info):
        return "leave", f"its roscope record (PID {owner.get('pid')}) is still running"
    return "recover", f"its roscope record (PID {owner.get('pid')}) is no longer running"


def _recover_one(c: dict, sessions: dict[str, str], kill_children: bool, dry_run: bool) -> dict:
    """Stops what a killed recording left (only what it started), completes its manifest."""
    state, out, m, name = c["state"] or {}, c["out"], c["manifest"], c["name"]
    def act(now: str, done: str) -> str:
        return f"would {now}" if dry_run else done

    actions: list[str] = []
    problems: list[str] = []
    procs = command_processes(state.get("child") or m.get("child"))
    if procs and kill_children:
        if not dry_run:
            procs = kill_command_processes(state.get("child") or m.get("child"))
        actions.append(act("stop", "stopped") + " the command's processes: "
                       + ", ".join(f"PID {p['pid']} ({p['name']})" for p in procs))
        procs = [p for p in procs if same_process(p)] if not dry_run else []
    if name in sessions:
        if _same_path(sessions[name], out):
            if not dry_run:
                problems += _stop_session(name)
            actions.append(act("destroy", "destroyed") + f" LTTng session {name}")
        else:
            problems.append(f"LTTng session {name} writes to {sessions[name]}, not to this recording: left alone")
    perf = _perf_identity(state, m)
    if same_process(perf, _is_perf_of(out)):
        if dry_run:
            actions.append(f"would stop perf (PID {perf['pid']})")
        else:
            actions.append(_stop_perf_by_pid(perf, out) or f"perf (PID {perf['pid']}) had ended")
    left = [{"pid": p["pid"], "name": p["name"]} for p in procs]
    res = {"name": name, "output": str(out), "verdict": "recover", "actions": actions, "problems": problems,
           "left_running": left}
    if dry_run:
        actions.append("would complete the manifest (state \"recovered\")")
        return res
    iso, _ns = _now()
    recovery = {"time": iso, "by_pid": os.getpid(), "why": c["why"], "actions": list(actions),
                "left_running": left}
    if problems:
        recovery["problems"] = problems
    if m.get("kernel"):
        m["kernel"]["perf_ok"] = _perf_ok(out)
    m.setdefault("exit_code", None)
    m = _finish_manifest(out, m, {"state": "recovered", "recovery": recovery})
    if c["state_file"] is not None:
        c["state_file"].unlink(missing_ok=True)
    res.update(events_recorded=m.get("events_recorded"), events_discarded=m.get("events_discarded"))
    return res


def recover(paths=(), dry_run: bool = False, kill_children: bool = False) -> list[dict]:
    """Finds the recordings whose `roscope record` was killed (state files, and the
    manifests under `paths`, in state "recording" with their owner process gone) and
    finishes them: destroys their LTTng session (only one writing to their directory),
    stops the perf they started and, with `kill_children`, their command's processes
    (by recorded identity), and completes their manifest as "recovered". Recordings
    whose owner still runs, and start/stop recordings whose session exists, are left
    alone. Returns one dict per recording looked at: name, output, verdict
    ("recover", "forget", "leave", "done"), why, actions, problems, left_running."""
    sessions = lttng_sessions()
    results = []
    for c in _candidates(paths):
        verdict, why = _judge(c, sessions)
        c["why"] = why
        base = {"name": c.get("name") or (c["state"] or {}).get("name"), "output": str(c["out"] or ""),
                "verdict": verdict, "why": why, "actions": [], "problems": [], "left_running": []}
        if verdict == "recover":
            res = _recover_one(c, sessions, kill_children, dry_run)
            results.append({**base, **res, "why": why})
        elif verdict == "forget":
            if not dry_run:
                c["state_file"].unlink(missing_ok=True)
            results.append({**base, "actions": [f"{'would remove' if dry_run else 'removed'} its state file "
                                                 f"{c['state_file']}"]})
        else:
            results.append(base)
    return results
