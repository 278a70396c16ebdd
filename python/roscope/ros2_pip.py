"""ROS 2 installed from PyPI (the ros-python-wheels project's wheels, docs/ros2-pypi.md).

The wheels' ``libtracetools.so`` links a bundled LTTng-UST of the 2.8 era: its processes wait
for the session daemon's ``lttng-ust-sock-6``, while an LTTng 2.13 daemon listens on
``lttng-ust-sock-8``. Nothing of theirs is recorded, and nothing says so. This module:

* finds such an environment (``Ros2Env``): the one a command runs with, or one named;
* finds (or builds, with instrument/ros2) roscope's tracer library for it: the distro's
  ``ros_trace_*`` functions over the system's LTTng-UST, with the stand-ins that keep the
  bundled LTTng-UST out of the process (``tracer_for``);
* gives what `roscope record` adds to a command's environment: the preload, the rclpy hook
  (instrument/ros2/rclpy) on PYTHONPATH (``Ros2Recording.environment``);
* watches the recorded command's processes (those roscope.processes tracks, or every process
  of the machine) for a ROS 2 tracer that cannot reach the session daemon (``TracerWatch``): a
  process that maps a ``libtracetools.so`` but has registered no ``ros2`` tracepoint with the
  daemon (``lttng list --userspace``), with the evidence of its maps (the LTTng-UST it loaded,
  the ABI it waits for).

Like roscope.record, this module does not import roscope._core.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from roscope.errors import UserError
from roscope.files import link_to, move_into, private_dir, remove_private_dir, temp_root
from roscope.processes import group
from roscope.processes.identity import all_pids, cmdline

#: Where `make setup` installs the distros (scripts/ros2_setup.sh), when it runs from its
#: repository.
PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parents[1]
ENVS_DIR = REPO / ".ros2"


def _instrument_root() -> Path:
    """The tracers' sources (instrument/): package data of an installed roscope (the
    wheel's roscope/instrument), else the repository's."""
    for d in (PACKAGE / "instrument", REPO / "instrument"):
        if (d / "include" / "roscope").is_dir():
            return d
    return PACKAGE / "instrument"


#: The sources of every tracer (instrument/), and of roscope's ROS 2 tracer (instrument/ros2).
INSTRUMENT_ROOT = _instrument_root()
INSTRUMENT = INSTRUMENT_ROOT / "ros2"
HOOK_DIR = INSTRUMENT / "rclpy"
BUILD_INFO = "build-info.json"
#: Environment variables: a directory of environments (one per distro, like .ros2/), and
#: the rclpy hook's switch (instrument/ros2/rclpy/sitecustomize.py).
ENVS_VAR = "ROSCOPE_ROS2_ENVS"
HOOK_VAR = "ROSCOPE_RCLPY_HOOK"
#: How long a process that maps a ROS 2 tracer may take to register with the session daemon
#: before it is reported.
REGISTER_GRACE_S = 1.0
#: How long building roscope's ROS 2 tracer may take (it takes a few seconds).
BUILD_TIMEOUT_S = 300
#: How long the environment's Python may take to say where its headers are.
PYTHON_TIMEOUT_S = 15
_TRACETOOLS = "libtracetools.so"
_WAIT = re.compile(r"lttng-ust-wait-(\d+)")


class Ros2Error(UserError):
    """A pip-installed ROS 2 cannot be traced as asked; the message says why."""


@dataclass
class Ros2Env:
    """A pip-installed ROS 2: a Python environment holding the wheels' lib/ and include/."""
    path: Path
    distro: str | None

    @property
    def headers(self) -> Path:
        return self.path / "include" / "tracetools"

    def describe(self) -> str:
        return f"ROS 2 {self.distro.capitalize() if self.distro else '(unknown distro)'} at {self.path}"


def is_env(path: Path) -> bool:
    """Whether `path` is a Python environment with ROS 2's wheels (their lib/libtracetools.so)."""
    return (path / "lib" / _TRACETOOLS).is_file() and (path / "pyvenv.cfg").is_file()


