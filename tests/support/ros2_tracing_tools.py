"""ros2_tracing's own tools (`lttngpy`, `tracetools_trace`, `tracetools_read`), built from the
unmodified archive in ../shared/third_party into the user's cache, never into the repository.

`lttngpy` (a pybind11 extension over liblttng-ctl) is built with its own CMakeLists.txt against
the system's liblttng-ctl (LTTng 2.13: Debian's liblttng-ctl-dev) and pybind11 (pybind11-dev),
ament_cmake from `.ros2/jazzy`, and an empty stand-in for `pybind11_vendor` (which only vendors
pybind11 where the system has none). `tracetools_trace` and `tracetools_read` are pure Python and
copied beside it as they are. The result, `${XDG_CACHE_HOME:-~/.cache}/roscope/ros2-tracing-tools-<hash>/`,
is keyed by the archive's, `build`'s own source's, liblttng-ctl's and the environment's Python's identity,
built in a temporary directory beside it and renamed into place whole.

    site = build()                        # the directory to put on PYTHONPATH, or why not (a str)
    ros2_trace(site, "start", NAME, "-p", BASE)   # what `ros2 trace start NAME -p BASE` runs
    ros2_trace(site, "stop", NAME)

`ros2 trace` itself (ros2trace) is a ros2cli command extension and no wheel serves ros2cli for
Jazzy, so `ros2_trace` calls what ros2trace's verbs call: `tracetools_trace.trace.start` / `stop`
with arguments parsed by `tracetools_trace.tools.args` (ros2trace/verb/start.py, stop.py).
`tracetools_read` imports babeltrace 1's Python bindings (Debian's python3-babeltrace), which only
the system's Python has: `read_events` runs it there.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tests.support.ros2_tracing_nodes import ARCHIVE, ENV, REPO, unpack  # noqa: F401  (REPO: for the importers of this module)

PY = ENV / "bin" / "python"
#: The pure-Python packages of the archive copied as they are.
PACKAGES = ("tracetools_trace", "tracetools_read")
STAMP = "roscope-ros2-tracing-tools.json"


def _lttng_ctl_version() -> str | None:
    p = subprocess.run(["pkg-config", "--modversion", "lttng-ctl"], capture_output=True, text=True) if shutil.which("pkg-config") else None
    return p.stdout.strip() if p and p.returncode == 0 else None


def _python_id() -> str:
    p = subprocess.run([str(PY), "-c", "import sys; print(sys.version)"], capture_output=True, text=True)
    return p.stdout.strip()


def build() -> Path | str:
    """The site directory holding lttngpy, tracetools_trace and tracetools_read, built now if need
    be (about 15 s); a str saying why it cannot be instead."""
    if not ARCHIVE.is_file():
        return f"ros2_tracing's archive is not here ({ARCHIVE}): ../shared/third_party is absent"
    if not PY.exists():
        return f"ROS 2 jazzy from PyPI is not installed in {ENV} (make setup)"
    ctl = _lttng_ctl_version()
    if ctl is None:
        return "liblttng-ctl's development files are not installed (liblttng-ctl-dev: make setup)"
    if not Path("/usr/include/pybind11/pybind11.h").is_file():
        return "pybind11 is not installed (pybind11-dev: make setup)"
    h = hashlib.sha256()
    h.update(hashlib.sha256(ARCHIVE.read_bytes()).digest())
    h.update(inspect.getsource(build).encode())   # the recipe below, not the rest of this file
    h.update(f"{ctl}\n{_python_id()}\n{ENV}".encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roscope"
    out = cache / f"ros2-tracing-tools-{h.hexdigest()[:16]}"
    if (out / STAMP).is_file():
        return out / "site"
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".ros2-tracing-tools-", dir=cache))
    try:
        bad = unpack(ARCHIVE, work / "src")   # (tests/support/ros2_tracing_nodes.py: one check of the archive)
        if bad:
            return bad
        src = next((work / "src").glob("*/lttngpy")).parent
        stub = work / "stub" / "pybind11_vendor"
        stub.mkdir(parents=True)
        (stub / "pybind11_vendorConfig.cmake").write_text(
            "# stand-in: pybind11_vendor only vendors pybind11 where the system has none (pybind11-dev)\n")
        inst = work / "install"
        env = dict(os.environ, PATH=f"{ENV / 'bin'}:{os.environ.get('PATH', '')}", AMENT_PREFIX_PATH=str(ENV))
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        for argv in (["cmake", *gen, "-S", str(src / "lttngpy"), "-B", str(work / "build"), "-DCMAKE_BUILD_TYPE=Release",
                      "-DBUILD_TESTING=OFF", f"-DCMAKE_PREFIX_PATH={ENV}", f"-Dpybind11_vendor_DIR={stub}",
                      f"-DPython3_EXECUTABLE={PY}", f"-DCMAKE_INSTALL_PREFIX={inst}"],
                     ["cmake", "--build", str(work / "build"), "-j", str(os.cpu_count() or 2)],
                     ["cmake", "--install", str(work / "build")]):
            p = subprocess.run(argv, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{' '.join(argv[:2])} of ros2_tracing's lttngpy failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        staged = work / "out"
        site = staged / "site"
        shutil.copytree(next(inst.glob("lib/python3*/site-packages/lttngpy")), site / "lttngpy")
        for pkg in PACKAGES:
            shutil.copytree(src / pkg / pkg, site / pkg)
        (staged / STAMP).write_text(json.dumps({"archive": str(ARCHIVE), "lttng_ctl": ctl, "env": str(ENV)}) + "\n")
        try:
            os.rename(staged, out)   # whole or not at all
        except OSError:
            if not (out / STAMP).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out / "site"


_VERB = """
import argparse, sys
from tracetools_trace.tools import args
from tracetools_trace import trace
verb = sys.argv[1]
parser = argparse.ArgumentParser(prog='ros2 trace ' + verb)
(args.add_arguments_noninteractive if verb == 'start' else args.add_arguments_session_name)(parser)
sys.exit(getattr(trace, verb)(parser.parse_args(sys.argv[2:])))
"""


def ros2_trace(site: Path, verb: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`ros2 trace VERB ARGV...` (start, stop, pause, resume), as ros2trace's verb runs it."""
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([str(PY), "-c", _VERB, verb, *argv], env=env, capture_output=True, text=True, timeout=timeout)


