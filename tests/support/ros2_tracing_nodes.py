"""ros2_tracing's own C++ test nodes (its `test_tracetools` package, written by ros2_tracing's
authors), built from the unmodified archive in ../shared/third_party against the pip-installed
Jazzy and the rclcpp `scripts/rclcpp_setup.sh` built (docs/rclcpp.md). Nothing of the archive is
copied into the repository: it is unpacked into the user's cache, and the build goes there too,
keyed by what the build reads and does (key(): a fresh clone, or a commit that changes none of it,
reuses it).

    nodes = build()         # a Path holding test_ping, test_pong, test_intra, ...; or a skip reason (str)
    env = run_env(nodes)    # LD_LIBRARY_PATH for them
"""
from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "fixtures" / "ros2_tracing_nodes"
ARCHIVE = Path(os.environ.get("ROSCOPE_THIRD_PARTY") or REPO.parent / "shared" / "third_party") / "ros2-jazzy" / "ros2_tracing-jazzy.tar.gz"
ENV = REPO / ".ros2" / "jazzy"
NODES = ("test_ping", "test_pong", "test_intra", "test_timer", "test_service_ping", "test_service_pong",
         "test_publisher", "test_lifecycle_node", "test_lifecycle_client", "test_generic_ping", "test_generic_pong")


def rclcpp_prefix() -> Path | str:
    """rclcpp's install (scripts/rclcpp_setup.sh --prefix), or why there is none."""
    p = subprocess.run(["bash", str(REPO / "scripts" / "rclcpp_setup.sh"), "--prefix"], capture_output=True, text=True)
    return Path(p.stdout.strip()) if p.returncode == 0 else (p.stderr.strip() or "rclcpp is not built")


def build() -> Path | str:
    """The directory of the built nodes, built now if need be (about a minute); a str saying
    why they cannot be (no archive, no rclcpp, no ROS 2 Jazzy) instead."""
    if not ARCHIVE.is_file():
        return f"ros2_tracing's archive is not here ({ARCHIVE}): ../shared/third_party is absent"
    if not (ENV / "bin" / "python").exists():
        return "ROS 2 jazzy from PyPI is not installed (make setup)"
    prefix = rclcpp_prefix()
    if isinstance(prefix, str):
        return prefix
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roscope"
    out = cache / f"ros2-tracing-nodes-{key(prefix)}"
    if all((out / n).is_file() for n in NODES):
        return out
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".ros2-tracing-nodes-", dir=cache))
    try:
        bad = unpack(ARCHIVE, work / "src")
        if bad:
            return bad
        src = next((work / "src").glob("*/test_tracetools"))
        env = dict(os.environ, PATH=f"{ENV / 'bin'}:{os.environ.get('PATH', '')}", AMENT_PREFIX_PATH=f"{prefix}:{ENV}")
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        for argv in (["cmake", *gen, "-S", str(PROJECT), "-B", str(work / "build"), f"-DTEST_TRACETOOLS_SRC={src}",
                      f"-DROS2_ENV={ENV}", f"-DRCLCPP_PREFIX={prefix}", f"-DROSCOPE_WHEEL_PYTHON={ENV / 'bin' / 'python'}",
                      f"-DCMAKE_PROJECT_INCLUDE={REPO / 'instrument' / 'ros2' / 'cmake' / 'wheel_mends.cmake'}"],
                     ["cmake", "--build", str(work / "build"), "-j", str(os.cpu_count() or 2)]):
            p = subprocess.run(argv, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{' '.join(argv[:2])} of ros2_tracing's test nodes failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        staged = work / "nodes"
        staged.mkdir()
        for n in NODES:
            shutil.copy2(work / "build" / n, staged / n)
        try:
            os.rename(staged, out)   # whole or not at all
        except OSError:
            if not all((out / n).is_file() for n in NODES):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


#: What the build reads besides the archive and rclcpp: the CMake project and the two CMake files of
#: instrument/ros2/cmake it includes (rclcpp_program.cmake) or is given (wheel_mends.cmake).
CMAKE_FILES = (PROJECT / "CMakeLists.txt", REPO / "instrument" / "ros2" / "cmake" / "rclcpp_program.cmake",
               REPO / "instrument" / "ros2" / "cmake" / "wheel_mends.cmake")


def key(prefix: Path) -> str:
    """The build's cache key: what it is built from (the archive, CMAKE_FILES, rclcpp's prefix, the
    ROS 2 environment whose paths the programs keep in their RPATH) and how (build()'s code, NODES);
    not the rest of this file, so that a change elsewhere in it (or a commit that leaves all these
    alone) finds the same build."""
    h = hashlib.sha256()
    for f in (ARCHIVE, *CMAKE_FILES):
        h.update(hashlib.sha256(f.read_bytes()).digest())
    h.update(inspect.getsource(build).encode())   # the recipe, not the rest of this file
    h.update(f"{prefix}\n{ENV}\n{' '.join(NODES)}".encode())
    return h.hexdigest()[:16]


def unpack(archive: Path, dest: Path) -> str | None:
    """Unpacks ros2_tracing's archive into `dest`; why not (a member that is absolute, climbs
    out with '..', or is a device) instead, with nothing unpacked."""
    with tarfile.open(archive) as t:
        members = t.getmembers()
        bad = [m.name for m in members if m.name.startswith("/") or ".." in Path(m.name).parts
               or not (m.isfile() or m.isdir() or m.issym())]
        if bad:
            return f"{archive}: unexpected members (absolute, '..', devices): {bad[:3]}"
        t.extractall(dest, members=members)
    return None


def run_env(prefix: Path | None = None) -> dict:
    """The nodes' environment: rclcpp's and the wheels' libraries on LD_LIBRARY_PATH (the
    type supports are found through it)."""
    prefix = prefix or rclcpp_prefix()
    libs = [str(Path(prefix) / "lib"), str(ENV / "lib")]
    return {"LD_LIBRARY_PATH": ":".join(libs + ([os.environ["LD_LIBRARY_PATH"]] if os.environ.get("LD_LIBRARY_PATH") else []))}
