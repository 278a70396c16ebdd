"""Record a ROS system with LTTng (and optionally perf sched events).

``record_command`` runs one command under a fresh LTTng session that enables
what ``ros2 trace`` enables (``ros2:*``, ``ros2_caret:*``, ``dds:*``, contexts
vpid, vtid, procname) plus ``roscope_ros1:*``, with the roscope ROS 1 tracer
preloaded; ``start_session`` / ``stop_session`` serve
systems started elsewhere. Each recording is a directory holding the LTTng
trace (``ust/...``), ``roscope-manifest.json`` and, with ``kernel=True``,
``perf/perf.data``. An existing, non-empty directory is never written into.

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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from roscope.errors import UserError

MANIFEST_NAME = "roscope-manifest.json"
MANIFEST_FORMAT = "roscope-record-manifest"
MANIFEST_VERSION = 1
# What `ros2 trace` enables by default (ros2_tracing's events, CARET's, the DDS
# layer's), plus roscope's ROS 1 tracer. Enabling a pattern no process has
# registered is harmless in LTTng: it matches nothing.
DEFAULT_EVENTS = ["ros2:*", "ros2_caret:*", "dds:*", "roscope_ros1:*"]
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


def prepare_output(output: str | None, name: str) -> Path:
    """Create the recording directory. Refuses to write into a non-empty one."""
    if output is None:
        base = Path.cwd() / f"roscope-trace-{name}"
        out = base
        n = 1
        while out.exists():
            n += 1
            out = Path(f"{base}-{n}")
    else:
        out = Path(output).expanduser().absolute()
    if out.exists():
        if not out.is_dir():
            raise RecordError(f"output {out} exists and is not a directory; refusing to overwrite it")
        if any(out.iterdir()):
            raise RecordError(f"output directory {out} is not empty; roscope record never overwrites "
                              f"an existing trace (choose another -o)")
    else:
        try:
            out.mkdir(parents=True)
        except FileExistsError:
            raise RecordError(f"output {out} appeared while starting; refusing to overwrite it") from None
    return out


def write_manifest(out: Path, manifest: dict) -> Path:
    path = out / MANIFEST_NAME
    tmp = out / (MANIFEST_NAME + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


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


# --------------------------------------------------------------------------
# LTTng session
# --------------------------------------------------------------------------

def _create_session(name: str, out: Path, opts: RecordOptions) -> None:
    _lttng("create", name, f"--output={out}")
    try:
        _lttng("enable-channel", "--userspace", DEFAULT_CHANNEL, f"--subbuf-size={opts.subbuf_size}",
               f"--num-subbuf={opts.num_subbuf}", f"--session={name}")
        for ev in opts.events:
            _lttng("enable-event", "--userspace", ev, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
        ctx = []
        for c in DEFAULT_CONTEXTS:
            ctx += ["-t", c]
        _lttng("add-context", "--userspace", f"--channel={DEFAULT_CHANNEL}", f"--session={name}", *ctx)
        _lttng("start", name)
    except BaseException:
        _lttng("destroy", name, check=False)
        raise


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


# --------------------------------------------------------------------------
# perf (--kernel)
# --------------------------------------------------------------------------

PERF_EVENTS = ["sched:sched_switch", "sched:sched_wakeup"]


def _start_perf(out: Path) -> tuple[subprocess.Popen, list[str]]:
    if shutil.which("perf") is None:
        raise RecordError("--kernel needs the 'perf' command (Debian package linux-perf)")
    (out / "perf").mkdir()
    cmd = ["perf", "record", "-k", "mono", "-a", "-o", str(out / "perf" / "perf.data")]
    for e in PERF_EVENTS:
        cmd += ["-e", e]
    log = open(out / "perf" / "perf-record.log", "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    time.sleep(0.5)
    if p.poll() is not None:
        text = (out / "perf" / "perf-record.log").read_text().strip().splitlines()
        raise RecordError(f"perf record failed to start (exit {p.returncode}): "
                          f"{' / '.join(text[-3:]) if text else 'no output'}")
    return p, cmd


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


# --------------------------------------------------------------------------
# recording a command
# --------------------------------------------------------------------------

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


def record_command(command: list[str], opts: RecordOptions) -> int:
    """Run COMMAND under a new LTTng session; returns the command's exit status."""
    if not command:
        raise RecordError("no command to record (usage: roscope record [options] -- COMMAND...)")
    if shutil.which(command[0]) is None and not os.path.exists(command[0]):
        raise RecordError(f"command not found: {command[0]}")
    tracer = find_tracer(opts.tracer) if opts.preload else None
    name = opts.name or f"roscope-{_stamp()}-{os.getpid()}"
    ensure_sessiond()
    out = prepare_output(opts.output, name)
    manifest = _base_manifest(out, name, opts, tracer, list(command))
    write_manifest(out, manifest)

    env = dict(os.environ)
    env["ROSCOPE_RECORD_ID"] = name
    if tracer:
        env["LD_PRELOAD"] = f"{tracer}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(tracer)
        hook = rospy_hook_dir(tracer)
        if hook:
            env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(hook)

    perf = None
    child = None
    interrupted: list[int] = []
    result: dict = {}
    old_handlers = {}

    def on_signal(signum, _frame):
        interrupted.append(signum)
        if child is not None and child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    _create_session(name, out, opts)
    try:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            old_handlers[s] = signal.signal(s, on_signal)
        if opts.kernel:
            perf, perf_cmd = _start_perf(out)
            manifest["kernel"] = {"tool": "perf", "command": perf_cmd, "file": "perf/perf.data",
                                  "events": PERF_EVENTS, "clock": "monotonic"}
            write_manifest(out, manifest)
        print(f"roscope: recording session {name} into {out}", file=sys.stderr)
        try:
            child = subprocess.Popen(command, env=env, start_new_session=True)
        except OSError as e:
            raise RecordError(f"could not run {command[0]}: {e}") from None
        # Wait; after an interrupt give the command STOP_GRACE_S to exit on
        # its own, then SIGTERM, then SIGKILL its process group.
        deadline = None
        escalated = 0
        while True:
            try:
                rc = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if interrupted and deadline is None:
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
        result["exit_code"] = rc if rc >= 0 else None
        result["exit_signal"] = signal.Signals(-rc).name if rc < 0 else None
        result["interrupted"] = bool(interrupted)
        if interrupted:
            result["interrupt_signal"] = signal.Signals(interrupted[0]).name
    finally:
        if child is None:
            result.setdefault("exit_code", None)
            result["error"] = "the command was not started"
        if perf is not None:
            manifest["kernel"].update(_stop_perf(perf, out))
        problems = _stop_session(name)
        if problems:
            result["lttng_problems"] = problems
        result["state"] = "complete"
        try:
            _finish_manifest(out, manifest, result)
        finally:
            for s, h in old_handlers.items():
                signal.signal(s, h)
    status = result.get("exit_code")
    if status is None:
        status = 128 + signal.Signals[result["exit_signal"]].value if result.get("exit_signal") else 1
    how = (f"exit code {result['exit_code']}" if result.get("exit_code") is not None
           else f"signal {result.get('exit_signal')}")
    print(f"roscope: trace written to {out} (command ended with {how}"
          + (", interrupted" if interrupted else "") + ")", file=sys.stderr)
    return status


