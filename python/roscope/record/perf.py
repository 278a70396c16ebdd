"""The kernel's scheduling events of a recording (``--kernel``): ``perf record -k mono``
of sched_switch and sched_wakeup into DIR/perf/perf.data, started, stopped, and
found again by identity after its roscope was killed."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from roscope.processes import group, signals
from roscope.processes.identity import boot_id, stat
from roscope.record.options import RecordError

PERF_EVENTS = ["sched:sched_switch", "sched:sched_wakeup"]


def perf_command(out: Path) -> list[str]:
    cmd = ["perf", "record", "-k", "mono", "-a", "-o", str(out / "perf" / "perf.data")]
    for e in PERF_EVENTS:
        cmd += ["-e", e]
    return cmd


def is_perf_of(out: Path):
    """A predicate over argv: the perf recording into `out`."""
    data = str(out / "perf" / "perf.data")
    return lambda argv: bool(argv) and os.path.basename(argv[0]) == "perf" and "record" in argv and data in argv


def start_perf(out: Path) -> tuple[group.Started, dict]:
    """Starts perf (its own session, tracked) into out/perf/; returns it and its manifest entry."""
    (out / "perf").mkdir()
    cmd = perf_command(out)
    p = group.start("perf", cmd, log=out / "perf" / "perf-record.log")
    entry = {"tool": "perf", "command": cmd, "file": "perf/perf.data", "events": PERF_EVENTS,
             "clock": "monotonic", "pid": p.pid, "process": p.ident}
    return p, entry


def check_started(p: group.Started, out: Path) -> None:
    """perf is still running half a second after its start (else a RecordError with its log's end)."""
    time.sleep(0.5)
    if p.popen.poll() is not None:
        text = (out / "perf" / "perf-record.log").read_text(errors="replace").strip().splitlines()
        raise RecordError(f"perf record failed to start (exit {p.popen.returncode}): "
                          f"{' / '.join(text[-3:]) if text else 'no output'}")


def perf_ok(out: Path) -> bool:
    """perf wrote its file completely (it re-raises SIGINT after writing, so its status is -2)."""
    log = out / "perf" / "perf-record.log"
    data = out / "perf" / "perf.data"
    try:
        return data.stat().st_size > 0 and "Captured and wrote" in log.read_text()
    except OSError:
        return False


def stop_perf(p: group.Started, out: Path) -> dict:
    """SIGINT (perf then writes its file), up to 30 s, then SIGTERM and SIGKILL."""
    group.stop(p, 30.0)
    ok = perf_ok(out)
    if not ok:
        print(f"roscope: WARNING: perf did not finish writing {out / 'perf' / 'perf.data'} "
              f"(see {out / 'perf' / 'perf-record.log'})", file=sys.stderr)
    return {"perf_exit_status": p.popen.returncode, "perf_ok": ok}


def stop_perf_by_pid(ident: dict | None, out: Path) -> str | None:
    """Stops the perf a recording started, by its recorded identity (never another process).
    Returns what was done, or None when that perf no longer runs."""
    return signals.stop_recorded(ident, is_perf_of(out), signal.SIGINT, "perf", 30.0)


def perf_identity(state: dict, manifest: dict) -> dict | None:
    """The perf of a recording: from its state file, else its manifest."""
    ident = state.get("perf") or ((manifest.get("kernel") or {}).get("process"))
    if ident is None and state.get("perf_pid"):  # a state file of an older version: no start time
        st = stat(state["perf_pid"])
        ident = {"pid": state["perf_pid"], "start_ticks": st.start_ticks if st else None, "boot_id": boot_id()}
    return ident
