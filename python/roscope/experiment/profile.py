"""`roscope experiment run --profile`: `perf record -g` of the system's processes while the
driver runs, and a flame graph made by a maintained tool: inferno (`cargo install inferno`:
inferno-collapse-perf, inferno-flamegraph) or Brendan Gregg's FlameGraph scripts
(stackcollapse-perf.pl, flamegraph.pl), whichever is on PATH."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from roscope.errors import UserError
from roscope.experiment import output
from roscope.processes import group
from roscope.processes.identity import CLK_TCK

PROFILE_DIR = "profile"
TOOLS = (("inferno-collapse-perf", "inferno-flamegraph"), ("stackcollapse-perf.pl", "flamegraph.pl"))


def check() -> None:
    if shutil.which("perf") is None:
        raise UserError("--profile needs the 'perf' command (Debian package linux-perf)")


def start(system: group.Started, tdir: Path) -> group.Started | None:
    """Into tdir/profile/ (a perf.data beside the trial's trace would be read as its kernel data)."""
    tdir = tdir / PROFILE_DIR
    tdir.mkdir(exist_ok=True)
    # perf on the system's processes that have lived for at least 0.25 s (perf refuses the whole list
    # when one of them ends before it attaches, e.g. a shell loop's `sleep`); tried again with a fresh
    # list, up to 5 times.
    for _ in range(5):
        with open("/proc/uptime") as f:
            now_ticks = float(f.read().split()[0]) * CLK_TCK
        members = system.members()
        pids = [str(p.pid) for p in members if now_ticks - p.start_ticks >= 0.25 * CLK_TCK] or \
            [str(p.pid) for p in members]
        if not pids:
            return None
        perf = group.start("perf", ["perf", "record", "-g", "-F", "499", "-o", str(tdir / "perf.data"), "-p", ",".join(pids)],
                           log=tdir / "perf.log")
        time.sleep(0.3)
        if perf.alive():
            return perf
        group.stop(perf, 1.0)
    return perf


def finish(perf: group.Started | None, tdir: Path) -> dict:
    """Stops perf (SIGINT: it writes its data) and makes tdir/profile/flame.svg when a tool is there."""
    tdir = tdir / PROFILE_DIR
    if perf is None:
        return {"perf_data": None, "note": "no process of the system to profile"}
    group.stop(perf, 10.0)
    data = tdir / "perf.data"
    res: dict = {"perf_data": f"{PROFILE_DIR}/{data.name}" if data.exists() else None, "flamegraph": None}
    tools = next(((c, f) for c, f in TOOLS if shutil.which(c) and shutil.which(f)), None)
    if res["perf_data"] is None:
        res["note"] = "perf wrote no data (see perf.log)"
        return res
    if tools is None:
        res["note"] = "no flame graph tool on PATH: 'cargo install inferno' (or FlameGraph's scripts), then: " \
                      "perf script -i perf.data | inferno-collapse-perf | inferno-flamegraph > flame.svg"
        return res
    script = group.output("perf-script", ["perf", "script", "-i", str(data)], timeout=300, text=False)
    folded = group.output("flamegraph", [tools[0]], timeout=300, input=script.stdout, text=False)
    svg = group.output("flamegraph", [tools[1], "--title", f"roscope experiment: {tdir.name}"], timeout=300,
                       input=folded.stdout, text=False)
    if svg.returncode != 0 or not svg.stdout:
        res["note"] = f"{tools[1]} failed: {svg.stderr.decode(errors='replace')[:300]}"
        return res
    output.atomic_write(tdir / "flame.svg", svg.stdout)
    res.update(flamegraph=f"{PROFILE_DIR}/flame.svg", tool=tools[1], stacks=len(folded.stdout.splitlines()))
    return res
