"""`roscope doctor`: what recording needs, checked and explained on one screen (issue 41).

Each check gives a status (ok, warn: only some recordings are affected, FAIL: recording will
not work), what it found, and for a problem the command that fixes it. Exit status 0 when
nothing FAILs: `roscope record` will work. Nothing is changed unless asked: --start-daemon
starts LTTng's session daemon if none answers, --build builds the tracers into the user's
cache now (else `roscope record` builds what it needs on first use)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from pathlib import Path

from roscope.commands import _common as C

#: Free space below which recording FAILs / is warned about (a 10 s recording of the example
#: system takes a few MB; a long one with --kernel, hundreds).
DISK_FAIL = 100 << 20
DISK_WARN = 1 << 30
LIB_DIRS = ("/lib/*-linux-gnu", "/usr/lib/*-linux-gnu", "/usr/lib", "/usr/local/lib", "/lib64", "/usr/lib64")


def register(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="check what recording needs (LTTng, its session daemon, perf, the ROS found, the tracers, disk space)",
        description="Checks what `roscope record` needs on this machine and says, for each problem, the command that "
        "fixes it: LTTng's tools and session daemon, LTTng-UST, perf and its permissions (for --kernel), the ROS "
        "found in the environment (distro, client libraries, whether its tracer reaches this LTTng), roscope's "
        "tracers (built, or buildable on first use) and disk space. Exit status 0 when recording will work, 1 when "
        "something it needs is missing.",
    )
    p.add_argument("--start-daemon", action="store_true",
                   help="start LTTng's session daemon (lttng-sessiond --daemonize, user space only) if none answers")
    p.add_argument("--build", action="store_true",
                   help="build the tracers the ROS found needs into the user's cache now (else `roscope record` "
                        "builds them on first use)")
    p.add_argument("--ros2", metavar="ENV",
                   help="also check a ROS 2 installed from PyPI: a Python environment's path or a distro name "
                        "(default: the active virtual environment's, if it is one)")
    p.add_argument("-o", "--output", metavar="DIR", type=C.input_path,
                   help="where recordings will be written, for the disk-space check (default: the current directory)")
    C.add_json(p)
    p.set_defaults(func=run)


class Report:
    def __init__(self) -> None:
        self.checks: list[dict] = []

    def add(self, status: str, what: str, found: str, fix: str | None = None) -> None:
        self.checks.append({"check": what, "status": status, "found": found, "fix": fix})

    @property
    def ok(self) -> bool:
        return not any(c["status"] == "FAIL" for c in self.checks)


def _run(name: str, argv: list[str], timeout: float = 20):
    from roscope.processes import group
    try:
        return group.output(name, argv, timeout=timeout)
    except OSError:
        return None


def _libs(pattern: str) -> list[str]:
    seen: dict[str, str] = {}
    for d in LIB_DIRS:
        for p in sorted(glob.glob(os.path.join(d, pattern))):
            seen.setdefault(os.path.realpath(p), p)   # /lib and /usr/lib are one directory on a merged /usr
    return sorted(set(seen.values()))


def check_lttng(r: Report, start: bool) -> bool:
    """LTTng's tools, the session daemon (started with `start`), LTTng-UST. Whether a daemon answers."""
    if shutil.which("lttng") is None:
        r.add("FAIL", "LTTng tools", "no 'lttng' command on PATH", "apt install lttng-tools")
        return False
    p = _run("lttng", ["lttng", "--version"])
    r.add("ok", "LTTng tools", (p.stdout.strip() if p and p.returncode == 0 else "lttng (version unknown)") + f" ({shutil.which('lttng')})")
    answers = lambda: (lambda q: q is not None and q.returncode == 0)(_run("lttng", ["lttng", "list"]))  # noqa: E731
    up = answers()
    if not up and start and shutil.which("lttng-sessiond"):
        started = _run("lttng-sessiond", ["lttng-sessiond", "--daemonize", "--no-kernel"], timeout=30)
        up = answers()
        if up:
            r.add("ok", "LTTng session daemon", "started now (lttng-sessiond --daemonize --no-kernel)")
        elif started is not None:
            r.add("FAIL", "LTTng session daemon", "lttng-sessiond --daemonize --no-kernel did not start one: "
                  + (started.stderr.strip().splitlines() or ["no message"])[-1])
    elif up:
        from roscope.ros2_pip import daemon_abi
        abi = daemon_abi()
        r.add("ok", "LTTng session daemon", "answers" + (f" (user-space ABI {abi}: lttng-ust-sock-{abi})" if abi else ""))
    if not up and not start:
        r.add("FAIL", "LTTng session daemon", "none answers ('lttng list' fails)",
              "lttng-sessiond --daemonize --no-kernel   (or: roscope doctor --start-daemon)")
    ust = _libs("liblttng-ust.so.*")
    if not ust:
        r.add("FAIL", "LTTng-UST", "no liblttng-ust.so found", "apt install liblttng-ust1 liblttng-ust-dev")
    else:
        p = _run("pkg-config", ["pkg-config", "--modversion", "lttng-ust"]) if shutil.which("pkg-config") else None
        version = p.stdout.strip() if p is not None and p.returncode == 0 else None
        majors = sorted({m.group(1) for u in ust for m in [re.search(r"\.so\.(\d+)", u)] if m})
        era = "2.13 or newer" if "1" in majors else "2.12 or older"
        r.add("ok", "LTTng-UST", (f"{version} " if version else f"{era} ") + f"({', '.join(os.path.basename(u) for u in ust)})")
    return up


