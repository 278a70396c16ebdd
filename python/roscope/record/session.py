"""One recording session: ``Recording`` sets it up with one cleanup path, runs the
command (``record_command``) or detaches (``start_session``), and ends it
(``finish``, ``stop_session``).

Every step of the setup records what it created (output directory, manifest, the
name's state file, LTTng session, perf, the command), so whatever fails, one
cleanup path undoes it and marks the manifest ``"state": "failed"`` with the
reason."""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from roscope.processes import group, signals
from roscope.processes.identity import identity, identity_of, printable
from roscope.processes.tracking import tracking
from roscope.record import claims, flight, lttng, perf, ros2
from roscope.record.manifest import (
    SETUP_OUTPUTS,
    base_manifest,
    finish_manifest,
    now,
    prepare_output,
    read_manifest,
    write_json,
    write_manifest,
)
from roscope.record.options import STOP_GRACE_S, RecordError, RecordOptions
from roscope.record.relay import Relay
from roscope.record.tracer import environment
from roscope.ros2_pip import Ros2Recording


def _stamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d-%H%M%S")


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
        self.ros2 = Ros2Recording(None)        # a pip-installed ROS 2's tracer, and the watch of its processes
        self.out: Path | None = None
        self.manifest: dict = {}
        self.state: dict = {}
        self.state_file: Path | None = None   # set once this recording holds its name
        self.made: list[str] = []             # the LTTng sessions this recording made (and not yet destroyed)
        self.perf: group.Started | None = None
        #: The relay daemon of a live session (`RecordOptions.live_timer_us`), or None.
        self.relay: Relay | None = None
        self.child: group.Started | None = None
        self.members: dict[int, dict] = {}    # every process of the command seen: pid -> identity
        self.interrupted: list[int] = []
        self._old_handlers: dict = {}
        self._setting_up = False
        self._started = False                 # the session records (setup's last step may still wait)
        self.snapshots: list[int] = []        # SIGUSR1s to a flight recorder, to be served

    # -- checks that create nothing (a failure leaves nothing behind)
    def check(self) -> None:
        claims.check_name(self.name)
        if shutil.which("lttng") is None:
            raise RecordError("the 'lttng' command was not found; install lttng-tools")
        if self.opts.kernel and shutil.which("perf") is None:
            raise RecordError("--kernel needs the 'perf' command (Debian package linux-perf)")
        if self.command is not None:
            if not self.command:
                raise RecordError("no command to record (usage: roscope record [options] -- COMMAND...)")
            if shutil.which(self.command[0]) is None and not os.path.exists(self.command[0]):
                raise RecordError(f"command not found: {self.command[0]}")
        with signals.as_interrupt():   # a tracer may be built here: never left running by a SIGTERM
            self.tracer, self.ros2 = ros2.tracers(self.opts, self.command)

    # -- signals: during setup they abort it (cleanly); once the command runs they stop it
    def _on_signal(self, signum, _frame) -> None:
        if self._setting_up and not self._started:
            raise KeyboardInterrupt(signal.Signals(signum).name)
        self.interrupted.append(signum)   # the wait loop passes it on (not here: /proc is being read)

    def _on_usr1(self, signum, _frame) -> None:
        self.snapshots.append(signum)   # served (or refused) by the wait loop or the watch, not here

    def serve_snapshots(self) -> None:
        """The SIGUSR1s received since the last call: for a flight recorder one snapshot, which
        serves every request that came before it began (those that come while it is written get
        the next one); else one line saying none is taken."""
        got = len(self.snapshots)
        if not got:
            return
        del self.snapshots[:got]   # the watch's loop and its command's waiter both serve them
        if self.opts.flight:
            self.snapshot("SIGUSR1")
        else:
            print(f"roscope: SIGUSR1 ignored ({got}): only a flight recorder (--flight-recorder) takes snapshots",
                  file=sys.stderr)

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
            # SIGUSR1 asks a flight recorder for a snapshot; any other recording says it has none
            # (its default action would end roscope and leave the session running)
            self._old_handlers[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._on_usr1)
            self.manifest = base_manifest(self.out, self.name, self.opts, self.tracer, self.command)
            self.manifest["ros2"] = self.ros2.manifest()
            self.manifest["tracer"] = self.ros2.choice
            self.manifest.update(mode=self.mode, owner=identity(os.getpid()))
            write_manifest(self.out, self.manifest)
            self._claim_name()
            lttng.ensure_sessiond()
            if self.opts.flight:
                self.state["flight"] = True
                flight.create(self.name, self.out, self.opts, self.made)
                self.manifest["lttng"].update(subbuf_size=self.opts.subbuf_size, num_subbuf=self.opts.num_subbuf,
                                              mode="snapshot", sessions=flight.sessions(self.name))
                self.manifest["options"].update(subbuf_size=self.opts.subbuf_size, num_subbuf=self.opts.num_subbuf)
            else:
                live = None
                if self.opts.live_timer_us:
                    self.relay = Relay(self.out)
                    self.relay.start()
                    # for `record recover` after a SIGKILL: the relay, and where the session writes
                    self.state.update(relay=self.relay.proc.ident, relay_output=self.relay.session_output)
                    self._save()
                    live = (self.opts.live_timer_us, self.relay.url)
                lttng.create_session(self.name, self.out, live)
                self.made.append(self.name)
                lttng.configure_and_start(self.name, self.opts)
            # A signal while the running processes dump their state ends the wait; then a watch
            # of what runs keeps what it recorded and ends as after any Ctrl-C, while a recording
            # whose command has not started yet (or a detached one) is undone as before
            self._started = True
            lttng.after_start(self.name, self.opts, stop=lambda: bool(self.interrupted))
            if self.interrupted and (self.command is not None or self.mode == "start/stop"):
                raise KeyboardInterrupt(signal.Signals(self.interrupted[0]).name)
            if self.opts.kernel:
                self._start_perf()
            if self.command is not None:
                print(f"roscope: recording session {self.name} into {self.out}", file=sys.stderr)
                self._setting_up = False
                self._spawn()
            elif self.mode == "start/stop":
                self.state["owner"] = None  # detached: 'roscope record stop' ends it
                exports = ros2.exports(self.ros2, self.name)
                if exports:
                    self.state["ros2_environment"] = exports
            self.state["phase"] = "recording"
            self._save()
        except BaseException as exc:
            self._fail(exc)
        finally:
            self._setting_up = False
            if self.mode == "start/stop":   # its roscope exits now; a watch keeps them until its end
                self.restore_signals()

    def _claim_name(self) -> None:
        state = {"name": self.name, "output": str(self.out), "mode": self.mode, "phase": "setup",
                 "owner": self.manifest["owner"], "perf": None, "child": None,
                 "tracer": str(self.tracer) if self.tracer else None,
                 "rospy_hook": self.manifest["rospy_hook"], "created": self.manifest["start_time"]}
        self.state = state
        self.state_file = claims.claim(self.name, state)

    def _save(self) -> None:
        write_manifest(self.out, self.manifest)
        if self.state_file is not None:
            write_json(self.state_file, self.state)

    def _start_perf(self) -> None:
        self.perf, entry = perf.start_perf(self.out)
        self.manifest["kernel"] = entry
        self.state["perf"] = entry["process"]
        self._save()
        perf.check_started(self.perf, self.out)

    def environment(self) -> dict:
        return environment(os.environ, self.name, self.tracer, self.ros2)

    def _spawn(self) -> None:
        try:
            self.child = group.start("command", self.command, env=self.environment(), stdin=None)
        except OSError as e:
            raise RecordError(f"could not run {self.command[0]}: {e.strerror or e}") from None
        ident = self.child.ident
        self.manifest["child"] = ident
        self.state["child"] = ident
        self.manifest["process_tracking"] = tracking().describe()
        self.ros2.start_watch()
        if self.child.cgroup is not None:
            self.manifest["cgroup"] = self.state["cgroup"] = str(self.child.cgroup)

    def _note_members(self) -> list[int]:
        """Records the command's processes by identity in the state file (for 'recover');
        returns the PIDs of those that run."""
        new = False
        running = self.child.members()
        for st in running:
            if st.pid not in self.members:
                self.members[st.pid] = {**identity_of(st), "name": st.comm}
                new = True
        if new and self.state_file is not None:
            self.state["members"] = sorted(self.members.values(), key=lambda m: (m["start_ticks"], m["pid"]))
            write_json(self.state_file, self.state)
        return [st.pid for st in running]

    def _undo(self) -> list[str]:
        """Undoes what setup created; returns what could not be undone."""
        problems = []
        group.stop_everything(0.0)   # the command and perf, if they were started
        problems += self._destroy()
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

    def _destroy(self) -> list[str]:
        """Destroys the LTTng sessions this recording made (a flight recorder makes two), never
        one it did not (e.g. another tool's of the same name)."""
        problems = [p for n in self.made for p in lttng.destroy_session(n)]
        self.made = []
        return problems

    def snapshot(self, trigger: str) -> None:
        """A flight recorder's snapshot (SIGUSR1); a failure is printed, the recording goes on."""
        try:
            dest = flight.snapshot({"name": self.name, "output": str(self.out)}, trigger=trigger)
            print(f"roscope: snapshot written to {dest}", file=sys.stderr)
        except RecordError as e:
            print(f"roscope: snapshot failed: {e}", file=sys.stderr)

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
        iso, ns = now()
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
    def wait(self) -> tuple[int, dict]:
        """Waits for the command; after an interrupt it gets STOP_GRACE_S to exit on its
        own, then SIGTERM, then SIGKILL to all its processes. Then what it left running (a
        daemon, a background job) gets SIGINT, SIGTERM, SIGKILL 3 s apart, before the
        session stops. Returns its wait status and that stop's record."""
        child = self.child
        deadline = None
        escalated = forwarded = 0
        noted = 0.0
        while True:
            try:
                rc = child.popen.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            self.serve_snapshots()
            if len(self.interrupted) > forwarded:   # SIGINT to all its processes (ROS nodes stop cleanly)
                forwarded = len(self.interrupted)
                group.signal_all(child, signal.SIGINT)
            if time.monotonic() - noted >= 1.0:
                self.ros2.poll(self._note_members())   # a ROS 2 tracer that cannot reach the daemon?
                noted = time.monotonic()
            if self.interrupted and deadline is None:
                deadline = time.monotonic() + STOP_GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                sig = signal.SIGTERM if escalated == 0 else signal.SIGKILL
                escalated += 1
                deadline = time.monotonic() + 3.0
                group.signal_all(child, sig)
        left = group.stop(child, 3.0)
        strays = group.stop_strays(3.0)   # subreaper tracking: orphans from sessions never seen
        left["stopped"] += strays["stopped"]
        left["left"] += strays["left"]
        return rc, left

    def finish(self, result: dict, counts=None) -> dict:
        """Stops perf and the session, completes the manifest, releases the name.
        `counts`: called once the session is destroyed (its last chunk archived), gives
        the trace's counts of events and losses for the manifest ({events,
        discarded_events, packets_lost}: `roscope watch` read every event already);
        without it babeltrace2 counts them. If it raises, the manifest is still written
        (with the error) and the exception goes on."""
        try:
            if self.perf is not None:
                self.manifest["kernel"].update(perf.stop_perf(self.perf, self.out))
            problems = self._destroy()
            if problems:
                result["lttng_problems"] = problems
            result["state"] = "complete"
            ros2.warn(self.ros2.finish([st.pid for st in self.child.members()] if self.child is not None else []))
            result["ros2"] = self.ros2.manifest()
            failed = None
            try:
                known = counts() if counts is not None else None
            except BaseException as e:   # the manifest first, then the exception
                failed, known = e, {"error": f"{type(e).__name__}: {e}"}
            finish_manifest(self.out, self.manifest, result, known)
            if self.relay is not None:   # its viewer has read the end (counts)
                self.relay.stop()
                self.relay = None
            if failed is not None:
                raise failed
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
        rc, left = rec.wait()
        result["exit_code"] = rc if rc >= 0 else None
        result["exit_signal"] = signal.Signals(-rc).name if rc < 0 else None
        if left["stopped"]:
            result["stopped_after_exit"] = left["stopped"]
            print(f"roscope: the command left {len(left['stopped'])} process(es) running; stopped: "
                  + ", ".join(f"PID {p['pid']} ({printable(p['comm'])})" for p in left["stopped"]), file=sys.stderr)
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
    """Sets up a recording that runs until 'record stop'; returns its state (name, output, tracer...)."""
    rec = Recording(opts, None, "start/stop")
    rec.setup()
    return rec.state


