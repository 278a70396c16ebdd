"""Small traces start fast (issue 29): a trace of at most `loading.SMALL_TRACE_BYTES`
is stored straight from the core's Arrow streams, without pyarrow, and its kernel
tables, when it has no kernel source, are made from the schema. What `roscope stats`
shows, and every table of the database, must equal what the streaming path (the one
larger traces take, through `_Inserts`) gives on the same trace: the shared real
traces, one of them with an LTTng kernel trace beside it. Neither path imports
pyarrow unless the load has kernel data (the streaming path did until stop 37: its
libraries were 37 MiB of a 136M-event load's peak)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest
from roscope import loading, opening
from roscope.commands import stats as stats_command

from tests.support.damage import copy_with_cut_metadata
from tests.support.shared import TRACES

DEFAULT_THREADS = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
SMALL = ["ros2/pingpong-rolling-2021", "ros2/caret-end-to-end-cyclonedds", "ros2/caret-intra-process-galactic",
         "ros2/caret-talker-listener-galactic", "ros1/nodes-pipeline-melodic"]


def _tables(db) -> dict:
    """Every table of the database: its column names and types, and its rows in order."""
    names = [r[0] for r in db.con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
    out = {}
    for n in names:
        if n == "meta":  # the creation time differs
            continue
        cols = db.con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                              "ORDER BY column_index", [n]).fetchall()
        out[n] = (cols, db.con.table(n).fetchall())
    return out


@pytest.mark.parametrize("trace", SMALL)
def test_a_small_trace_gives_what_the_streaming_path_gives(trace, monkeypatch):
    path = os.path.join(TRACES, trace)
    assert loading.trace_bytes([path], loading.SMALL_TRACE_BYTES) <= loading.SMALL_TRACE_BYTES
    got = {}
    for small in (True, False):
        monkeypatch.setattr(loading, "SMALL_TRACE_BYTES", loading.SMALL_TRACE_BYTES if small else -1)
        with opening.open(path) as db:
            got[small] = (json.dumps(stats_command.collect(db), sort_keys=True), _tables(db), db.meta["stats"])
            threads = db.con.execute("SELECT current_setting('threads')").fetchone()[0]
            assert threads == (1 if small else DEFAULT_THREADS)  # one thread for a small trace
    assert got[True][0] == got[False][0]
    assert got[True][1].keys() == got[False][1].keys() and "thread_states" in got[True][1]
    for name in got[True][1]:
        assert got[True][1][name] == got[False][1][name], name
    assert got[True][2] == got[False][2]


def test_stats_on_a_small_trace_imports_neither_pyarrow_nor_numpy():
    """In a fresh interpreter, `roscope stats --json` on a small ROS 2 trace prints the
    statistics and has imported neither pyarrow nor numpy (0.3 s and 40 MB of start-up)."""
    code = ("import sys; from roscope import cli; rc = cli.main(['stats', sys.argv[1], '--json']); "
            "print([m for m in ('pyarrow', 'numpy', 'pandas') if m in sys.modules], file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(p.stdout)["summary"]["callback_runs"] > 0



def test_a_streamed_load_imports_neither_pyarrow_nor_numpy(tmp_path):
    """In a fresh interpreter, `roscope load` of a trace taken as large (the streaming
    path, `_Inserts`) writes the database without importing pyarrow or numpy, and the
    database holds the trace's callback runs (as many as callback_end events,
    babeltrace2's count)."""
    trace = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
    if not os.path.isdir(trace):
        pytest.skip(f"{trace} is not there")
    out = tmp_path / "big.duckdb"
    code = ("import sys; from roscope import cli, loading; loading.SMALL_TRACE_BYTES = -1; "
            "rc = cli.main(['load', sys.argv[1], '-o', sys.argv[2]]); "
            "print([m for m in ('pyarrow', 'numpy', 'pandas') if m in sys.modules], file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, trace, str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]"
    bt = subprocess.run(["babeltrace2", trace], capture_output=True, text=True, check=True).stdout
    ends = sum(1 for line in bt.splitlines() if " ros2:callback_end: " in line)
    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM callback_runs WHERE end_ts IS NOT NULL").fetchone()[0] == ends > 1000


def test_an_error_of_a_small_traces_build_is_the_error_of_the_streaming_path(tmp_path, monkeypatch):
    """A small trace is built in a thread while DuckDB starts (`loading`): a trace whose
    metadata is cut short still raises, from `open`, the error naming the metadata
    file that the streaming path raises (the CLI's one-line message), and leaves no
    thread behind."""
    import threading

    from roscope.errors import user_message

    trace = tmp_path / "cut"
    meta = copy_with_cut_metadata(os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds"), trace)
    errors = {}
    for small in (True, False):
        monkeypatch.setattr(loading, "SMALL_TRACE_BYTES", loading.SMALL_TRACE_BYTES if small else -1)
        threads = threading.active_count()
        with pytest.raises(Exception) as exc:
            opening.open(str(trace))
        assert threading.active_count() == threads
        errors[small] = (type(exc.value), user_message(exc.value))
    assert errors[True] == errors[False]
    assert errors[True][1].startswith(f"{meta}:") and "invalid metadata" in errors[True][1], errors[True]
