#!/usr/bin/env python3
"""Build the empty stand-ins for the LTTng-UST libraries bundled in ROS 2 wheels, and write
build-info.json (part of instrument/ros2/Makefile's build; docs/ros2-pypi.md).

The wheels' librcl, rmw and tracetools libraries list a bundled ``liblttng-ust-<hash>.so.0.0.0``
as needed (auditwheel renames it). Preloaded, roscope's libtracetools.so replaces the wheel's;
an empty library with the bundled one's name as its soname keeps the old LTTng-UST (which
cannot reach an LTTng 2.13 session daemon) out of the process.

usage: standins.py ROS2_ENV OUT_DIR CC
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

BUNDLED = re.compile(r"^liblttng-ust-[0-9a-f]{6,}\.so(\.\d+)*$")


def sources_sha256(here: Path) -> str:
    """A hash of the tracer's sources (python/roscope/ros2_pip.py computes the same, to tell
    a build of other sources, e.g. another checkout's, from its own)."""
    h = hashlib.sha256()
    files = sorted((here / "src").glob("*")) + [here / "gen_tracetools.py",
                                               here.parent / "include" / "roscope" / "roscope_attach_tp.h"]
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def needed(lib: Path) -> list[str]:
    p = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", p.stdout)


def main(argv: list[str]) -> int:
    env, out, cc = Path(argv[1]), Path(argv[2]), argv[3] or "gcc"
    libs = sorted((env / "lib").glob("*.so"))
    names: dict[str, list[str]] = {}
    for lib in libs:
        for n in needed(lib):
            if BUNDLED.match(n):
                names.setdefault(n, []).append(lib.name)
    if not names:
        print(f"standins: no library of {env}/lib lists a bundled liblttng-ust-<hash>.so as needed", file=sys.stderr)
    empty = out / "standin.c"
    empty.write_text("/* An empty stand-in for a bundled LTTng-UST library (instrument/ros2/standins.py). */\n"
                     "int roscope_ros2_standin;\n")
    for n in sorted(names):
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(out / n), str(empty), f"-Wl,-soname,{n}"], check=True)
    headers = env / "include" / "tracetools" / "tracetools"
    version = re.search(r'TRACETOOLS_VERSION_STR\s+"([^"]+)"', (headers / "version.h").read_text())
    lttng = subprocess.run(["pkg-config", "--modversion", "lttng-ust"], capture_output=True, text=True).stdout.strip()
    info = {
        "format": "roscope-ros2-tracer",
        "env": str(env.resolve()),
        "tracetools_version": version.group(1) if version else None,
        "tp_call_sha256": hashlib.sha256((headers / "tp_call.h").read_bytes()).hexdigest(),
        "sources_sha256": sources_sha256(Path(__file__).resolve().parent),
        "lttng_ust": lttng or None,
        "library": "libtracetools.so",
        "rclpy_fast": next((p.name for p in sorted(out.glob("_roscope_rclpy_fast*.so"))), None),
        "standins": {n: sorted(v) for n, v in sorted(names.items())},
        "tracepoints": (out / "tracepoints.txt").read_text().split(),
    }
    (out / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(f"standins: {out}/libtracetools.so ({len(info['tracepoints'])} tracepoints of tracetools "
          f"{info['tracetools_version']}), stand-ins: {', '.join(sorted(names)) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
