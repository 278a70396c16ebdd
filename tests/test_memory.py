"""roscope.memory on its own: DuckDB's memory limit read back, a step given more
memory while it runs out of it (on a real query of DuckDB's that needs more than
a small budget), and the private temporary directories: made private and locked,
removed by the next roscope once their process is gone, kept while it lives."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile

import duckdb
import pytest
from roscope import memory

#: A query whose result DuckDB holds whole (a list of 3M integers, 24 MB): it
#: cannot spill, so a budget of 16 MiB is too little and needs doubling.
WHOLE = "SELECT len(list(range)) FROM range(3000000)"


def _con(limit_mib: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("SET memory_limit = ?", [f"{limit_mib}MiB"])
    return con


@pytest.mark.parametrize(("setting", "shown", "expected"), [
    ("16MiB", "16.0 MiB", 16 << 20),
    ("1GiB", "1.0 GiB", 1 << 30),
    ("300MB", "286.1 MiB", int(286.1 * (1 << 20))),  # DuckDB shows 300e6 bytes in MiB, rounded
])
def test_memory_limit_reads_what_duckdb_shows(setting, shown, expected):
    con = duckdb.connect()
    con.execute("SET memory_limit = ?", [setting])
    assert memory.memory_limit(con) == (shown, expected)


def test_a_step_that_runs_out_of_memory_is_run_again_with_twice_the_budget():
    con = _con(16)
    with pytest.raises(duckdb.OutOfMemoryException):  # the premise: 16 MiB is too little
        con.execute(WHOLE).fetchall()
    warnings: list[str] = []
    undone, budgets = [], []

    def step():
        budgets.append(memory.memory_limit(con)[1])
        return con.execute(WHOLE).fetchall()[0][0]

    assert memory.within_memory(con, step, warnings, "the test's list", undo=lambda: undone.append(1)) == 3_000_000
    # Each try had twice the budget of the one before, from 16 MiB; one warning and one undo per failed try.
    assert budgets == [(16 << 20) << k for k in range(len(budgets))] and len(budgets) >= 2
    assert len(warnings) == len(undone) == len(budgets) - 1
    for k, w in enumerate(warnings):
        assert w == (f"the test's list: {16 << k} MiB of memory were not enough; made with {32 << k} MiB "
                     "(--memory sets the budget)")
    # The budget is put back afterwards, and the last one that failed still fails.
    assert memory.memory_limit(con) == ("16.0 MiB", 16 << 20)
    con.execute("SET memory_limit = ?", [f"{budgets[-2] >> 20}MiB"])
    with pytest.raises(duckdb.OutOfMemoryException):
        con.execute(WHOLE).fetchall()


def test_at_least_and_restore():
    con = _con(16)
    warnings: list[str] = []
    got = memory.within_memory(con, lambda: con.execute(WHOLE).fetchall()[0][0], warnings, "x", at_least=256 << 20,
                               restore=False)
    assert got == 3_000_000 and warnings == []  # 256 MiB from the start: enough at once
    assert memory.memory_limit(con)[1] == 256 << 20  # not put back: restore=False
    # A step that fails for another reason is not retried, and the budget is put back.
    con.execute("SET memory_limit = '16MiB'")
    with pytest.raises(duckdb.CatalogException):
        memory.within_memory(con, lambda: con.execute("SELECT * FROM no_such_table").fetchall(), warnings, "x",
                             at_least=64 << 20)
    assert warnings == [] and memory.memory_limit(con)[1] == 16 << 20


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """A $TMPDIR of this test only, where `memory.private_dir` makes its directories."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
    return d


def test_a_private_directory_is_private_and_removed_with_its_files(tmpdir_env):
    path = memory.private_dir()
    try:
        assert os.path.dirname(path) == str(tmpdir_env)
        assert os.path.basename(path).startswith(memory.PRIVATE_PREFIX)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
        with open(os.path.join(path, "model.duckdb"), "wb") as f:
            f.write(b"x" * 1000)
    finally:
        memory.remove_private_dir(path)
    assert os.listdir(tmpdir_env) == []
    memory.remove_private_dir(path)  # twice: nothing left to do, no error


def test_the_sweep_removes_only_unheld_old_directories(tmpdir_env, monkeypatch):
    """Entries with the prefix: a directory whose process is gone (no lock), one
    held by a live process (its shared lock, taken by a real second process), and a
    plain file; and a directory without the prefix. Younger than PRIVATE_MIN_AGE
    nothing goes (its maker may not hold the lock yet); older, only the unheld
    directory, and the held one once its process is gone."""
    gone = tmpdir_env / f"{memory.PRIVATE_PREFIX}gone"
    held = tmpdir_env / f"{memory.PRIVATE_PREFIX}held"
    plain = tmpdir_env / f"{memory.PRIVATE_PREFIX}file"
    for d in (gone, held):
        d.mkdir()
        (d / "model.part").write_bytes(b"x")
    plain.write_text("not a directory")
    other = tmpdir_env / "unrelated"
    other.mkdir()
    everything = sorted(p.name for p in (gone, held, plain, other))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY); "
         "fcntl.flock(fd, fcntl.LOCK_SH); print('locked', flush=True); time.sleep(600)", str(held)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        memory.sweep_private_dirs(str(tmpdir_env))  # all seconds old
        assert sorted(os.listdir(tmpdir_env)) == everything
        monkeypatch.setattr(memory, "PRIVATE_MIN_AGE", 0)
        memory.sweep_private_dirs(str(tmpdir_env))
        assert sorted(os.listdir(tmpdir_env)) == sorted(p.name for p in (held, plain, other))
        assert (held / "model.part").exists()
    finally:
        holder.kill()
        holder.wait()
    memory.sweep_private_dirs(str(tmpdir_env))  # its process is gone now
    assert sorted(os.listdir(tmpdir_env)) == sorted(p.name for p in (plain, other))