# --------------------------------------------------------------------------
# start / stop for systems started elsewhere
# --------------------------------------------------------------------------

def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    d = Path(base) / "roscope" / "record"
    d.mkdir(parents=True, exist_ok=True)
    return d


def start_session(opts: RecordOptions) -> dict:
    tracer = None
    if opts.preload:
        tracer = find_tracer(opts.tracer)
    name = opts.name or f"roscope-{_stamp()}-{os.getpid()}"
    state_file = _state_dir() / f"{name}.json"
    if state_file.exists():
        raise RecordError(f"a recording named {name} is already active (state in {state_file}); "
                          f"stop it with 'roscope record stop --name {name}'")
    ensure_sessiond()
    out = prepare_output(opts.output, name)
    manifest = _base_manifest(out, name, opts, tracer, None)
    manifest["mode"] = "start/stop"
    write_manifest(out, manifest)
    _create_session(name, out, opts)
    perf_pid = None
    try:
        if opts.kernel:
            perf, perf_cmd = _start_perf(out)
            perf_pid = perf.pid
            manifest["kernel"] = {"tool": "perf", "command": perf_cmd, "file": "perf/perf.data",
                                  "events": PERF_EVENTS, "clock": "monotonic", "pid": perf_pid}
            write_manifest(out, manifest)
    except BaseException:
        _stop_session(name)
        raise
    hook = rospy_hook_dir(tracer) if tracer else None
    state = {"name": name, "output": str(out), "perf_pid": perf_pid, "tracer": str(tracer) if tracer else None,
             "rospy_hook": str(hook) if hook else None}
    state_file.write_text(json.dumps(state))
    return state


def active_sessions() -> list[dict]:
    out = []
    for f in sorted(_state_dir().glob("*.json")):
        try:
            out.append(json.loads(f.read_text()))
        except ValueError:
            continue
    return out


def stop_session(name: str | None) -> dict:
    states = active_sessions()
    if name is None:
        if len(states) != 1:
            names = ", ".join(s["name"] for s in states) or "none"
            raise RecordError(f"give --name: active recordings: {names}")
        state = states[0]
    else:
        matches = [s for s in states if s["name"] == name]
        if not matches:
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
    if state.get("perf_pid"):
        pid = state["perf_pid"]
        try:
            os.kill(pid, signal.SIGINT)
            for _ in range(300):
                os.kill(pid, 0)
                time.sleep(0.1)
        except ProcessLookupError:
            pass
        if manifest.get("kernel"):
            manifest["kernel"]["perf_ok"] = _perf_ok(out)
    problems = _stop_session(state["name"])
    if problems:
        extra["lttng_problems"] = problems
    manifest = _finish_manifest(out, manifest, extra)
    (_state_dir() / f"{state['name']}.json").unlink(missing_ok=True)
    return manifest
