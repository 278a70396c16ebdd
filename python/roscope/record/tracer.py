"""The tracer libraries a recorded command gets preloaded: roscope's ROS 1 tracer
(``libroscope_ros1.so``, LD_PRELOAD) and its rospy import hook (PYTHONPATH); for a ROS 2
installed from PyPI, roscope's ROS 2 tracer and rclpy hook (roscope.ros2_pip)."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from roscope.files import atomic_write, exclusive, move_into, private_dir, read_shared, remove_private_dir
from roscope.processes import group
from roscope.record.options import RecordError
from roscope.ros2_pip import INSTRUMENT_ROOT, MAKE_SAFE, Ros2Recording, build_failure, cache_root, files_sha256, preloadable

TRACER_ENV = "ROSCOPE_ROS1_TRACER"
TRACER_NAME = "libroscope_ros1.so"
#: The ROS 1 tracer's sources (package data of an installed roscope, or the repository's).
ROS1_SRC = INSTRUMENT_ROOT / "ros1"
#: How long building the ROS 1 tracer may take (about 20 s on 2 cores).
BUILD_TIMEOUT_S = 300
BUILD_INFO = "build-info.json"
#: What building a tracer needs: (program or header, the Debian package that brings it).
BUILD_TOOLS = (("make", "make"), ("gcc", "gcc"), ("g++", "g++"))
#: LTTng-UST's header (Debian's multiarch include directory, or a plain one).
LTTNG_UST_HEADERS = ("/usr/include/*/lttng/tracepoint.h", "/usr/include/lttng/tracepoint.h", "/usr/local/include/lttng/tracepoint.h")


def lttng_ust_header() -> Path | None:
    """LTTng-UST's lttng/tracepoint.h (liblttng-ust-dev), which every tracer is built with."""
    for pattern in LTTNG_UST_HEADERS:
        for p in sorted(glob.glob(pattern)):
            return Path(p)
    return None


class TracerError(RecordError):
    """A tracer cannot be found or built; the message says what to install or run."""


def ros1_include() -> Path | None:
    """The include directory of the ROS 1 found (its ros/ros.h): a sourced ROS 1's
    ($ROS_ROOT, $CMAKE_PREFIX_PATH), else Debian's (libroscpp-dev) or /opt/ros/*'s."""
    cands = []
    for var in ("CMAKE_PREFIX_PATH", "ROS_ROOT"):
        for p in (os.environ.get(var) or "").split(":"):
            if p:
                cands += [Path(p) / "include", Path(p).parent.parent / "include"]
    cands += [Path("/usr/include")] + sorted(Path("/opt/ros").glob("*/include"))
    for d in cands:
        if (d / "ros" / "ros.h").is_file() and (d / "ros" / "publication.h").is_file():
            return d
    return None


def missing_build_tools(ros1: bool) -> list[str]:
    """What building the tracers needs and this machine lacks, each as
    'what (apt install PACKAGE)'; ROS 1's headers too with `ros1`."""
    out = [f"{prog} (apt install {pkg})" for prog, pkg in BUILD_TOOLS if shutil.which(prog) is None]
    if lttng_ust_header() is None:
        out.append("LTTng-UST's headers lttng/tracepoint.h (apt install liblttng-ust-dev)")
    if ros1 and ros1_include() is None:
        out.append("roscpp's headers ros/ros.h (apt install libroscpp-dev, or source a ROS 1's setup.bash)")
    return out


def ros1_sources_sha256() -> str:
    """A hash of the ROS 1 tracer's sources (its Makefile, src/, the shared headers)."""
    return files_sha256([ROS1_SRC / "Makefile", *sorted((ROS1_SRC / "src").glob("*")),
                         *sorted((INSTRUMENT_ROOT / "include" / "roscope").glob("*.h"))])


def ros1_cache_dir(include: Path | None = None) -> Path:
    """The user's cache of the ROS 1 tracer built from these sources against the ROS 1 found
    (its headers' directory and their ros/common.h, which holds the version)."""
    include = include or ros1_include()
    common = b""
    if include is not None:
        common = read_shared(include / "ros" / "common.h", 1 << 20) or b""
    key = ros1_sources_sha256() + "\0" + str(include) + "\0" + hashlib.sha256(common).hexdigest()
    return cache_root() / "ros1-tracer" / hashlib.sha256(key.encode()).hexdigest()[:16]


def _cached(d: Path) -> Path | None:
    """The library of a complete build in `d` (its build-info.json written last), else None."""
    raw = read_shared(d / BUILD_INFO, 1 << 16, uid=os.getuid())
    try:
        info = json.loads(raw) if raw else None
    except ValueError:
        info = None
    lib = d / TRACER_NAME
    if not isinstance(info, dict) or info.get("format") != "roscope-ros1-tracer" or not lib.is_file():
        return None
    return lib if (d / "libroscope_ros1_tp.so").is_file() else None


