"""Issue 43, MEDIUM 7: `--ros2 ENV` paths a careless or hostile user gives. roscope builds its
ROS 2 tracer for an environment that has none (into the user's cache), and that build must
never hand ENV to a shell, never hang on ENV's python, and never give ld.so a path it splits.

Each environment here is a real one made of links to the PyPI Jazzy that `make setup`
installed (its lib/, include/, pyvenv.cfg and bin/), without roscope's tracer, so that
`roscope env --ros2 ENV` has to build one. Oracles: the file system (no file made by an
injected command), the clock, and a POSIX shell's reading of LD_PRELOAD (split at spaces and
colons, as ld.so does)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.ros2_truth import REPO, env_of

pytestmark = [pytest.mark.ros2]


@pytest.fixture(scope="module")
def jazzy() -> Path:
    env = env_of("jazzy")
    if not (env / "lib" / "libtracetools.so").exists():
        pytest.skip("ROS 2 jazzy from PyPI is not installed (make setup)")
    return env


def fake_env(where: Path, jazzy: Path, python: Path | None = None, tracer: bool = False) -> Path:
    """An environment at `where` of links to Jazzy's, without roscope's tracer in it (with
    `tracer`, with the one `make setup` built in Jazzy's)."""
    where.mkdir(parents=True)
    for name in ("lib", "include", "pyvenv.cfg", "share") + (("roscope",) if tracer else ()):
        (where / name).symlink_to(jazzy / name)
    (where / "bin").mkdir()
    (where / "bin" / "python").symlink_to(python or jazzy / "bin" / "python")
    return where


def env_cmd(env: Path, tmp: Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    e = dict(os.environ, PYTHONPATH=str(REPO / "python"), XDG_CACHE_HOME=str(tmp / "cache"))
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "roscope", "env", "--ros2", str(env), "--json"], env=e, cwd=tmp,
                       capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def test_shell_metacharacters_in_env_reach_no_shell(tmp_path, jazzy):
    """ENV at `.../e;touch PWNED;/fenv`: before, make's `$(shell $(ENVPY) ...)` ran `touch PWNED`."""
    env = fake_env(tmp_path / "e;touch PWNED;" / "fenv", jazzy)
    p, _ = env_cmd(env, tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["LD_PRELOAD"]
    made = [f for f in tmp_path.rglob("PWNED")] + [f for f in (REPO / "instrument" / "ros2").rglob("PWNED")]
    assert not made and not Path("PWNED").exists()


def test_a_python_that_hangs_is_refused_in_seconds(tmp_path, jazzy):
    """ENV's bin/python sleeps: before, the build waited out its 600 s limit."""
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nsleep 600\n")
    sleeper.chmod(0o755)
    env = fake_env(tmp_path / "env", jazzy, sleeper)
    p, took = env_cmd(env, tmp_path, timeout=90)
    assert p.returncode == 1 and p.stderr.count("error:") == 1, p.stderr
    assert "no answer within" in p.stderr and took < 40, (took, p.stderr)


def test_a_path_with_a_space_never_reaches_ld_preload(tmp_path, jazzy):
    """ENV under `.../with space/`, its tracer built in it (ENV/roscope, as `make setup` does):
    before, LD_PRELOAD held that path and ld.so split it (no trace, and `trace written`). Now a
    tracer is built into the user's cache instead, and LD_PRELOAD's paths are whole: each word
    a shell makes of it is a file."""
    env = fake_env(tmp_path / "with space" / "env", jazzy, tracer=True)
    p, _ = env_cmd(env, tmp_path)
    assert p.returncode == 0, p.stderr
    preload = json.loads(p.stdout)["LD_PRELOAD"]
    words = subprocess.run(["sh", "-c", 'IFS=" :"; for w in $LD_PRELOAD; do echo "$w"; done'],
                           env={"LD_PRELOAD": preload}, capture_output=True, text=True).stdout.split("\n")
    words = [w for w in words if w]
    assert words and all(Path(w).is_file() for w in words), words
