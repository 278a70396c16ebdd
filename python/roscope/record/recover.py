"""`roscope record recover`: finishing recordings whose `roscope record` was killed
(kill -9, a crash). Only what such a recording started is stopped, each process by
its recorded identity; its manifest is completed as "recovered"."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from roscope.processes import cgroup, signals
from roscope.processes.identity import identity_of, live_stats, mismatch, printable, same_process, stat
from roscope.record import claims, flight, lttng, perf
from roscope.record.manifest import MANIFEST_NAME, finish_manifest, now, read_manifest
from roscope.record.options import RecordError
from roscope.record.relay import is_relay_of
from roscope.record.relay import stop_by_identity as stop_relay


def command_processes(state: dict, manifest: dict) -> tuple[list[dict], list[str]]:
    """The live processes of a recording's command that can be proven to be its own, and
    why the others recorded were not taken: ([{"pid", "start_ticks", "boot_id", "name",
    "cgroup"?}], [reason]). A process is the command's only if

    - it is in the command's cgroup (one that the recording's roscope made: its name
      carries that process's identity), or
    - its PID, exact start time and boot id are those recorded (the command, or a
      process `roscope record` saw it start), or
    - it is in the session of the command while the command itself still runs as
      recorded (roscope started the command with setsid: that session is its own).

    Nothing is taken on a PID alone, and a start time is never a lower bound."""
    owner = state.get("owner") or manifest.get("owner")
    child = state.get("child") or manifest.get("child")
    recorded = [m for m in (state.get("members") or manifest.get("members") or []) if isinstance(m, dict)]
    found: dict[int, dict] = {}
    refused: list[str] = []
    cg, why_cg = cgroup.parent_of_recording(state.get("cgroup") or manifest.get("cgroup"), owner)
    if cg is not None:
        for pid in cgroup.members(cg):
            st = stat(pid)
            if st is not None and not st.gone:
                found[pid] = {**identity_of(st), "name": st.comm, "cgroup": str(cg)}
    elif state.get("cgroup") or manifest.get("cgroup"):
        if "no longer exists" not in (why_cg or ""):
            refused.append(f"cgroup not used: {why_cg}")
    for ident in [child, *recorded] if child is not None else recorded:
        why = mismatch(ident)
        if why is None:
            st = stat(ident["pid"])
            found.setdefault(ident["pid"], {**identity_of(st), "name": st.comm})
        elif not why.endswith("has ended") and not why.endswith("(a zombie)"):
            refused.append(f"did not signal: {why}")
    if mismatch(child) is None:
        for st in live_stats().values():
            if st.sid == child["pid"] and st.pid not in found:
                found[st.pid] = {**identity_of(st), "name": st.comm}
    return sorted(found.values(), key=lambda p: p["pid"]), refused


def kill_command_processes(procs: list[dict]) -> list[dict]:
    """SIGINT to the command's processes (ROS nodes shut down cleanly), SIGKILL after 5 s;
    each only while it is still the process found (and in its cgroup, when found there)."""
    def check(p):
        return (lambda pid: cgroup.holds(Path(p["cgroup"]), pid)) if p.get("cgroup") else None

    stopped = [p for p in procs if signals.send(p, signal.SIGINT, also=check(p)) is None]
    for p in signals.wait_gone(stopped, 5.0):
        signals.send(p, signal.SIGKILL, also=check(p))
    signals.wait_gone(stopped, 2.0)
    return stopped


def _remove_cgroup(state: dict, manifest: dict) -> None:
    """The emptied cgroup of a killed recording's command, and its parent when empty."""
    cg, _why = cgroup.parent_of_recording(state.get("cgroup") or manifest.get("cgroup"),
                                          state.get("owner") or manifest.get("owner"))
    if cg is not None:
        cgroup.remove_empty(cg.parent)   # the command's, perf's: those now empty


def _same_path(a, b) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


def _sessions_of(name: str | None, out: Path, state: dict | None, manifest: dict) -> dict[str, Path]:
    """{LTTng session: where it writes} of the recording `name` into `out`: one session into `out`,
    or a flight recorder's two (roscope.record.flight: the init session's directory and the
    runtime session's snapshot output)."""
    if not name:
        return {}
    flying = (state or {}).get("flight") or (manifest.get("lttng") or {}).get("mode") == "snapshot"
    if not flying:
        return {name: out}
    return {name + flight.INIT_SUFFIX: flight.init_dir(out, name), name: out / ".lttng" / name}


def _candidates(paths) -> list[dict]:
    """The recordings to look at: every state file, and the manifests at `paths`."""
    found: dict[str, dict] = {}
    for f, s in claims.state_files():
        out = Path(s["output"]) if s and s.get("output") else None
        found[os.path.realpath(out) if out else str(f)] = {"state_file": f, "state": s, "out": out}
    for p in paths:
        p = Path(p).expanduser().absolute()
        m = p if p.name == MANIFEST_NAME else p / MANIFEST_NAME
        if not m.is_file():
            raise RecordError(f"{p}: no {MANIFEST_NAME} there (give a directory written by roscope record)")
        read_manifest(m.parent)   # one it cannot act on is an error here, not a line among others
        found.setdefault(os.path.realpath(m.parent), {"state_file": None, "state": None, "out": m.parent})
    return list(found.values())