def build_ros1_tracer(out: Path | None = None) -> Path:
    """Builds the ROS 1 tracer from its sources into the user's cache (`out`, by default
    ros1_cache_dir()), in a private directory first; returns the library."""
    include = ros1_include()
    out = out or ros1_cache_dir(include)
    if not (ROS1_SRC / "Makefile").is_file():
        raise TracerError(f"the ROS 1 tracer's sources are not in this roscope ({ROS1_SRC}): reinstall roscope")
    missing = missing_build_tools(ros1=True)
    if missing:
        raise TracerError("building the ROS 1 tracer needs " + "; ".join(missing)
                          + " (or record without it: --no-preload)")
    if not preloadable(out):
        raise TracerError(f"the ROS 1 tracer would be built into {out}, a path ld.so cannot preload from "
                          "(it has a space or ':'): set XDG_CACHE_HOME to a path without them")
    if not all(MAKE_SAFE.fullmatch(str(x)) for x in (out, ROS1_SRC, include)):
        raise TracerError(f"the ROS 1 tracer's sources ({ROS1_SRC}), ROS 1's headers ({include}) or the cache ({out}) "
                          "have a path make cannot be given safely (letters, digits and / _ . + - only): "
                          "set XDG_CACHE_HOME to such a path")
    out.mkdir(parents=True, exist_ok=True)
    with exclusive(out.parent / f"{out.name}.lock"):   # one build at a time; another's may be done now
        return _cached(out) or _build_ros1(out, include)


def _build_ros1(out: Path, include: Path | None) -> Path:
    print(f"roscope: building the ROS 1 tracer into {out} (once per version of roscope and ROS 1)", file=sys.stderr)
    work = Path(private_dir(str(out.parent), ".build-"))
    try:
        p = group.output("make", ["make", "-s", "-C", str(ROS1_SRC), f"BUILD={work}", f"ROSINC={include}"],
                         timeout=BUILD_TIMEOUT_S)
        if p.returncode == 0:
            for f in list(work.glob("*.o")):
                f.unlink()
            atomic_write(work / BUILD_INFO, json.dumps({"format": "roscope-ros1-tracer", "sources_sha256": ros1_sources_sha256(),
                                                        "ros_include": str(include)}) + "\n")
            move_into(work, out)
    finally:
        remove_private_dir(str(work))
    lib = _cached(out)
    if lib is None:
        raise TracerError(f"building the ROS 1 tracer failed (make -C {ROS1_SRC} BUILD={out}): "
                          f"{build_failure(p, BUILD_TIMEOUT_S)}")
    return lib


def find_tracer(explicit: str | None = None, build: bool = True) -> Path:
    """Locate libroscope_ros1.so: explicit path, $ROSCOPE_ROS1_TRACER, the repository's build
    (make -C instrument/ros1), else the build in the user's cache, made now from the sources
    the package holds if need be (`build`)."""
    given = explicit or os.environ.get(TRACER_ENV)
    if given:
        if Path(given).is_file():
            return Path(given).resolve()
        how = "--tracer" if explicit else f"${TRACER_ENV}"
        raise TracerError(f"the ROS 1 tracer library {given} ({how}) was not found; leave it out to use "
                          "roscope's own (built on first use), or pass --no-preload")
    repo_build = ROS1_SRC / "build" / TRACER_NAME
    if repo_build.is_file():
        return repo_build.resolve()
    cached = _cached(ros1_cache_dir())
    if cached is not None:
        return cached
    if not build:
        raise TracerError(f"the ROS 1 tracer is not built (not at {repo_build} nor in {ros1_cache_dir()})")
    return build_ros1_tracer()


def rospy_hook_dir(tracer: Path) -> Path | None:
    """Directory holding the rospy import hook (sitecustomize.py): the sources' (package
    data), else one beside the tracer's build directory."""
    for d in (ROS1_SRC / "rospy", tracer.parent.parent / "rospy", tracer.parent / "rospy"):
        if (d / "sitecustomize.py").is_file() and (d / "roscope_rospy.py").is_file():
            return d
    return None


# --------------------------------------------------------------------------
# which tracer a command needs
# --------------------------------------------------------------------------

#: Words in a program (an ELF's needed libraries, a script's text) that say which ROS it runs.
_ROS1_MARKS = (b"libroscpp.so", b"import rospy", b"roslaunch", b"rosrun ", b"roscore", b"rosmaster", b"ROS_MASTER_URI")
_ROS2_MARKS = (b"librclcpp.so", b"librcl.so", b"libtracetools.so", b"import rclpy", b"from rclpy", b"ros2 launch", b"ros2 run")
_SCAN_BYTES = 4 << 20


