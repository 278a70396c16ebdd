"""One version: Cargo.toml's [workspace.package] version is what every crate,
the installed Python package, ``roscope.__version__`` and ``roscope --version``
report (the oracle is the TOML file itself, read here)."""
from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cargo_version() -> str:
    with open(REPO / "Cargo.toml", "rb") as f:
        v = tomllib.load(f)["workspace"]["package"]["version"]
    assert v.count(".") == 2, f"Cargo.toml's workspace version {v!r} is not MAJOR.MINOR.PATCH"
    return v


def _cargo() -> str:
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    if not os.access(cargo, os.X_OK):
        pytest.skip("cargo is not installed (make setup)")
    return cargo


def test_every_crate_inherits_the_workspace_version(cargo_version):
    out = subprocess.run([_cargo(), "metadata", "--format-version", "1", "--no-deps", "--offline"], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    crates = {p["name"]: p["version"] for p in json.loads(out.stdout)["packages"]}
    assert {"roscope-ctf", "roscope-model", "roscope-flow", "roscope-py"} <= set(crates)
    assert crates == dict.fromkeys(crates, cargo_version)
    for manifest in sorted(REPO.glob("crates/*/Cargo.toml")):
        with open(manifest, "rb") as f:
            assert tomllib.load(f)["package"]["version"] == {"workspace": True}, f"{manifest} sets its own version"


def test_python_package_and_cli_report_the_cargo_version(cargo_version, run_roscope):
    import roscope
    import roscope._core

    assert roscope._core.__version__ == cargo_version, "the core was built from another version (rebuild it)"
    assert roscope.__version__ == cargo_version
    assert importlib.metadata.version("roscope") == cargo_version
    r = run_roscope("--version", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"roscope {cargo_version}"
