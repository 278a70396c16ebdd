"""LTTng's commands (``lttng``, ``lttng-sessiond``) and babeltrace2's count of what a
session wrote. Arguments are passed as argv lists, never through a shell."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from roscope.files import read_shared
from roscope.processes import group
from roscope.processes.identity import live_stats, stat
from roscope.processes.tracking import tracking
from roscope.record.options import DEFAULT_CHANNEL, DEFAULT_CONTEXTS, RecordError, RecordOptions


def lttng(*args: str, check: bool = True) -> group.Output:
    """Runs `lttng ARGS`; with `check`, a failure is a RecordError quoting LTTng's last lines."""
    if shutil.which("lttng") is None:
        raise RecordError("the 'lttng' command was not found; install lttng-tools")
    p = group.output("lttng", ["lttng", *args])
    if check and p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise RecordError(f"'lttng {' '.join(args)}' failed: {' / '.join(msg[-3:]) if msg else p.returncode}")
    return p


def ensure_sessiond() -> bool:
    """Start a user-space lttng-sessiond if none answers. Returns True if one was started."""
    if group.output("pgrep", ["pgrep", "-x", "lttng-sessiond"], timeout=10).returncode == 0:
        return False
    if shutil.which("lttng-sessiond") is None:
        raise RecordError("no lttng-sessiond is running and the 'lttng-sessiond' command was not found")
    # a daemon on purpose: it serves every session, and is never stopped as one of roscope's processes
    p = tracking().run_daemon(["lttng-sessiond", "--daemonize", "--no-kernel"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RecordError(f"could not start lttng-sessiond: {p.stderr.strip()}")
    for _ in range(50):
        if lttng("list", check=False).returncode == 0:
            return True
        time.sleep(0.1)
    raise RecordError("lttng-sessiond was started but does not answer")


def lttng_sessions() -> dict[str, str]:
    """{session name: output path} of the LTTng sessions the session daemon knows ({} if none answers)."""
    if shutil.which("lttng") is None:
        return {}
    root = _mi(["list"])
    if root is None:
        return {}
    out = {}
    for s in root.iter():
        if s.tag.rsplit("}", 1)[-1] != "session":
            continue
        kids = {c.tag.rsplit("}", 1)[-1]: (c.text or "") for c in s}
        if kids.get("name"):
            path = kids.get("path", "")
            if not path and kids.get("snapshot_mode") == "1":   # a snapshot session writes where its output says
                path = snapshot_output(kids["name"])
            out[kids["name"]] = path
    return out


def _mi(args: list[str]) -> ET.Element | None:
    """`lttng --mi xml ARGS` parsed (None if it fails)."""
    p = group.output("lttng", ["lttng", "--mi", "xml", *args])
    if p.returncode != 0:
        return None
    try:
        return ET.fromstring(p.stdout)
    except ET.ParseError:
        return None


def snapshot_output(name: str) -> str:
    """The default output path of snapshot session `name` ("" if it has none or cannot be read)."""
    root = _mi(["snapshot", "list-output", f"--session={name}"])
    urls = [] if root is None else [e.text or "" for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "ctrl_url"]
    url = urls[0] if urls else ""
    return url[len("file://"):] if url.startswith("file://") else url


def create_session(name: str, out: Path, live: tuple[int, str] | None = None) -> None:
    """Creates session `name` writing into `out` (then ``configure_and_start``; the caller
    destroys it if that fails: the session exists once this returned). With `live` (live
    timer in us, relay URL): a live session streaming to that relay daemon instead."""
    if live is not None:
        lttng("create", name, f"--live={int(live[0])}", f"--set-url={live[1]}")
    else:
        lttng("create", name, f"--output={out}")


def configure_and_start(name: str, opts: RecordOptions) -> None:
    """The channel, events and contexts of a created session, then 'lttng start' (then
    ``after_start``)."""
    timer = [f"--monitor-timer={int(opts.monitor_timer_us)}"] if opts.monitor_timer_us else []
    lttng("enable-channel", "--userspace", DEFAULT_CHANNEL, f"--subbuf-size={opts.subbuf_size}",
          f"--num-subbuf={opts.num_subbuf}", *timer, f"--session={name}")
    for ev in opts.events:
        lttng("enable-event", "--userspace", ev, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
    ctx = []
    for c in DEFAULT_CONTEXTS:
        ctx += ["-t", c]
    lttng("add-context", "--userspace", f"--channel={DEFAULT_CHANNEL}", f"--session={name}", *ctx)
    if opts.rotate_us:
        lttng("enable-rotation", f"--session={name}", f"--timer={int(opts.rotate_us)}us")
    if opts.pids:
        tracked = process_tree(opts.pids)
        lttng("track", "--userspace", f"--session={name}", "--vpid=" + ",".join(str(p) for p in tracked))
        opts.pids = tracked
    lttng("start", name)


def after_start(name: str, opts: RecordOptions, stop=None) -> None:
    """What follows the start of session `name`: with --attach, the request for state dumps
    (given up early once `stop()` says so: a Ctrl-C meanwhile)."""
    if opts.attach:
        late = request_state_dump(name, opts.pids or None, stop)
        if late:
            listed = ", ".join(f"{pid} ({st.comm})" for pid, st in late)
            print(f"roscope: warning: no state dump within {STATE_DUMP_LIMIT_S:g} s from {listed}: "
                  "objects made before the recording may be unnamed there", file=sys.stderr)


#: roscope's tracers make their state dump 50 ms after they see the request, checking every
#: 50 ms (instrument/include/roscope/roscope_attach_tp.h). The request stays on at least
#: STATE_DUMP_WAIT_S (for tracers that do not answer, attach_ack.h) and at most
#: STATE_DUMP_LIMIT_S, until every tracked process with a tracer has answered: the session
#: daemon may set a session up in a process seconds after 'lttng start' returned.
STATE_DUMP_WAIT_S = 1.0
STATE_DUMP_LIMIT_S = 20.0
STATE_DUMP_REQUEST = "roscope_attach:request"
#: Where the tracers answer: ACK_DIR/ACK_PREFIX<PID> (instrument/include/roscope/attach_ack.h).
ACK_DIR = Path("/dev/shm")
ACK_PREFIX = "roscope-attach-"


#: The answer file is "START_TICKS DUMPS\n": two decimal numbers.
ACK_LIMIT = 64


def _owner(pid: int) -> int:
    """The user of process `pid` (-1, which owns no file, when it is gone)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def _remove_stale(path: Path) -> None:
    """Removes an answer file of a process that is gone, if it is this user's."""
    try:
        if path.lstat().st_uid == os.getuid():
            path.unlink()
    except OSError:
        pass


def tracer_dumps(pids: list[int] | None) -> dict[int, int]:
    """{pid: state dumps made} of the processes among `pids` (every one if None) that run
    one of roscope's tracers, from their answer files; a file left by a process that is gone
    (or by an older one with the same PID) is removed."""
    wanted = None if pids is None else set(pids)
    out = {}
    try:
        names = os.listdir(ACK_DIR)
    except OSError:
        return {}
    for fname in names:
        if not fname.startswith(ACK_PREFIX) or not fname[len(ACK_PREFIX):].isdigit():
            continue
        pid = int(fname[len(ACK_PREFIX):])
        path = ACK_DIR / fname
        st = stat(pid)
        if st is None:   # its process is gone
            _remove_stale(path)
            continue
        # Anyone can plant a file here: only a small regular file of the process's own user,
        # never through a link, never blocking (roscope.files.read_shared).
        data = read_shared(path, ACK_LIMIT, _owner(pid))
        try:
            fields = data.split() if data is not None else []
            ticks, dumps = int(fields[0]), int(fields[1])
        except (ValueError, IndexError):
            continue  # being written, or not ours to read
        if st.start_ticks != ticks:   # left by an older process with the same PID
            _remove_stale(path)
            continue
        if wanted is None or pid in wanted:
            out[pid] = dumps
    return out


def remove_stale_answers() -> None:
    """Removes the answer files of processes that are gone (`tracer_dumps` does it on its
    way through them)."""
    tracer_dumps([])


def request_state_dump(name: str, pids: list[int] | None = None, stop=None) -> list:
    """Asks the processes that already run for their objects: turns roscope_attach:request on
    in session `name` until every process among `pids` (every one if None) that runs one of
    roscope's tracers has made one more state dump, then off again (so that the next session
    that asks turns it on anew). Returns [(pid, Stat)] of those that made none in time."""
    before = tracer_dumps(pids)
    lttng("enable-event", "--userspace", STATE_DUMP_REQUEST, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
    start = time.monotonic()
    waiting = dict(before)
    try:
        while time.monotonic() - start < STATE_DUMP_WAIT_S and not (stop and stop()):
            time.sleep(0.05)
        while waiting and time.monotonic() - start < STATE_DUMP_LIMIT_S and not (stop and stop()):
            now = tracer_dumps(list(waiting))
            waiting = {p: n for p, n in waiting.items() if p in now and now[p] <= n}
            if waiting:
                time.sleep(0.05)
    finally:
        lttng("disable-event", "--userspace", STATE_DUMP_REQUEST, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
    late = [(p, stat(p)) for p in sorted(waiting)]
    return [(p, st) for p, st in late if st is not None]


def process_tree(pids: list[int]) -> list[int]:
    """The given processes and their descendants that run now (sorted); a RecordError
    if one of the given ones does not run."""
    stats = live_stats()
    missing = [p for p in pids if p not in stats]
    if missing:
        raise RecordError(f"--pid: no running process {', '.join(str(p) for p in missing)}")
    children: dict[int, list[int]] = {}
    for st in stats.values():
        children.setdefault(st.ppid, []).append(st.pid)
    out, todo = set(), list(pids)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(children.get(p, []))
    return sorted(out)


def destroy_session(name: str) -> list[str]:
    """'lttng stop' and 'lttng destroy'; returns what failed (nothing raised). The tracers'
    answer files of processes that are gone are removed on the way."""
    problems = []
    for args in (("stop", name), ("destroy", name)):
        p = lttng(*args, check=False)
        if p.returncode != 0 and not (args[0] == "stop" and "already stopped" in p.stderr):
            # (a session killed before its 'lttng start' was never started: nothing to stop)
            problems.append(f"lttng {' '.join(args)}: {p.stderr.strip()}")
    remove_stale_answers()
    return problems


def lttng_version() -> str:
    p = lttng("--version", check=False)
    return p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"


_COUNT_SCRIPT = r"""
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


def count_discarded(trace_dir: Path) -> dict:
    """Count events and discarded events of an LTTng trace with babeltrace2's Python bindings.

    Runs in /usr/bin/python3 when bt2 is not importable here. Returns
    {"events": N, "discarded_events": D, "packets_lost": P} or {"error": "..."}.
    """
    if not any(trace_dir.rglob("metadata")):
        return {"events": 0, "discarded_events": 0, "packets_lost": 0, "note": "no trace data was written"}
    for py in (sys.executable, "/usr/bin/python3"):
        if not py or not os.path.exists(py):
            continue
        p = group.output("babeltrace2-count", [py, "-c", _COUNT_SCRIPT, str(trace_dir)])
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