def _program_files(command: list[str], env: dict) -> list[Path]:
    """The command's program and, for an interpreter (python3 x.py, bash x.sh), its script."""
    out = []
    for i, word in enumerate(command[:3]):
        if word.startswith("-"):
            continue
        found = word if "/" in word else (shutil.which(word, path=env.get("PATH")) if i == 0 else None)
        if found and Path(found).is_file():
            out.append(Path(found))
        if i == 0 and Path(word).name not in ("python", "python3", "bash", "sh", "env") and not Path(word).name.startswith("python3."):
            break
    return out


def ros_of_command(command: list[str] | None, env: dict | None = None) -> tuple[str | None, str]:
    """(which ROS a command runs: "ros1", "ros2" or None when it cannot tell, why): the
    environment a ROS's setup.bash leaves ($ROS_VERSION), else what its program (or script)
    names: ROS 1's libroscpp, rospy, roslaunch; ROS 2's librcl, rclpy, ros2 launch."""
    env = os.environ if env is None else env
    version = (env.get("ROS_VERSION") or "").strip()
    if version in ("1", "2"):
        return f"ros{version}", f"ROS_VERSION={version} in the environment"
    if env.get("AMENT_PREFIX_PATH") and not env.get("ROS_ROOT"):
        return "ros2", "AMENT_PREFIX_PATH in the environment"
    for f in _program_files(command or [], env):
        try:
            with open(f.resolve(), "rb") as fh:  # a program or script: its first bytes (an ELF's dynamic strings are there)
                data = fh.read(_SCAN_BYTES)
        except OSError:
            continue
        r1 = next((m for m in _ROS1_MARKS if m in data), None)
        r2 = next((m for m in _ROS2_MARKS if m in data), None)
        if r1 and not r2:
            return "ros1", f"{f} names {r1.decode().strip()}"
        if r2 and not r1:
            return "ros2", f"{f} names {r2.decode().strip()}"
    return None, "neither its environment nor its program says which ROS it runs"


def ros1_wanted(command: list[str] | None, env: dict | None = None) -> tuple[bool, str]:
    """(whether a recording preloads the ROS 1 tracer, why): for a ROS 1 command; for a
    stock ROS 2 (ros2_tracing's own tracepoints) nothing of roscope's; when the command
    does not say, the ROS 1 tracer if a ROS 1 is installed (it stays idle in a process
    without roscpp or rospy)."""
    ros, why = ros_of_command(command, env)
    if ros == "ros1":
        return True, f"ROS 1 ({why})"
    if ros == "ros2":
        return False, f"a ROS 2 with its own tracer, ros2_tracing ({why})"
    if ros1_include() is not None or Path("/usr/lib/python3/dist-packages/rospy").is_dir():
        return True, f"ROS 1 is installed and {why}"
    return False, f"no ROS 1 is installed and {why}"


def environment(base: dict, name: str, tracer: Path | None, ros2: Ros2Recording | None = None) -> dict:
    """The recorded command's environment: `base` with the recording's id and the
    tracers preloaded (ahead of any LD_PRELOAD / PYTHONPATH already there): the ROS 1
    `tracer`, and `ros2`'s tracer and rclpy hook ahead of it."""
    env = dict(base)
    env["ROSCOPE_RECORD_ID"] = name
    if tracer:
        env["LD_PRELOAD"] = f"{tracer}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(tracer)
        hook = rospy_hook_dir(tracer)
        if hook:
            env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(hook)
    return ros2.environment(env) if ros2 is not None else env


#: Variables whose earlier value a process keeps behind roscope's (a list joined by ':').
PATH_LISTS = ("LD_PRELOAD", "PYTHONPATH")


def shell_exports(env: dict[str, str]) -> list[str]:
    """`export K=V` lines for a POSIX shell (`eval "$(roscope env --shell)"`), each value quoted
    (a path with a space or a '$' stays one word, and runs nothing); a list variable keeps the
    value the shell already has after roscope's."""
    import shlex
    lines = []
    for k, v in env.items():
        keep = f'"${{{k}:+:${k}}}"' if k in PATH_LISTS else ""
        lines.append(f"export {k}={shlex.quote(v)}{keep}")
    return lines


def attach_environment(tracer: Path | None, ros2: Ros2Recording | None) -> dict[str, str]:
    """What a process needs in its environment to be traced by a later `roscope record --attach`
    or `roscope watch`: the tracers preloaded, and no recording id (an attaching recording keeps
    the processes that have none)."""
    env = environment({}, "", tracer, ros2)
    env.pop("ROSCOPE_RECORD_ID", None)
    return {k: env[k] for k in sorted(env)}