def check_babeltrace(r: Report) -> None:
    """babeltrace2's Python bindings, with which a recording counts its lost events (in this
    Python, else Debian's /usr/bin/python3: roscope.record.lttng.count_discarded)."""
    for py in dict.fromkeys((sys.executable, "/usr/bin/python3")):
        p = _run("bt2", [py, "-c", "import bt2"]) if os.path.exists(py) else None
        if p is not None and p.returncode == 0:
            r.add("ok", "babeltrace2 (bt2)", f"importable by {py}: recordings count their lost events")
            return
    r.add("warn", "babeltrace2 (bt2)", "babeltrace2's Python bindings are not importable: recordings will not count "
          "their lost events", "apt install python3-bt2")


def check_perf(r: Report) -> None:
    """perf and the permission `roscope record --kernel` needs (system-wide sched events)."""
    if shutil.which("perf") is None:
        r.add("warn", "perf (--kernel only)", "no 'perf' command on PATH", "apt install linux-perf")
        return
    p = _run("perf", ["perf", "--version"])
    version = p.stdout.strip() if p is not None and p.returncode == 0 else None
    if version is None:
        r.add("warn", "perf (--kernel only)", "'perf --version' fails: no perf for this kernel",
              "apt install linux-perf (the one matching `uname -r`)")
        return
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        paranoid = None
    if os.geteuid() == 0 or (paranoid is not None and paranoid <= -1):
        r.add("ok", "perf (--kernel only)", f"{version}; perf_event_paranoid={paranoid}"
              + (" (root: system-wide events allowed)" if os.geteuid() == 0 else ""))
    else:
        r.add("warn", "perf (--kernel only)", f"{version}; perf_event_paranoid={paranoid}: system-wide sched events "
              "need -1 (or root)", "sudo sysctl kernel.perf_event_paranoid=-1")


def _lttng_of(lib: Path) -> str | None:
    """Which LTTng-UST a tracer library links: 'system' (liblttng-ust.so.1), 'old' (.so.0) or
    'bundled' (a liblttng-ust-<hash> of a wheel); None if it names none."""
    try:
        with open(lib.resolve(), "rb") as f:
            data = f.read(4 << 20)
    except OSError:
        return None
    if b"liblttng-ust.so.1" in data:
        return "system"
    if re.search(rb"liblttng-ust-[0-9a-f]{6,}", data):
        return "bundled"
    if b"liblttng-ust.so.0" in data:
        return "old"
    return None