_READ = """
import collections, json, sys
from tracetools_read.trace import get_trace_ctf_events, event_to_dict, is_trace_directory
assert is_trace_directory(sys.argv[1]), sys.argv[1]
pids = set(json.loads(sys.argv[2]))
fields, counts, providers = {}, collections.Counter(), set()
for ev in get_trace_ctf_events(sys.argv[1]):
    if ev['vpid'] not in pids:
        continue
    counts[ev.name] += 1
    if ev.name not in fields:  # event_to_dict is slow (babeltrace 1 lists every scope's keys): once a name
        d = event_to_dict(ev)
        fields[d['_name']] = sorted(k for k in d if not k.startswith('_'))
        if not d['_name'].startswith('ros2:'):
            providers.add(d['_name'].split(':')[0])
print(json.dumps({'counts': counts, 'fields': fields, 'other_providers': sorted(providers)}))
"""


def read_events(site: Path, trace: Path, pids: list[int]) -> dict | str:
    """The events of these processes (their `vpid`) in a trace read with tracetools_read's
    `get_trace_ctf_events` / `event_to_dict`: each name's count and fields (the dict's keys:
    payload and context), and the providers other than ros2; a str saying why it cannot be read."""
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import babeltrace"], capture_output=True).returncode != 0:
        return "babeltrace 1's Python bindings are not installed (python3-babeltrace: make setup)"
    p = subprocess.run([py, "-c", _READ, str(trace), json.dumps(list(pids))], env=dict(os.environ, PYTHONPATH=str(site)),
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"tracetools_read failed on {trace}:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout)
    out["other_providers"] = set(out["other_providers"])
    return out


def declared_events() -> dict | str:
    """ros2_tracing's own declaration of its events (the archive's tracetools/include/tracetools/
    tp_call.h, read from the archive): {"ros2:NAME": [(field, kind), ...]} in payload order, kind
    one of string, unsigned, signed, static_array, dynamic_array; a str saying why not."""
    import re
    if not ARCHIVE.is_file():
        return f"ros2_tracing's archive is not here ({ARCHIVE}): ../shared/third_party is absent"
    with tarfile.open(ARCHIVE) as t:
        m = next((m for m in t.getmembers() if m.name.endswith("tracetools/include/tracetools/tp_call.h")), None)
        if m is None:
            return f"{ARCHIVE} has no tracetools/include/tracetools/tp_call.h"
        text = t.extractfile(m).read().decode()
    out = {}
    for chunk in text.split("TRACEPOINT_EVENT(")[1:]:
        head = re.match(r"\s*TRACEPOINT_PROVIDER,\s*(\w+),", chunk)
        if head is None:
            continue
        name, fields = head.group(1), chunk.split("TP_FIELDS(", 1)[1] if "TP_FIELDS(" in chunk else ""
        decl = []
        for macro, args in re.findall(r"(ctf_\w+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)", fields):
            a = [x.strip() for x in args.split(",")]
            if macro == "ctf_string":
                decl.append((a[0], "string"))
            elif macro in ("ctf_integer", "ctf_integer_hex"):
                unsigned = any(w in a[0] for w in ("void *", "uint", "size_t", "unsigned"))
                decl.append((a[1], "unsigned" if unsigned else "signed"))
            elif macro == "ctf_array":
                decl.append((a[1], "static_array"))
            elif macro == "ctf_sequence":
                decl.append((a[1], "dynamic_array"))
            else:
                decl.append((a[1] if len(a) > 1 else a[0], macro))
        out[f"ros2:{name}"] = decl
    return out


if __name__ == "__main__":
    # `python3 -m tests.support.ros2_tracing_tools` (from the checkout): build (if need be) and print the site directory;
    # `... start NAME -p DIR` / `... stop NAME` (pause, resume): what `ros2 trace VERB ...` runs.
    site = build()
    if isinstance(site, str):
        sys.exit(f"ros2_tracing_tools: {site}")
    if len(sys.argv) < 2:
        print(site)
        sys.exit(0)
    p = ros2_trace(site, *sys.argv[1:])
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    sys.exit(p.returncode)