def active_sessions() -> list[dict]:
    """The recordings of the state directory (start/stop ones and running commands)."""
    return [s for _f, s in claims.state_files() if s is not None]


def stop_session(name: str | None) -> dict:
    """Ends the start/stop recording `name` (the only one when None): perf, the LTTng
    session, the manifest completed; returns the manifest."""
    states = [s for s in active_sessions() if claims.detached(s)]
    if name is None:
        if len(states) != 1:
            names = ", ".join(s["name"] for s in states) or "none"
            raise RecordError(f"give --name: active start/stop recordings: {names}")
        state = states[0]
    else:
        matches = [s for s in states if s["name"] == name]
        if not matches:
            other = claims.read_state(claims.state_path(name)) if "/" not in name else None
            if other is not None:
                how = ("it stops when its command ends, or on Ctrl-C" if claims.owner_alive(other)
                       else "its roscope record is no longer running: finish it with 'roscope record recover'")
                raise RecordError(f"recording {name} was started by 'roscope record -- COMMAND', not "
                                  f"'record start': {how}")
            raise RecordError(f"no active recording named {name} (active: "
                              f"{', '.join(s['name'] for s in states) or 'none'})")
        state = matches[0]
    out = Path(state["output"])
    manifest = read_manifest(out)
    extra: dict = {"state": "complete"}
    perf.stop_perf_by_pid(perf.perf_identity(state, manifest), out)
    if manifest.get("kernel"):
        manifest["kernel"]["perf_ok"] = perf.perf_ok(out)
    unreachable = ros2.check_at_stop(manifest)
    names = flight.sessions(state["name"]) if state.get("flight") else [state["name"]]
    problems = [p for n in names for p in lttng.destroy_session(n)]
    if problems:
        extra["lttng_problems"] = problems
    if unreachable:
        extra["ros2"] = unreachable
    manifest = finish_manifest(out, manifest, extra)
    claims.state_path(state["name"]).unlink(missing_ok=True)
    return manifest

