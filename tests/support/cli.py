"""The one way tests and bench run roscope's CLI.

- `roscope(*args, timeout=600, env=None, check=False)`: the checkout's roscope as a program
  (this interpreter, `-m roscope`, the checkout's python/ first on PYTHONPATH; or the command
  in $ROSCOPE_CLI, e.g. an installed roscope, as it is), its output as text;
  `check=True` asserts it exited 0, naming the command and its stderr.
- `in_process(*args)`: roscope.cli.main in this process, as the program runs it (no interpreter
  start and imports per call), its output captured: for tests that run many verbs.
- `argv()`: the command itself (None when roscope is not importable here).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / "python")


def argv() -> list[str] | None:
    """How to run the roscope CLI, or None if it cannot be run from this interpreter."""
    override = os.environ.get("ROSCOPE_CLI")
    if override:
        return override.split()
    if importlib.util.find_spec("roscope") is None:
        return None
    return [sys.executable, "-m", "roscope"]


def environment(env: dict | None = None) -> dict:
    """`env` (default: this process's) with the checkout's python/ first on PYTHONPATH (not for
    $ROSCOPE_CLI, which runs as it is)."""
    env = dict(os.environ if env is None else env)
    if not os.environ.get("ROSCOPE_CLI"):
        env["PYTHONPATH"] = PYTHON + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def roscope(*args, timeout: float = 600, env: dict | None = None, check: bool = False,
            **kw) -> subprocess.CompletedProcess:
    """`roscope ARGS` as a program; with `check`, asserts it exited 0."""
    cmd = argv() or [sys.executable, "-m", "roscope"]
    p = subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, env=environment(env),
                       timeout=timeout, **kw)
    if check:
        assert p.returncode == 0, f"roscope {' '.join(map(str, args))} failed (exit {p.returncode}):\n{p.stderr}"
    return p


def in_process(*args) -> subprocess.CompletedProcess:
    """`roscope ARGS` through roscope.cli.main in this process, its output captured."""
    from roscope import cli

    line = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(line)
        except SystemExit as exc:  # argparse
            rc = exc.code
    return subprocess.CompletedProcess(line, rc, out.getvalue(), err.getvalue())