def check_ros(r: Report, ros2_name: str | None, build: bool) -> None:
    """The ROS found and roscope's tracers for it."""
    from roscope.record.tracer import TracerError, build_ros1_tracer, find_tracer, missing_build_tools, ros1_include
    from roscope.ros2_pip import Ros2Error, built_tracer, env_of_command, named_env, tracer_for
    found = False
    # ROS 1 (a sourced one, or Debian's ros-core)
    inc = ros1_include()
    roscpp = _libs("libroscpp.so*") + sorted(glob.glob("/opt/ros/*/lib/libroscpp.so"))
    rospy = sorted(glob.glob("/usr/lib/python3/dist-packages/rospy")) + sorted(glob.glob("/opt/ros/*/lib/python3/dist-packages/rospy"))
    if inc or roscpp or rospy or os.environ.get("ROS_VERSION") == "1":
        found = True
        distro = os.environ.get("ROS_DISTRO") if os.environ.get("ROS_VERSION") == "1" else None
        clients = ", ".join(n for n, have in (("roscpp", roscpp), ("rospy", rospy)) if have) or "no client library"
        r.add("ok", "ROS 1", f"{distro or 'ROS 1'}: {clients}; headers {inc or 'not found'}")
        try:
            lib = find_tracer(build=False)
            r.add("ok", "ROS 1 tracer", f"built: {lib}")
        except TracerError:
            missing = missing_build_tools(ros1=True)
            if missing:
                r.add("FAIL", "ROS 1 tracer", "not built, and cannot be: missing " + "; ".join(missing),
                      "apt install " + " ".join(sorted({m.split("apt install ")[1].split(",")[0].split(")")[0]
                                                        for m in missing if "apt install " in m})))
            elif build:
                try:
                    r.add("ok", "ROS 1 tracer", f"built now: {build_ros1_tracer()}")
                except TracerError as e:
                    r.add("FAIL", "ROS 1 tracer", str(e), "roscope doctor --build (after the fix above)")
            else:
                r.add("ok", "ROS 1 tracer", "not built yet; buildable (roscope record builds it on first use, ~20 s)",
                      "roscope doctor --build   (to build it now)")
    # ROS 2 from a distribution (ros2_tracing's tracepoints in its own libtracetools)
    prefixes = [Path(p) for p in (os.environ.get("AMENT_PREFIX_PATH") or "").split(":") if p]
    tools = [p / "lib" / "libtracetools.so" for p in prefixes if (p / "lib" / "libtracetools.so").is_file()]
    if prefixes:
        found = True
        distro = os.environ.get("ROS_DISTRO") or "ROS 2"
        clients = ", ".join(n for n, pat in (("rclcpp", "lib/librclcpp.so"), ("rclpy", "lib/python3*/site-packages/rclpy"))
                            if any(glob.glob(str(p / pat)) for p in prefixes)) or "no client library"
        if not tools:
            r.add("warn", "ROS 2", f"{distro}: {clients}; no libtracetools.so (ros2_tracing): nothing of ROS 2 is traced",
                  f"apt install ros-{os.environ.get('ROS_DISTRO', 'DISTRO')}-tracetools")
        else:
            how = _lttng_of(tools[0])
            if how in ("system", None):
                r.add("ok", "ROS 2", f"{distro}: {clients}; its tracer {tools[0]} uses this LTTng-UST (nothing of "
                      "roscope's is preloaded)")
            else:
                r.add("FAIL", "ROS 2", f"{distro}: its tracer {tools[0]} links a {how} LTTng-UST that this session "
                      "daemon does not hear", "build ros2_tracing against this LTTng (apt install liblttng-ust-dev) or "
                      "record with roscope's ROS 2 tracer: roscope record --ros2 ENV")
    # ROS 2 from PyPI (its libtracetools' bundled LTTng-UST cannot reach this daemon: roscope's tracer)
    try:
        env = named_env(ros2_name) if ros2_name else env_of_command([sys.executable])
    except Ros2Error as e:
        r.add("FAIL", "ROS 2 from PyPI", str(e))
        env = None
    if env is not None:
        found = True
        d = built_tracer(env)
        if d is not None:
            r.add("ok", "ROS 2 from PyPI", f"{env.describe()}; roscope's ROS 2 tracer built: {d}")
        elif missing_build_tools(ros1=False):
            r.add("FAIL", "ROS 2 from PyPI", f"{env.describe()}; roscope's ROS 2 tracer not built, and cannot be: missing "
                  + "; ".join(missing_build_tools(ros1=False)), "apt install build-essential liblttng-ust-dev python3-dev")
        elif build:
            try:
                r.add("ok", "ROS 2 from PyPI", f"{env.describe()}; roscope's ROS 2 tracer built now: {tracer_for(env)[0]}")
            except Ros2Error as e:
                r.add("FAIL", "ROS 2 from PyPI", str(e))
        else:
            r.add("ok", "ROS 2 from PyPI", f"{env.describe()}; roscope's ROS 2 tracer not built yet, buildable (on "
                  "first use, a few s)", "roscope doctor --build" + (f" --ros2 {ros2_name}" if ros2_name else ""))
    if not found:
        r.add("warn", "ROS", "no ROS 1 or ROS 2 found (none sourced, no ROS 1 installed, no ROS 2 environment active)",
              "source your ROS's setup.bash (or pass --ros2 ENV for a ROS 2 from PyPI)")


def check_disk(r: Report, output: str | None) -> None:
    from roscope.ros2_pip import cache_root
    places = [("recordings", Path(output or os.getcwd())), ("tracer builds", cache_root())]
    for what, place in places:
        probe = place
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            free = shutil.disk_usage(probe).free
        except OSError as e:
            r.add("warn", f"disk ({what})", f"{place}: {e.strerror or e}")
            continue
        status = "FAIL" if free < DISK_FAIL else "warn" if free < DISK_WARN else "ok"
        r.add(status, f"disk ({what})", f"{free / (1 << 30):.1f} GiB free at {probe}",
              None if status == "ok" else f"free space on {probe}, or record elsewhere (-o DIR)")


def run(args) -> int:
    r = Report()
    check_lttng(r, args.start_daemon)
    check_babeltrace(r)
    check_perf(r)
    check_ros(r, args.ros2, args.build)
    check_disk(r, args.output)
    result = {"ok": r.ok, "checks": r.checks}
    C.show(args, result, render_text)
    return 0 if r.ok else 1


def render_text(result: dict, out=None) -> None:
    w = C.TextOut(out or sys.stdout).write
    width = max(len(c["check"]) for c in result["checks"])
    for c in result["checks"]:
        w(f"{c['status']:<5} {c['check']:<{width}}  {c['found']}\n")
        if c.get("fix"):
            w(f"{'':<5} {'':<{width}}  fix: {c['fix']}\n")
    w("recording will work\n" if result["ok"] else "recording will NOT work: fix the FAIL lines above\n")