def distro_of(path: Path) -> str | None:
    """The distro whose ``ros-<distro>-rclpy`` (or any ``ros-<distro>-*``) wheel is installed."""
    names = sorted(glob.glob(str(path / "lib" / "python3*" / "site-packages" / "ros_*_rclpy-*.dist-info")))
    names = names or sorted(glob.glob(str(path / "lib" / "python3*" / "site-packages" / "ros_*_tracetools-*.dist-info")))
    for n in names:
        m = re.match(r"ros_([a-z]+)_(rclpy|tracetools)-", os.path.basename(n))
        if m:
            return m.group(1)
    return None


def named_env(name: str) -> Ros2Env:
    """An environment by path, or by distro name in $ROSCOPE_ROS2_ENVS (default: the
    repository's .ros2/, where `make setup` installs Jazzy and Kilted)."""
    cands = [Path(name)]
    if "/" not in name:
        cands.append(Path(os.environ.get(ENVS_VAR) or ENVS_DIR) / name)
    for c in cands:
        if is_env(c):
            return Ros2Env(c.absolute(), distro_of(c))
    raise Ros2Error(f"--ros2 {name}: not a pip-installed ROS 2 environment (no lib/{_TRACETOOLS} and pyvenv.cfg at "
                    f"{' or '.join(str(c) for c in cands)}); `make setup` installs Jazzy and Kilted into {ENVS_DIR}")


def env_of_command(command: list[str], env: dict | None = None) -> Ros2Env | None:
    """The pip-installed ROS 2 a command runs with: its program's environment (a venv's
    bin/python, or a program on a PATH that an activated environment leads), else the
    active virtual environment ($VIRTUAL_ENV)."""
    env = os.environ if env is None else env
    if command:
        prog = command[0]
        found = prog if "/" in prog else shutil.which(prog, path=env.get("PATH"))
        if found:
            # The venv's bin/ (not the interpreter a bin/python symlink resolves to).
            root = Path(os.path.abspath(found)).parent.parent
            if is_env(root):
                return Ros2Env(root, distro_of(root))
    venv = env.get("VIRTUAL_ENV")
    if venv and is_env(Path(venv)):
        return Ros2Env(Path(venv).absolute(), distro_of(Path(venv)))
    return None


# --------------------------------------------------------------------------
# roscope's tracer library for an environment
# --------------------------------------------------------------------------