def _judge(c: dict, sessions: dict[str, str]) -> tuple[str, str]:
    """(verdict, why): "recover" (its roscope record is gone), "forget" (a stale state
    file of a finished recording), "leave" (alive, or not provably abandoned), "done"."""
    state, out = c["state"], c["out"]
    if state is None and c["state_file"] is not None:
        return "leave", f"cannot read the state file {c['state_file']} (or it is not one roscope record writes)"
    if out is None:
        return "leave", f"its state file {c['state_file']} names no output directory"
    try:
        m = read_manifest(out)
    except RecordError as e:
        return "leave", str(e)
    c["manifest"] = m
    c["name"] = (state or {}).get("name") or m.get("session")
    if m.get("state") != "recording":
        if c["state_file"] is not None:
            return "forget", f"its manifest says {m.get('state')!r}: only its state file was left"
        return "done", f"nothing to do: its manifest says {m.get('state')!r}"
    info = state if state is not None else m
    mode = info.get("mode", "start/stop" if state is not None else "command")
    session_ours = any(_same_path(sessions.get(n), where) for n, where in _sessions_of(c["name"], out, state, m).items())
    if mode == "start/stop" and (state is None or claims.detached(state)):
        if session_ours:
            return "leave", f"a start/stop recording in progress: stop it with 'roscope record stop --name {c['name']}'"
        return "recover", "a start/stop recording whose LTTng session is gone"
    owner = info.get("owner")
    if not isinstance(owner, dict):
        return "leave", "no owner process recorded (made by an older roscope): cannot tell it was abandoned"
    if claims.owner_alive(info):
        return "leave", f"its roscope record (PID {owner.get('pid')}) is still running"
    return "recover", f"its roscope record (PID {owner.get('pid')}) is no longer running"


def _recover_one(c: dict, sessions: dict[str, str], kill_children: bool, dry_run: bool) -> dict:
    """Stops what a killed recording left (only what it started), completes its manifest."""
    state, out, m, name = c["state"] or {}, c["out"], c["manifest"], c["name"]
    def act(now: str, done: str) -> str:
        return f"would {now}" if dry_run else done

    actions: list[str] = []
    problems: list[str] = []
    procs, refused = command_processes(state, m)
    if kill_children:
        problems += refused
    if procs and kill_children:
        if not dry_run:
            procs = kill_command_processes(procs)
        if procs:
            actions.append(act("stop", "stopped") + " the command's processes: "
                           + ", ".join(f"PID {p['pid']} ({printable(p['name'])})" for p in procs))
        procs = [p for p in procs if same_process(p)] if not dry_run else []
    ours = {n: where for n, where in _sessions_of(name, out, state, m).items() if n in sessions}
    if name in ours and name + flight.INIT_SUFFIX in ours and _same_path(sessions[name], ours[name]):
        # a flight recorder's rings hold its last seconds: kept as one more snapshot before they go
        if dry_run:
            actions.append("would write a last snapshot of the flight recorder's rings")
        else:
            try:
                actions.append(f"wrote a last snapshot, {flight.snapshot({'name': name, 'output': str(out)}, trigger='record recover')}")
            except RecordError as e:
                problems.append(f"no last snapshot: {e}")
    for n, where in ours.items():
        # a live watch's session writes through its relay: LTTng names the relay's ports
        if _same_path(sessions[n], where) or (n == name and state.get("relay_output") and sessions[n] == state["relay_output"]):
            if not dry_run:
                problems += lttng.destroy_session(n)
            actions.append(act("destroy", "destroyed") + f" LTTng session {n}")
        else:
            problems.append(f"LTTng session {n} writes to {sessions[n] or 'nothing'}, not to this recording "
                            f"({where}): left alone")
    ident = perf.perf_identity(state, m)
    if same_process(ident, perf.is_perf_of(out)):
        if dry_run:
            actions.append(f"would stop perf (PID {ident['pid']})")
        else:
            actions.append(perf.stop_perf_by_pid(ident, out) or f"perf (PID {ident['pid']}) had ended")
    relay_ident = state.get("relay")   # a live watch's relay daemon, once its session is gone
    if same_process(relay_ident, is_relay_of(out)):
        if dry_run:
            actions.append(f"would stop lttng-relayd (PID {relay_ident['pid']})")
        else:
            actions.append(stop_relay(relay_ident, out) or f"lttng-relayd (PID {relay_ident['pid']}) had ended")
    left = [{"pid": p["pid"], "name": printable(p["name"])} for p in procs]
    res = {"name": name, "output": str(out), "verdict": "recover", "actions": actions, "problems": problems,
           "left_running": left}
    if dry_run:
        actions.append("would complete the manifest (state \"recovered\")")
        return res
    _remove_cgroup(state, m)
    iso, _ns = now()
    recovery = {"time": iso, "by_pid": os.getpid(), "why": c["why"], "actions": list(actions),
                "left_running": left}
    if problems:
        recovery["problems"] = problems
    if m.get("kernel"):
        m["kernel"]["perf_ok"] = perf.perf_ok(out)
    m.setdefault("exit_code", None)
    m = finish_manifest(out, m, {"state": "recovered", "recovery": recovery})
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
    sessions = lttng.lttng_sessions()
    results = []
    for c in _candidates(paths):
        verdict, why = _judge(c, sessions)
        c["why"] = why
        name = c.get("name") or (c["state"] or {}).get("name") or (c["state_file"].stem if c["state_file"] else None)
        base = {"name": name, "output": str(c["out"] or ""),
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
