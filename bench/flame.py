#!/usr/bin/env python3
"""Where a command's time goes (issue 42): `perf record` with DWARF call stacks over several
runs of the command, folded by `inferno-collapse-perf`, drawn by `inferno-flamegraph`, and
summarised as text: the share of samples per top-level phase (the frames named by `--phase`,
inclusive) and the functions with the most samples of their own.

    .venv/bin/python bench/flame.py --name info [--runs 5] [--label before] -- CMD [ARG ...]

Writes bench/results/flame-NAME-LABEL.svg and .folded and prints the summary. Needs `perf`
(linux-perf) and inferno (`cargo install inferno`). Python frames show as the interpreter's
C functions (Python 3.11 has no perf trampoline): the Python side is one block, the core's
Rust frames are named. `--phase` takes a substring of a frame's name, repeatable; the default
phases are the ones of `roscope info` and `roscope load`.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(BENCH, "results")
PHASES = [
    "roscope_ctf::stream", "roscope_ctf::reader", "roscope_ctf::summary", "roscope_model::builder",
    "roscope_model::", "roscope_flow::", "roscope_py::", "duckdb::", "_PyEval_EvalFrameDefault", "_dl_",
    "do_syscall_64", "asm_exc_page_fault",
]


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(os.path.expanduser(f"~/.cargo/bin/{name}"))
    if not found:
        raise SystemExit(f"flame: {name} not found (perf: apt install linux-perf; inferno: cargo install inferno)")
    return found


def record(cmd: list[str], runs: int, tmp: str, freq: int) -> str:
    """Folded stacks of `runs` runs of cmd (one perf.data per run, folded together)."""
    perf, collapse = tool("perf"), tool("inferno-collapse-perf")
    folded = []
    for i in range(runs):
        data = os.path.join(tmp, f"perf-{i}.data")
        subprocess.run([perf, "record", "-q", "-F", str(freq), "--call-graph", "dwarf,32768", "-o", data, "--", *cmd],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = subprocess.run([perf, "script", "-i", data], check=True, capture_output=True)
        out = subprocess.run([collapse], input=script.stdout, check=True, capture_output=True)
        folded.append(out.stdout.decode("utf-8", "replace"))
    return "".join(folded)


def summary(folded: str, phases: list[str], top: int) -> str:
    total = 0
    incl: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        total += count
        frames = stack.split(";")
        own[frames[-1]] += count
        # the innermost frame that names a phase claims the sample
        incl[next((p for f in reversed(frames) for p in phases if p in f), "(other)")] += count
    lines = [f"{total} (perf sample weight)", "phase (the innermost frame naming one of --phase claims a sample):"]
    for phase, n in incl.most_common():
        lines.append(f"  {100 * n / total:5.1f} %  {phase}")
    lines.append(f"top {top} functions by own samples:")
    for fn, n in own.most_common(top):
        lines.append(f"  {100 * n / total:5.1f} %  {fn[:110]}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", help="a short name: the files are flame-NAME-LABEL.* (required when recording)")
    ap.add_argument("--label", default="now")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--freq", type=int, default=4999, help="samples per second (perf -F)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--phase", action="append", help="a frame-name substring; repeatable (default: roscope's)")
    ap.add_argument("--folded", help="summarise this .folded file of an earlier run; record nothing")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if a.folded:
        with open(a.folded) as f:
            print(summary(f.read(), a.phase or PHASES, a.top))
        return 0
    if not cmd or not a.name:
        ap.error("give --name and the command after --")
    if not 1 <= a.runs <= 100:
        ap.error("--runs must be 1..100")
    if not 100 <= a.freq <= 50000:
        ap.error("--freq must be 100..50000")
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, f"flame-{a.name}-{a.label}")
    with tempfile.TemporaryDirectory(prefix="roscope-flame-") as tmp:
        folded = record(cmd, a.runs, tmp, a.freq)
    with open(base + ".folded", "w") as f:
        f.write(folded)
    with open(base + ".svg", "wb") as f:
        subprocess.run([tool("inferno-flamegraph"), "--title", f"{a.name} ({a.label}): {' '.join(cmd)[:80]}"],
                       input=folded.encode(), stdout=f, check=True)
    print(f"{base}.svg")
    print(summary(folded, a.phase or PHASES, a.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