def _build_info(d: Path) -> dict | None:
    try:
        info = json.loads((d / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("format") == "roscope-ros2-tracer" else None


def files_sha256(files: Iterable[Path]) -> str:
    """A hash of a tracer's source files (each one's name and bytes); "" when one cannot be read."""
    h = hashlib.sha256()
    for f in files:
        try:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        except OSError:
            return ""
    return h.hexdigest()


def sources_sha256() -> str:
    """A hash of the tracer's sources, as instrument/ros2/standins.py records it in a build."""
    return files_sha256(sorted((INSTRUMENT / "src").glob("*")) + [INSTRUMENT / "gen_tracetools.py",
                                                                  INSTRUMENT_ROOT / "include" / "roscope" / "roscope_attach_tp.h"])


def build_failure(p, timeout: float) -> str:
    """Why a build (make, run by roscope.processes) failed: its last lines, else its status."""
    lines = (p.stderr.strip() or p.stdout.strip()).splitlines()
    return " / ".join(lines[-3:]) if lines else (f"exit status {p.returncode}" if p.returncode is not None
                                                 else f"stopped after {timeout:g} s")


def _current(d: Path, env: Ros2Env) -> dict | None:
    """The build in `d`, if complete and made from the environment's current headers and
    this checkout's tracer sources (when they are here)."""
    info = _build_info(d)
    if info is None or not (d / info.get("library", _TRACETOOLS)).is_file():
        return None
    mine = sources_sha256() if (INSTRUMENT / "src").is_dir() else None
    if mine and info.get("sources_sha256") != mine:
        return None
    try:
        sha = hashlib.sha256((env.headers / "tracetools" / "tp_call.h").read_bytes()).hexdigest()
    except OSError:
        return None
    if info.get("tp_call_sha256") != sha or not all((d / n).is_file() for n in info.get("standins", {})):
        return None
    if info.get("rclpy_fast") and not (d / info["rclpy_fast"]).is_file():
        return None
    return info


def _cache_dir(env: Ros2Env) -> Path:
    """The user's cache of builds for `env`, one per version of the tracer's sources."""
    base = cache_root() / "ros2-tracer"
    key = str(env.path.resolve()) + "\0" + (sources_sha256() if (INSTRUMENT / "src").is_dir() else "")
    return base / hashlib.sha256(key.encode()).hexdigest()[:16]


def cache_root() -> Path:
    """The user's cache of roscope's builds ($XDG_CACHE_HOME/roscope, else ~/.cache/roscope)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roscope"


def preloadable(path: Path) -> bool:
    """Whether ld.so can preload `path` from LD_PRELOAD (which it splits at spaces and colons)."""
    return not re.search(r"[\s:]", str(path))


#: A path make may see: its recipes pass variables through a shell unquoted.
MAKE_SAFE = re.compile(r"[A-Za-z0-9/_.+-]+")


def _interpreter_facts(env: Ros2Env) -> tuple[str, str]:
    """(include directory, extension suffix) of the environment's Python, asked with a short
    time limit (a bin/python that hangs or is not Python is refused here, not in make)."""
    py = env.path / "bin" / "python"
    try:
        p = group.output("ros2-python", [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                                         "print(sysconfig.get_config_var('EXT_SUFFIX'))"], timeout=PYTHON_TIMEOUT_S)
    except OSError as e:
        raise Ros2Error(f"{py}: cannot run it ({e.strerror or e}): not a pip-installed ROS 2 environment") from None
    lines = p.stdout.split("\n")
    if p.returncode != 0 or len(lines) < 2 or not lines[1].startswith(".") or not MAKE_SAFE.fullmatch(lines[0] + lines[1]):
        how = f"no answer within {PYTHON_TIMEOUT_S:g} s" if p.returncode is None else "not a Python that says where its headers are"
        raise Ros2Error(f"{py}: {how}: not a pip-installed ROS 2 environment")
    return lines[0], lines[1]


def build_tracer(env: Ros2Env, out: Path) -> dict:
    """Builds roscope's tracer library for `env` into `out` (make -C instrument/ros2). make sees
    no path of the user's: it builds in a private directory of safe name, reaching the
    environment through a link there, and the result is moved into `out`."""
    if not (INSTRUMENT / "Makefile").is_file():
        raise Ros2Error(f"roscope's ROS 2 tracer is not built for {env.describe()}, and its sources "
                        f"({INSTRUMENT}) are not here to build it")
    if shutil.which("make") is None:
        raise Ros2Error("building roscope's ROS 2 tracer needs 'make' (and gcc, g++, readelf, liblttng-ust-dev)")
    if not MAKE_SAFE.fullmatch(str(INSTRUMENT)):
        raise Ros2Error(f"roscope's sources are at {INSTRUMENT}, a path make cannot be given safely "
                        "(letters, digits and / _ . + - only)")
    pyinc, ext = _interpreter_facts(env)
    root = temp_root() if MAKE_SAFE.fullmatch(temp_root()) else "/tmp"
    work = Path(private_dir(root, "roscope-ros2-build-"))
    try:
        link_to(work / "env", env.path)
        build = work / "out"
        p = group.output("make", ["make", "-s", "-C", str(INSTRUMENT), f"ROS2_ENV={work / 'env'}", f"OUT={build}",
                                  f"PYINC={pyinc}", f"EXT={build}/_roscope_rclpy_fast{ext}"], timeout=BUILD_TIMEOUT_S)
        if p.returncode == 0 and _current(build, env) is not None:
            move_into(build, out)
        info = _current(out, env) if p.returncode == 0 else None
    finally:
        remove_private_dir(str(work))
    if info is None:
        raise Ros2Error(f"building roscope's ROS 2 tracer for {env.describe()} failed: {build_failure(p, BUILD_TIMEOUT_S)}")
    return info


def built_tracer(env: Ros2Env) -> Path | None:
    """The directory of a current build of roscope's tracer for `env` (ENV/roscope or the
    user's cache), or None: nothing is built."""
    return next((d for d in (env.path / "roscope", _cache_dir(env)) if preloadable(d) and _current(d, env)), None)


def tracer_for(env: Ros2Env) -> tuple[Path, dict]:
    """(directory, build info) of roscope's tracer library for `env`: the one `make setup`
    built in ENV/roscope, else one in the user's cache, built now if need be (a few s). Only
    a directory ld.so can preload from is taken (an environment whose path has a space is
    served from the cache)."""
    for d in (env.path / "roscope", _cache_dir(env)):
        info = _current(d, env) if preloadable(d) else None
        if info is not None:
            return d, info
    out = _cache_dir(env)
    if not preloadable(out):
        raise Ros2Error(f"roscope's ROS 2 tracer for {env.describe()} would be built into {out}, a path ld.so cannot "
                        "preload from (it has a space or ':'): set XDG_CACHE_HOME to a path without them")
    out.mkdir(parents=True, exist_ok=True)
    print(f"roscope: building roscope's ROS 2 tracer for {env.describe()} into {out}", file=sys.stderr)
    return out, build_tracer(env, out)


# --------------------------------------------------------------------------
# is a process's ROS 2 tracer reaching the session daemon?
# --------------------------------------------------------------------------

def daemon_abi() -> str | None:
    """The LTTng-UST ABI the session daemon listens for (its ``lttng-ust-sock-N``)."""
    dirs = ["/var/run/lttng", os.path.join(os.environ.get("LTTNG_HOME") or str(Path.home()), ".lttng")]
    for d in dirs:
        for s in sorted(glob.glob(os.path.join(d, "lttng-ust-sock-*"))):
            m = re.search(r"lttng-ust-sock-(\d+)$", s)
            if m:
                return m.group(1)
    return None


def registered_ros2_pids() -> set[int] | None:
    """The processes that registered ``ros2`` tracepoints with the session daemon
    (``lttng list --userspace``); None when it cannot be asked."""
    try:
        p = group.output("lttng", ["lttng", "list", "--userspace"], timeout=20)
    except OSError:
        return None
    if p.returncode != 0:
        return None
    pids, cur = set(), None
    for line in p.stdout.splitlines():
        m = re.match(r"\s*PID:\s*(\d+)", line)
        if m:
            cur = int(m.group(1))
        elif cur is not None and line.strip().startswith("ros2:"):
            pids.add(cur)
    return pids


def ros2_tracer_maps(pid: int) -> dict | None:
    """What a process mapped of a ROS 2 tracer: its libtracetools.so, LTTng-UST libraries and
    the ABI of the session daemon its LTTng-UST waits for; None without libtracetools.so."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    except OSError:
        return None
    tracetools = sorted(p for p in paths if os.path.basename(p) == _TRACETOOLS)
    if not tracetools:
        return None
    waits = sorted({m.group(1) for p in paths for m in [_WAIT.search(p)] if m})
    ust = sorted(p for p in paths if os.path.basename(p).startswith("liblttng-ust") and "-tracepoint" not in p)
    return {"tracetools": tracetools, "lttng_ust": ust, "waits_for_abi": waits}


@dataclass
class TracerWatch:
    """Finds the processes that loaded a ROS 2 tracer which did not register with the session
    daemon. Each `poll(pids)` looks at the processes `pids` (None: every process of the
    machine); `unreachable` holds what it found, each process once. A process is judged once
    it has had REGISTER_GRACE_S to register (at once with `force`, or when its LTTng-UST waits
    for another daemon ABI than this one's)."""
    abi: str | None = field(default_factory=daemon_abi)
    unreachable: list[dict] = field(default_factory=list)
    reached: list[int] = field(default_factory=list)
    _seen: dict = field(default_factory=dict)
    _judged: set = field(default_factory=set)

    def poll(self, pids: Iterable[int] | None = None, force: bool = False) -> None:
        now = time.monotonic()
        pending = []
        for pid in all_pids() if pids is None else pids:
            if pid in self._judged or pid == os.getpid():
                continue
            maps = ros2_tracer_maps(pid)
            if maps is None:
                continue
            first = self._seen.setdefault(pid, now)
            pending.append((pid, maps, now - first))
        if not pending:
            return
        registered = registered_ros2_pids()
        for pid, maps, age in pending:
            if registered is not None and pid in registered:
                self._judged.add(pid)
                self.reached.append(pid)
                continue
            other_abi = bool(self.abi and maps["waits_for_abi"] and self.abi not in maps["waits_for_abi"])
            if other_abi or (registered is not None and (age >= REGISTER_GRACE_S or force)):
                self._judged.add(pid)
                self.unreachable.append({"pid": pid, "command": " ".join(cmdline(pid)), **maps, "daemon_abi": self.abi})

    def warnings(self) -> list[str]:
        return [unreachable_warning(u) for u in self.unreachable]


def unreachable_warning(u: dict) -> str:
    """The loud one-line warning for a process whose ROS 2 tracer did not reach the daemon."""
    ust = ", ".join(os.path.basename(p) for p in u.get("lttng_ust", [])) or "none"
    why = ""
    if u.get("waits_for_abi") and u.get("daemon_abi"):
        why = (f"; its LTTng-UST waits for a session daemon's lttng-ust-sock-{'/'.join(u['waits_for_abi'])}, this one "
               f"listens on lttng-ust-sock-{u['daemon_abi']}")
    cmd = u.get("command") or "?"
    return (f"NO ROS 2 EVENTS RECORDED from process {u['pid']} ({cmd[:120]}): it loaded the ROS 2 tracer "
            f"{', '.join(u.get('tracetools', []))} (LTTng-UST: {ust}), which did not register with the LTTng session "
            f"daemon{why}. Record with roscope's ROS 2 tracer: roscope record --ros2 ENV (docs/ros2-pypi.md)")


# --------------------------------------------------------------------------
# one recording's ROS 2 side
# --------------------------------------------------------------------------

@dataclass
class Ros2Recording:
    """What `roscope record` does for a pip-installed ROS 2: the environment it found, the
    tracer it preloads (None with --no-preload), and the watch of the command's processes."""
    env: Ros2Env | None
    tracer_dir: Path | None = None
    info: dict | None = None
    watch: TracerWatch | None = None
    #: Which tracers the recording preloads and why (roscope.record.ros2.tracers).
    choice: dict | None = None

    @classmethod
    def setup(cls, command: list[str] | None, explicit: str | None, preload: bool) -> Ros2Recording:
        env = named_env(explicit) if explicit else (env_of_command(command) if command else None)
        rec = cls(env)
        if env is not None and preload:
            rec.tracer_dir, rec.info = tracer_for(env)
        return rec

    @property
    def preload(self) -> list[Path]:
        if self.tracer_dir is None or self.info is None:
            return []
        return [self.tracer_dir / self.info.get("library", _TRACETOOLS)] + [self.tracer_dir / n for n in self.info.get("standins", {})]

    def environment(self, env: dict) -> dict:
        """`env` with the preload and the rclpy hook, when the tracer is used."""
        libs = [str(p) for p in self.preload]
        if not libs:
            return env
        env = dict(env)
        env["LD_PRELOAD"] = ":".join(libs + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
        if (HOOK_DIR / "sitecustomize.py").is_file():
            env["PYTHONPATH"] = f"{HOOK_DIR}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(HOOK_DIR)
            # The hook's switch; its value is the tracer's directory (the hook's C extension).
            env[HOOK_VAR] = str(self.tracer_dir)
        return env

    def manifest(self) -> dict | None:
        if self.env is None and self.watch is None:
            return None
        out = {"env": str(self.env.path) if self.env else None, "distro": self.env.distro if self.env else None,
               "tracer": str(self.tracer_dir) if self.tracer_dir else None, "preload": [str(p) for p in self.preload],
               "rclpy_hook": str(HOOK_DIR) if self.preload else None}
        if self.info:
            out["tracetools_version"] = self.info.get("tracetools_version")
        if self.watch is not None:
            out["tracer_unreachable"] = self.watch.unreachable
            out["tracer_registered_pids"] = sorted(self.watch.reached)
        return out

    def start_watch(self) -> None:
        self.watch = TracerWatch()

    def poll(self, pids: Iterable[int]) -> None:
        """A look at the recorded command's processes `pids` (roscope.processes finds them)."""
        if self.watch is not None:
            self.watch.poll(pids)

    def finish(self, pids: Iterable[int]) -> list[str]:
        """A last look at the processes `pids`; the warnings about unreachable tracers."""
        if self.watch is None:
            return []
        self.watch.poll(pids, force=True)
        return self.watch.warnings()


def warnings_of_manifest(man: dict) -> list[str]:
    """The unreachable-tracer warnings a recording's manifest holds (for `roscope info`)."""
    r = man.get("ros2") if isinstance(man, dict) else None
    if not isinstance(r, dict):
        return []
    return [unreachable_warning(u) for u in r.get("tracer_unreachable") or [] if isinstance(u, dict) and "pid" in u]
