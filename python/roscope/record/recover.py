"""`roscope record recover`: finishing recordings whose `roscope record` was killed
(kill -9, a crash). Only what such a recording started is stopped, each process by
its recorded identity; its manifest is completed as "recovered"."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from roscope.processes import signals
from roscope.processes.identity import boot_id, live_stats, same_process
from roscope.record import claims, lttng, perf
from roscope.record.manifest import MANIFEST_NAME, finish_manifest, now
from roscope.record.options import RecordError


def command_processes(child: dict | None) -> list[dict]:
    """The live processes of the session the command was started in (roscope starts it with
    setsid, so its session id is its pid), started no earlier than it: {"pid", "name"}."""
    if not isinstance(child, dict) or child.get("boot_id") != boot_id():
        return []
    sid, since = child.get("pid"), child.get("start_ticks")
    if not isinstance(sid, int) or not isinstance(since, int):
        return []
    found = []
    for st in live_stats().values():
        if st.sid != sid or st.start_ticks < since:
            continue
        found.append({"pid": st.pid, "start_ticks": st.start_ticks, "boot_id": child["boot_id"], "name": st.comm})
    return sorted(found, key=lambda p: p["pid"])


def kill_command_processes(child: dict | None) -> list[dict]:
    """SIGINT to the command's processes (ROS nodes shut down cleanly), SIGKILL after 5 s."""
    procs = command_processes(child)
    for p in procs:
        signals.send(p, signal.SIGINT)
    for p in signals.wait_gone(procs, 5.0):
        signals.send(p, signal.SIGKILL)
    signals.wait_gone(procs, 2.0)
    return procs


def _same_path(a, b) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


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
                problems += lttng.destroy_session(name)
            actions.append(act("destroy", "destroyed") + f" LTTng session {name}")
        else:
            problems.append(f"LTTng session {name} writes to {sessions[name]}, not to this recording: left alone")
    ident = perf.perf_identity(state, m)
    if same_process(ident, perf.is_perf_of(out)):
        if dry_run:
            actions.append(f"would stop perf (PID {ident['pid']})")
        else:
            actions.append(perf.stop_perf_by_pid(ident, out) or f"perf (PID {ident['pid']}) had ended")
    left = [{"pid": p["pid"], "name": p["name"]} for p in procs]
    res = {"name": name, "output": str(out), "verdict": "recover", "actions": actions, "problems": problems,
           "left_running": left}
    if dry_run:
        actions.append("would complete the manifest (state \"recovered\")")
        return res
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
