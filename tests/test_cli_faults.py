"""The CLI fault table of issue 15: each reproduction of its defect list, run as
the real `roscope` command, asserting the fixed behaviour: exit status, message,
and the files left behind (or not). Issue 31's `record` and `experiment` rows
(bad experiment files, numbers out of range, results of the wrong shape) are
at the end of the table.

Inputs are real: the shared traces, damaged copies of them made here, and
databases written by `roscope load` in the test. Oracles are independent of
roscope: babeltrace2 (bt2) event counts, file bytes, os.stat / os.lstat, the
DuckDB file read with DuckDB itself, process ids.

docs/reliability.md maps every case of the issue to the test that covers it
(here, or in tests/test_cli.py, tests/test_faults.py, tests/test_ctf_damaged.py,
tests/test_record.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import pytest

from tests.support import oracle
from tests.support.shared import TRACES

PINGPONG = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
AUTOWARE = os.path.join(TRACES, "ros2", "autoware-carla-galactic")
ROS1 = os.path.join(TRACES, "ros1", "nodes-pipeline-melodic")
CHANNEL = "ust/uid/1000/64-bit"  # pingpong's one channel directory

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")

#: What a crash, a panic or a bug report prints (never on a user error).
CRASH_TEXT = re.compile(r"Traceback \(most recent call last\)|panicked at|RUST_BACKTRACE|FATAL|[Aa]bort|"
                        r"[Ss]egmentation fault|core dumped|terminate called|nanobind|this is a bug in roscope")


# ----------------------------------------------------------------- helpers


def run(cmd: list[str], *args, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def assert_no_crash(p: subprocess.CompletedProcess | tuple, what: str = "roscope") -> None:
    rc, err = (p.returncode, p.stderr) if isinstance(p, subprocess.CompletedProcess) else p
    assert rc >= 0, f"{what} killed by signal {-rc}:\n{err[-3000:]}"
    assert rc != 70, f"{what} reported a bug (exit 70):\n{err[-3000:]}"
    m = CRASH_TEXT.search(err)
    assert not m, f"{what}: {m.group(0)!r} on stderr:\n{err[-3000:]}"


def md5(path) -> str:
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def whole_output(path) -> str:
    """What two complete runs' outputs share: the bytes (md5), but a report's digits left
    out. A report's standard deviations differ from run to run in their last digits (DuckDB
    sums a group's values on two threads in either order; e.g. 2624591.2918716213 and
    2624591.291871616), so its bytes do; a partial page lacks its end."""
    if not str(path).endswith(".html"):
        return md5(path)
    with open(path, "rb") as f:
        return hashlib.md5(re.sub(rb"[0-9]+", b"", f.read())).hexdigest()


def leftovers(d) -> list[str]:
    """Temporary or partial files of a write (roscope's `.NAME.*.tmp`, DuckDB's `.wal`) under `d`."""
    return sorted(os.path.relpath(p, d) for p in glob.glob(os.path.join(str(d), "**", "*"), recursive=True)
                  + glob.glob(os.path.join(str(d), "**", ".*"), recursive=True)
                  if re.search(r"\.tmp($|\.)|\.wal$", os.path.basename(p)))


def copy_trace(src: str, dst) -> str:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("converted"))
    for root, dirs, files in os.walk(dst):  # the shared originals are read-only
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return str(dst)


@functools.cache
def bt2_reading(path: str) -> oracle.Reading:
    """babeltrace2's reading of a trace: event counts by name, number of events."""
    if oracle.bt2 is None:
        pytest.skip("babeltrace2's Python bindings (the oracle) are needed")
    return oracle.Reading(path).run()


def bt2_runs(path: str) -> int:
    """Callback runs of a ROS 2 trace: its ros2:callback_start events, counted by babeltrace2."""
    return bt2_reading(path).counts["ros2:callback_start"]


def db_count(db, table: str = "callback_runs") -> int:
    """Rows of a table of a database file, read with DuckDB itself."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    finally:
        con.close()


def warnings_of(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith("roscope: warning: ")]


def warnings_but_unnamed(err: str) -> list[str]:
    """The warnings, but the one every verb gives for objects known only by their handles
    (pingpong's session started after some of its publishers: issue 28)."""
    return [x for x in warnings_of(err) if "known only by their handles" not in x]


@pytest.fixture(scope="module")
def pp_db(tmp_path_factory, roscope_cmd) -> str:
    """pingpong's database, written by `roscope load`; checked against babeltrace2."""
    out = tmp_path_factory.mktemp("ppdb") / "pingpong.duckdb"
    p = run(roscope_cmd, "load", PINGPONG, "-o", out)
    assert p.returncode == 0, p.stderr
    assert db_count(out) == bt2_runs(PINGPONG) == 44
    return str(out)


@pytest.fixture(scope="module")
def trunc_meta(tmp_path_factory) -> str:
    """pingpong with its metadata cut in half (the trace of the original crash at exit)."""
    trace = copy_trace(PINGPONG, tmp_path_factory.mktemp("truncmeta") / "pingpong")
    meta = os.path.join(trace, CHANNEL, "metadata")
    os.truncate(meta, os.path.getsize(meta) // 2)
    return trace


def _edit_metadata(trace: str, old: bytes, new: bytes) -> None:
    meta = os.path.join(trace, CHANNEL, "metadata")
    data = open(meta, "rb").read()
    i = data.index(old)
    open(meta, "wb").write(data[:i] + new + data[i + len(old):])


# ----------------------------------------------------------------- the table


@dataclasses.dataclass
class Case:
    """One row of the fault table. `argv` items are formatted with {tmp} (the
    case's directory), {db} (a copy of pingpong's database in it), {pp}
    (pingpong), {trunc} (pingpong with truncated metadata), {ds} (with `dataset`)."""

    id: str
    argv: list[str]
    rc: int
    msg: str | None  # regex that stderr must match
    setup: Callable | None = None  # setup(tmp) before the run
    exist: tuple[str, ...] = ()  # paths under tmp that must exist afterwards
    absent: tuple[str, ...] = ()  # paths under tmp that must not exist afterwards
    check: Callable | None = None  # check(tmp, before) after the run; before = setup's return value
    env: dict | None = None  # environment variables for the run (values formatted like argv)
    dataset: bool = False  # {ds}: a copy of a dataset of two runs, a (pingpong) and b (caret end-to-end), in tmp/ds


def _dangling(tmp):
    os.symlink(tmp / "link-target.duckdb", tmp / "out.duckdb")


def _still_dangling(tmp, _):
    assert os.path.islink(tmp / "out.duckdb") and not os.path.exists(tmp / "out.duckdb")


def _fifo(tmp):
    os.mkfifo(tmp / "out.duckdb")


def _still_fifo(tmp, _):
    assert stat.S_ISFIFO(os.lstat(tmp / "out.duckdb").st_mode)


def _link_to_fifo(tmp):
    os.mkfifo(tmp / "fifo")
    os.symlink(tmp / "fifo", tmp / "out.duckdb")


def _link_and_fifo_kept(tmp, _):
    assert os.path.islink(tmp / "out.duckdb") and stat.S_ISFIFO(os.lstat(tmp / "fifo").st_mode)


def _directory(tmp):
    (tmp / "out.duckdb").mkdir()
    (tmp / "out.duckdb" / "keep.txt").write_text("mine\n")


def _directory_kept(tmp, _):
    assert (tmp / "out.duckdb" / "keep.txt").read_text() == "mine\n"


def _old_output(tmp):
    """An existing database at out.duckdb (the copy of pingpong's) and an empty directory."""
    shutil.copyfile(tmp / "db.duckdb", tmp / "out.duckdb")
    (tmp / "empty").mkdir()
    st = os.stat(tmp / "out.duckdb")
    return md5(tmp / "out.duckdb"), st.st_ino, st.st_mtime_ns


def _old_output_kept(tmp, before):
    st = os.stat(tmp / "out.duckdb")
    assert (md5(tmp / "out.duckdb"), st.st_ino, st.st_mtime_ns) == before


def _second_db(tmp):
    shutil.copyfile(tmp / "db.duckdb", tmp / "db2.duckdb")


def _truncated_db(tmp):
    os.truncate(tmp / "db.duckdb", 4096 + 100)
    return md5(tmp / "db.duckdb")


def _db_unchanged(tmp, before):
    assert md5(tmp / "db.duckdb") == before


def _bad_character(tmp):
    _edit_metadata(copy_trace(PINGPONG, tmp / "trace"), b"typealias", b"typeal@as")


def _not_utf8(tmp):
    _edit_metadata(copy_trace(PINGPONG, tmp / "trace"), b"typealias", b"typeal\xffas")


def _channel_without_metadata(tmp):
    chan = copy_trace(os.path.join(PINGPONG, CHANNEL), tmp / "chan")
    os.remove(os.path.join(chan, "metadata"))


# ----------------------------------------------------------------- issue 31: outputs, datasets, the other verbs

def _ds_file(table: str, run: str) -> str:
    return os.path.join("ds", table, f"run={run}", "part-0.parquet")


def _ds_delete(table: str, run: str):
    def setup(tmp):
        os.remove(tmp / _ds_file(table, run))
    return setup


def _ds_copy(src_table: str, src_run: str, table: str, run: str):
    """Replaces run `run`'s file of `table` by run `src_run`'s file of `src_table`."""
    def setup(tmp):
        shutil.copyfile(tmp / _ds_file(src_table, src_run), tmp / _ds_file(table, run))
    return setup


def _trace_copy(tmp):
    copy_trace(PINGPONG, tmp / "trace")
    return {os.path.relpath(p, tmp): md5(p) for p in glob.glob(str(tmp / "trace" / "**" / "*"), recursive=True)
            if os.path.isfile(p)}


def _trace_unchanged(tmp, before):
    now = {os.path.relpath(p, tmp): md5(p) for p in glob.glob(str(tmp / "trace" / "**" / "*"), recursive=True)
           if os.path.isfile(p)}
    assert now == before


def _db_kept(tmp):
    return md5(tmp / "db.duckdb")


def _sources(tmp):
    (tmp / "node.cpp").write_text("static int state;\nvoid on_message() { state = 1; }\n")
    (tmp / "deps.json").write_text("{}\n")
    return md5(tmp / "node.cpp"), md5(tmp / "deps.json")


def _sources_kept(tmp, before):
    assert (md5(tmp / "node.cpp"), md5(tmp / "deps.json")) == before


_MISSING = r"ds: run a: the files of table callback_runs are missing \(no Parquet file in \S*ds/callback_runs/run=a\)"
_SWAPPED = r"ds: run a: the files of table callback_runs \(\S*ds/callback_runs/run=a\) hold [\d,]+ rows, the run's entry counts [\d,]+"
_SCHEMA = r"ds/callback_runs/run=a/part-0\.parquet: not roscope's table callback_runs \(run a\): its columns are callback_id, "
_REDO = r"load the run again with --force \(roscope load TRACE --dataset \S*ds --run-id a --force\)"
ISSUE_31_OUTPUTS_AND_DATASETS = [
    # item 10: tracebacks where a one-line error is due
    # issue 43: the one --window parser (roscope.numbers.window), at parse time: exit 2
    Case("report-window-1e309", ["report", "{db}", "--window", "1e309:2", "-o", "{tmp}/r.html"], 2,
         r"argument --window: '1e309:2': '1e309' is out of range: a time from 0 to 1e\+09 s from the trace's start",
         absent=("r.html",)),
    Case("load-dataset-recorded-at-9999", ["load", "{pp}", "--dataset", "{tmp}/new", "--recorded-at", "9999-12-31T23:59:59"],
         1, r"recorded time '9999-12-31T23:59:59': out of range; give a time from 1970-01-01 to 2262-04-11", absent=("new",)),
    Case("spark-stats-bogus-master", ["spark", "stats", "{ds}", "--master", "bogus://x"], 1,
         r"--master 'bogus://x': not a Spark master URL", dataset=True),
    Case("dataset-stats-wrong-schema", ["dataset", "stats", "{ds}"], 1, _SCHEMA, _ds_copy("callbacks", "a", "callback_runs", "a"),
         dataset=True),
    # item 11: nonsense accepted silently
    # issue 43: every number option through roscope.numbers, where it is parsed (exit 2)
    Case("trend-threshold-minus-1", ["trend", "{ds}", "--metric", "callback:.", "--threshold=-1"], 2,
         r"argument --threshold: '-1' is out of range: give a share \(0\.1 is 10 %\) from 0 to 1000000", dataset=True),
    Case("trend-threshold-nan", ["trend", "{ds}", "--metric", "callback:.", "--threshold", "nan"], 2,
         r"argument --threshold: 'nan' is not a number: give a share", dataset=True),
    # item 12: a damaged dataset is an error naming the run and the file, in every verb that opens one
    *[Case(f"{verb}-{what}", [*argv], 1, msg + ".*" + _REDO, setup, dataset=True)
      for verb, argv in (("dataset-stats", ["dataset", "stats", "{ds}"]), ("dataset-runs", ["dataset", "runs", "{ds}"]),
                         ("trend", ["trend", "{ds}", "--metric", "topic:."]), ("spark-stats", ["spark", "stats", "{ds}"]),
                         ("stats-run", ["stats", "{ds}", "--run", "a"]), ("why-run", ["why", "{ds}", "--run", "a"]),
                         ("report-run", ["report", "{ds}", "--run", "a", "-o", "{tmp}/r.html"]))
      for what, msg, setup in (("file-deleted", _MISSING, _ds_delete("callback_runs", "a")),
                               ("file-swapped", _SWAPPED, _ds_copy("callback_runs", "b", "callback_runs", "a")))],
    Case("dataset-runs-entry-swapped", ["dataset", "runs", "{ds}"], 1,
         r"ds: run a: \S*ds/runs/run=a/part-0\.parquet holds the entry of run 'b'", _ds_copy("runs", "b", "runs", "a"),
         dataset=True),
    # item 14: --force never destroys an input
    Case("report-db-onto-itself-force", ["report", "{db}", "-o", "{db}", "--force"], 1,
         r"db\.duckdb: is the input \S*db\.duckdb; roscope never writes over what it reads", _db_kept, check=_db_unchanged),
    Case("load-o-stream-file-of-its-trace", ["load", "{tmp}/trace", "-o", "{tmp}/trace/" + CHANNEL + "/ros2_0", "--force"], 1,
         r"ros2_0: is inside the input \S*trace; roscope never writes over what it reads", _trace_copy, check=_trace_unchanged),
    Case("export-onto-its-database-force", ["export", "{db}", "--perfetto", "{db}", "--force"], 1,
         r"db\.duckdb: is the input", _db_kept, check=_db_unchanged),
    Case("deps-o-onto-its-source-force", ["deps", "{tmp}/node.cpp", "-o", "{tmp}/node.cpp", "--force"], 1,
         r"node\.cpp: is the input \S*node\.cpp", _sources, check=_sources_kept),
    # item 1: deps -o needed no --force
    Case("deps-o-exists-no-force", ["deps", "{tmp}/node.cpp", "-o", "{tmp}/deps.json"], 1,
         r"deps\.json: already exists \(roscope never overwrites; pass --force to replace it\)", _sources, check=_sources_kept),
    # item 16
    Case("why-path-99", ["why", "{db}", "--from", ".", "--to", ".", "--path", "99"], 1,
         r"--path 99: no such path among the data flows from '\.' to '\.'; their paths are 0, 1, 2, "),
    Case("trend-bad-regex", ["trend", "{ds}", "--metric", "topic:a{{2,1}}"], 1,
         r"metric 'topic:a\{2,1\}': bad regular expression 'a\{2,1\}': invalid repetition count range", dataset=True),
    Case("report-empty-output", ["report", "{db}", "-o", ""], 1, r"the output path is empty: give the HTML file to write"),
    Case("export-empty-output", ["export", "{db}", "--perfetto", ""], 1, r"the output path is empty"),
    Case("deps-empty-output", ["deps", "{tmp}/node.cpp", "-o", ""], 1, r"the output path is empty", _sources),
    # the other verbs' rows
    Case("info-empty-path", ["info", ""], 1, r"an input path is empty"),
    Case("info-missing-path", ["info", "{tmp}/nothing"], 1, r"nothing: no such file or directory"),
    Case("export-missing-directory", ["export", "{db}", "--perfetto", "{tmp}/no/x.pftrace"], 1,
         r"x\.pftrace: the directory \S+/no does not exist"),
    Case("why-bad-callback-regex", ["why", "{db}", "--callback", "("], 2,
         r"argument --callback: bad regular expression '\(': unclosed group"),
    Case("dataset-stats-not-a-dataset", ["dataset", "stats", "{tmp}"], 1, r"not a roscope dataset \(no roscope-dataset\.json"),
    Case("dataset-runs-no-such-run", ["dataset", "runs", "{ds}", "--runs", "zz"], 1, r"no run matches 'zz' \(runs: a, b\)",
         dataset=True),
    Case("spark-flow-bogus-master", ["spark", "flow", "{ds}", "--from", ".", "--to", ".", "--master", "bogus://x"], 1,
         r"--master 'bogus://x': not a Spark master URL", dataset=True),
    Case("spark-flow-file-deleted", ["spark", "flow", "{ds}", "--from", ".", "--to", "."], 1, _MISSING,
         _ds_delete("callback_runs", "a"), dataset=True),
    Case("experiment-list-missing-directory", ["experiment", "list", "{tmp}/nothing"], 1, r"nothing: not a directory"),
    Case("record-stop-no-such-recording", ["record", "stop", "--name", "nothing"], 1,
         r"no active recording named nothing \(active: none\)", env={"XDG_STATE_HOME": "{tmp}/state"}),
    Case("record-o-a-file", ["record", "-o", "{tmp}/db.duckdb", "--", "true"], 1,
         r"output \S+db\.duckdb exists and is not a directory; refusing to overwrite it", _db_kept, check=_db_unchanged),
    Case("spark-load-dataset-inside-its-trace", ["spark", "load", "{tmp}/trace", "--dataset", "{tmp}/trace/ds"], 1,
         r"ds: is inside the input \S*trace", _trace_copy, check=_trace_unchanged),
]


CASES = [
    # item 2: `load --force` destroys things
    Case("load-force-dangling-symlink", ["load", "{pp}", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"out\.duckdb: is a symbolic link", _dangling, absent=("link-target.duckdb",), check=_still_dangling),
    Case("load-dangling-symlink", ["load", "{pp}", "-o", "{tmp}/out.duckdb"], 1,
         r"out\.duckdb: is a symbolic link", _dangling, absent=("link-target.duckdb",), check=_still_dangling),
    Case("load-force-fifo", ["load", "{pp}", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"out\.duckdb: exists and is not a regular file", _fifo, check=_still_fifo),
    Case("load-force-symlink-to-fifo", ["load", "{pp}", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"out\.duckdb: is a symbolic link", _link_to_fifo, check=_link_and_fifo_kept),
    Case("load-force-directory", ["load", "{pp}", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"out\.duckdb: exists and is not a regular file", _directory, check=_directory_kept),
    Case("load-force-failing-build-keeps-old", ["load", "{tmp}/empty", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"empty: no CTF trace found", _old_output, check=_old_output_kept),
    Case("load-force-bad-metadata-keeps-old", ["load", "{trunc}", "-o", "{tmp}/out.duckdb", "--force"], 1,
         r"/metadata\b", _old_output, check=_old_output_kept),
    Case("load-exists-no-force", ["load", "{pp}", "-o", "{tmp}/out.duckdb"], 1,
         r"out\.duckdb: already exists .*--force", _old_output, check=_old_output_kept),
    # item 6: `-o` in a missing directory, or under a file
    Case("load-missing-directory", ["load", "{pp}", "-o", "{tmp}/no/such.duckdb"], 1,
         r"such\.duckdb: the directory \S+/no does not exist", absent=("no",)),
    Case("load-parent-is-a-file", ["load", "{pp}", "-o", "{tmp}/db.duckdb/x.duckdb"], 1,
         r"x\.duckdb: \S+/db\.duckdb is not a directory"),
    Case("load-empty-output", ["load", "{pp}", "-o", ""], 1, r"the output path is empty"),
    # item 6: a corrupt or truncated database
    Case("stats-truncated-db", ["stats", "{tmp}/db.duckdb"], 1, r"db\.duckdb: corrupt or truncated database",
         _truncated_db, check=_db_unchanged),
    Case("executor-truncated-db", ["executor", "{tmp}/db.duckdb"], 1, r"db\.duckdb: corrupt or truncated database",
         _truncated_db, check=_db_unchanged),
    Case("executor-store-truncated-db", ["executor", "--store", "{tmp}/db.duckdb"], 1,
         r"db\.duckdb: corrupt or truncated database", _truncated_db, check=_db_unchanged),
    Case("flow-truncated-db", ["flow", "{tmp}/db.duckdb", "--from", ".", "--to", "."], 1,
         r"db\.duckdb: corrupt or truncated database", _truncated_db, check=_db_unchanged),
    # item 13: unbounded numbers
    Case("dump-n-negative", ["dump", "-n", "-1", "{pp}"], 2, r"--limit: -1 is out of range"),
    Case("dump-n-huge", ["dump", "-n", "99999999999999999999999", "{pp}"], 2,
         r"--limit: 99999999999999999999999 is out of range"),
    Case("flow-message-huge", ["flow", "{db}", "--message", "99999999999999999999999"], 2,
         r"--message: 99999999999999999999999 is out of range"),
    Case("flow-message-negative", ["flow", "{db}", "--message", "-1"], 2, r"--message: -1 is out of range"),
    Case("flow-message-with-from", ["flow", "{db}", "--message", "1", "--from", "."], 1,
         r"--message draws one message's graph: leave out --from and --to"),
    Case("stats-empty-path", ["stats", ""], 1, r"an input path is empty"),
    # item 14: minor
    Case("channel-without-metadata", ["stats", "{tmp}/chan"], 1,
         r"chan: no CTF trace found: \S+/chan holds CTF stream files, but its 'metadata' file is missing",
         _channel_without_metadata),
    Case("metadata-error-names-the-character", ["stats", "{tmp}/trace"], 1,
         r"64-bit/metadata:\d+: invalid metadata: unexpected character '@'", _bad_character),
    Case("metadata-error-not-utf8", ["stats", "{tmp}/trace"], 1,
         r"64-bit/metadata:\d+: invalid metadata: unexpected bytes that are not UTF-8", _not_utf8),
    Case("stats-two-databases", ["stats", "{db}", "{tmp}/db2.duckdb"], 1, r"2 databases given \(\S+db\.duckdb, \S+db2\.duckdb\)",
         _second_db),
    Case("stats-database-and-trace", ["stats", "{db}", "{pp}"], 1, r"db\.duckdb is a database and \S+ is not"),
    Case("flow-from-empty-regex", ["flow", "{db}", "--from", "", "--to", "^/pong$"], 0, None),
    Case("flow-bad-regex", ["flow", "{db}", "--from", "(", "--to", "."], 1, r"--from: bad regular expression '\('"),
    Case("stats-missing-path", ["stats", "{tmp}/nothing"], 1, r"nothing: no such file or directory"),
]


# ----------------------------------------------------------------- issue 31: record and experiment

#: An experiment file that is fine but for what each case puts in it (the system and driver never run).
EXPERIMENT = """\
system: {{start: [sleep, "30"]{system}}}
driver: {{command: [true]{driver}}}
scenarios:
  - {{name: s{scenario}}}
"""
#: A 414-byte YAML alias bomb (the issue's was 600): nine levels of nine aliases to the level below, 9 ** 9 strings once expanded.
ALIAS_BOMB = "a: &a [" + ", ".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


def _experiment(system: str = "", driver: str = "", scenario: str = "", prefix: str = "", raw: bytes | None = None):
    def setup(tmp):
        text = raw if raw is not None else (prefix + EXPERIMENT.format(system=system, driver=driver,
                                                                       scenario=scenario)).encode()
        (tmp / "exp.yaml").write_bytes(text)
    return setup


def _results(manifest=None, result=None, breaking=None):
    """A results directory `run` holding what the case gives (JSON-encoded) in its files."""
    def setup(tmp):
        run = tmp / "run"
        (run / "trials" / "s_001").mkdir(parents=True)
        man = {"experiment": {"name": "e", "digest": "x"}, "state": "complete"} if manifest is None else manifest
        (run / "manifest.json").write_text(json.dumps(man))
        res = {"trial_id": "s_001", "condition": "s", "scenario": "s", "status": "success", "metrics": {"t": 1.0}}
        (run / "trials" / "s_001" / "result.json").write_text(json.dumps(res if result is None else result))
        if breaking is not None:
            (run / "breaking_points.json").write_text(json.dumps(breaking))
    return setup


def _recording(manifest):
    def setup(tmp):
        (tmp / "rec").mkdir()
        (tmp / "rec" / "roscope-manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return setup


def _state_file(text: str):
    """A state file of `record` that roscope did not write (left alone by `recover`, which says why)."""
    def setup(tmp):
        d = tmp / "state" / "roscope" / "record"
        d.mkdir(parents=True)
        (d / "x.json").write_text(text)
        return text
    return setup


def _state_file_kept(tmp, text):
    assert (tmp / "state" / "roscope" / "record" / "x.json").read_text() == text


_STATE = {"XDG_STATE_HOME": "{tmp}/state"}   # `record recover` looks only at this case's recordings
_RUN = ["experiment", "run", "{tmp}/exp.yaml", "-o", "{tmp}/run"]
_NCPU = len(os.sched_getaffinity(0))

CASES += [
    # item 7: an alias bomb is refused at once; no results directory is made
    Case("experiment-alias-bomb", _RUN, 1, r"exp\.yaml: holds \d{9,} values once its YAML aliases \(\*name\) are expanded",
         _experiment(prefix=ALIAS_BOMB), absent=("run",)),
    # item 10: values the kernel cannot pass, wrong types, non-UTF-8
    Case("experiment-nul-in-env-value", _RUN, 1, r"exp\.yaml: system\.env\.A: contains a NUL character",
         _experiment(system=', env: {A: "x\\0y"}'), absent=("run",)),
    Case("experiment-equals-in-env-key", _RUN, 1, r"exp\.yaml: driver\.env: 'A=B' is not a variable name",
         _experiment(driver=', env: {"A=B": "1"}'), absent=("run",)),
    Case("experiment-env-as-a-list", _RUN, 1, r"exp\.yaml: driver\.env: expected a mapping of NAME: value, got list",
         _experiment(driver=", env: [A=1]"), absent=("run",)),
    Case("experiment-nan-sweep-level", _RUN, 1,
         r"exp\.yaml: scenarios\[0\]\.sweep\.levels\[1\]: expected a finite number, got nan",
         _experiment(scenario=", cpu_load: {}, sweep: {param: cpu_load.load, levels: [10, .nan]}"), absent=("run",)),
    Case("experiment-inf-sweep-level", _RUN, 1,
         r"exp\.yaml: scenarios\[0\]\.sweep\.levels\[0\]: expected a finite number, got inf",
         _experiment(scenario=", msg_load: {}, sweep: {param: msg_load.rate, levels: [.inf]}"), absent=("run",)),
    Case("experiment-not-utf8", _RUN, 1, r"exp\.yaml: not UTF-8 text \(byte 0xff at offset 24\)",
         _experiment(raw=b"system: {start: [sleep, \xff]}\n"), absent=("run",)),
    # item 11: numbers that must be finite and in range
    Case("experiment-driver-timeout-nan", _RUN, 1, r"exp\.yaml: driver\.timeout: expected a finite number, got nan",
         _experiment(driver=", timeout: .nan"), absent=("run",)),
    Case("experiment-ready-timeout-nan", _RUN, 1, r"exp\.yaml: system\.ready\.timeout: expected a finite number, got nan",
         _experiment(system=", ready: {timeout: .nan}"), absent=("run",)),
    Case("experiment-cpuset-level-0", _RUN, 1, r"exp\.yaml: scenarios\[0\]\.sweep\.levels\[0\]: 0 is out of range \[1, ",
         _experiment(scenario=", cpuset: {}, sweep: {param: cpuset.cpus, levels: [0, 1]}"), absent=("run",)),
    Case("experiment-cpuset-level-above-cpus", _RUN, 1,
         rf"exp\.yaml: scenarios\[0\]\.sweep\.levels\[1\]: a cpuset of {_NCPU + 1} CPUs, but roscope may use {_NCPU} CPUs",
         _experiment(scenario=f", cpuset: {{}}, sweep: {{param: cpuset.cpus, levels: [1, {_NCPU + 1}]}}"), absent=("run",)),
    *[Case(f"experiment-compare-alpha-{a}", ["experiment", "compare", "{tmp}", "{tmp}", f"--alpha={a}"], 2,
           r"argument --alpha: '\S+' is (out of range|not a number): give a significance level between 0 and 1, exclusive")
      for a in ("0", "-1", "2", "nan")],
    Case("load-dataset-config-nan", ["load", "{pp}", "--dataset", "{tmp}/ds", "--config", "k=NaN"], 1,
         r"--config 'k=NaN': the value is not a finite number", absent=("ds",)),
    Case("load-dataset-config-1e999", ["load", "{pp}", "--dataset", "{tmp}/ds", "--config", "k=1e999"], 1,
         r"--config 'k=1e999': the value is not a finite number", absent=("ds",)),
    # item 10: results of the wrong shape
    Case("experiment-report-result-a-list", ["experiment", "report", "{tmp}/run"], 1,
         r"s_001/result\.json: not a trial result of roscope experiment \(a list, not an object\)", _results(result=[])),
    Case("experiment-report-metrics-a-list", ["experiment", "report", "{tmp}/run"], 1,
         r"result\.json: not a trial result of roscope experiment: 'metrics' is a list, not an object of numbers",
         _results(result={"trial_id": "s_001", "condition": "s", "scenario": "s", "status": "success", "metrics": [1]})),
    Case("experiment-report-manifest-a-list", ["experiment", "report", "{tmp}/run"], 1,
         r"run/manifest\.json: not the manifest of an experiment run", _results(manifest=[1, 2])),
    Case("experiment-report-breaking-points-text", ["experiment", "report", "{tmp}/run"], 1,
         r"breaking_points\.json: not the breaking points of roscope experiment", _results(breaking={"s": "x"})),
    Case("experiment-compare-status-a-number", ["experiment", "compare", "{tmp}/run", "{tmp}/run"], 1,
         r"result\.json: not a trial result of roscope experiment: 'status' is a number, not text",
         _results(result={"trial_id": "s_001", "condition": "s", "scenario": "s", "status": 3, "metrics": {}})),
    Case("record-recover-manifest-a-list", ["record", "recover", "--kill-children", "{tmp}/rec"], 1,
         r"rec/roscope-manifest\.json: not a manifest of roscope record: a JSON list, not an object",
         _recording([]), env=_STATE),
    Case("record-recover-kernel-text", ["record", "recover", "{tmp}/rec"], 1,
         r"roscope-manifest\.json: not a manifest of roscope record: 'kernel' is str, not an object",
         _recording({"state": "recording", "kernel": "perf"}), env=_STATE),
    Case("record-recover-owner-a-number", ["record", "recover", "{tmp}/rec"], 1,
         r"not a manifest of roscope record: 'owner' is int, not an object",
         _recording({"state": "recording", "owner": 12}), env=_STATE),
    Case("record-recover-not-json", ["record", "recover", "{tmp}/rec"], 1,
         r"cannot read the manifest \S+rec/roscope-manifest\.json", _recording("{"), env=_STATE),
    *[Case(f"record-recover-state-file-{n}", ["record", "recover", "--kill-children"], 0, None, _state_file(text),
           env=_STATE, check=_state_file_kept) for n, text in (("output-a-number", '{"name": "x", "output": 5}'),
                                                            ("no-output", '{"name": "x"}'), ("a-list", "[1]"))],
    # item 16
    Case("record-recover-help", ["record", "recover", "--help"], 0, None),
    *ISSUE_31_OUTPUTS_AND_DATASETS,
]


@pytest.fixture(scope="module")
def pp_ds(tmp_path_factory, roscope_cmd) -> str:
    """A dataset of two runs written by `roscope load --dataset`: a (pingpong) and b (caret end-to-end)."""
    ds = tmp_path_factory.mktemp("ppds") / "ds"
    for trace, rid in ((PINGPONG, "a"), (E2E, "b")):
        p = run(roscope_cmd, "load", trace, "--dataset", ds, "--run-id", rid)
        assert p.returncode == 0, p.stderr
    return str(ds)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault_table(case: Case, tmp_path, pp_db, trunc_meta, roscope_cmd, request):
    shutil.copyfile(pp_db, tmp_path / "db.duckdb")
    if case.dataset:
        shutil.copytree(request.getfixturevalue("pp_ds"), tmp_path / "ds")
    before = case.setup(tmp_path) if case.setup else None
    ctx = {"tmp": str(tmp_path), "db": str(tmp_path / "db.duckdb"), "pp": PINGPONG, "trunc": trunc_meta,
           "ds": str(tmp_path / "ds")}
    env = dict(os.environ, **{k: v.format_map(ctx) for k, v in case.env.items()}) if case.env else None
    p = run(roscope_cmd, *(a.format_map(ctx) for a in case.argv), timeout=120, env=env)
    assert_no_crash(p, case.id)
    assert p.returncode == case.rc, f"exit status {p.returncode}, expected {case.rc}; stderr:\n{p.stderr}"
    if case.rc == 1:
        errors = [x for x in p.stderr.splitlines() if x.startswith("roscope: error: ")]
        assert len(errors) == 1, p.stderr
        assert not p.stdout, p.stdout
    if case.rc == 2:
        assert not p.stdout and p.stderr.startswith("usage: "), p.stderr
    if case.msg:
        assert re.search(case.msg, p.stderr), f"{case.msg!r} not in stderr:\n{p.stderr}"
    if case.rc == 0:
        assert "error" not in p.stderr, p.stderr
    for rel in case.exist:
        assert os.path.lexists(tmp_path / rel), rel
    for rel in case.absent:
        assert not os.path.lexists(tmp_path / rel), f"{rel} was created"
    assert leftovers(tmp_path) == []
    if case.check:
        case.check(tmp_path, before)


def test_trend_takes_the_selector_syntax_the_docs_promise(pp_ds, roscope_cmd):
    r"""Issue 31 item 16, then issue 40: `trend`'s callback: and topic: regexes are
    roscope.selector's, compiled by roscope.regex (Rust's regex syntax, the one of `check`,
    `why --callback` and `flow`), checked before any run is read. In pingpong (run a) the
    topics are /ping, /pong and ROS's own: `/pi.g` matches /ping; `^/\pL{4}$` (four
    letters) is /ping and /pong together; `\Q..\E` (RE2 only) is refused naming the metric.
    A callback: metric searches the callback's label, `node topic-or-timer symbol`:
    `^/ping ` is every callback of the node /ping, not pong's subscription to /ping."""
    def count(metric: str) -> dict:
        p = run(roscope_cmd, "trend", pp_ds, "--metric", metric, "--json")
        assert p.returncode == 0, p.stderr
        return {r["run_id"]: r["count"] for r in json.loads(p.stdout)["runs"]}

    ping, pong = count("topic:^/ping$")["a"], count("topic:^/pong$")["a"]
    assert ping > 0 and pong > 0
    assert count(r"topic:/pi.g")["a"] == ping
    assert count(r"topic:^/\pL{4}$")["a"] == ping + pong
    p = run(roscope_cmd, "trend", pp_ds, "--metric", r"topic:\Q/pi.g\E", "--json")
    assert p.returncode == 1 and p.stdout == ""
    assert r"metric 'topic:\\Q/pi.g\\E': bad regular expression" in p.stderr, p.stderr
    # the node's complete callback runs (bt2: a callback_start then the callback_end of the same
    # callback on its thread, per process: ping runs the node /ping alone), not also pong's
    # subscription to /ping: a label, not its parts one by one
    runs: dict = {}
    open_: dict = {}
    for ev in oracle.Reading(PINGPONG).events():
        ctx = ev["context"]
        key = (ctx.get("procname"), ctx.get("vtid"))
        if ev["name"] == "ros2:callback_start":
            open_.setdefault(key, []).append(ev["payload"]["callback"])
        elif ev["name"] == "ros2:callback_end" and open_.get(key) and open_[key][-1] == ev["payload"]["callback"]:
            open_[key].pop()
            runs[key[0]] = runs.get(key[0], 0) + 1
    assert count("callback:^/ping ")["a"] == runs["ping"]
    assert count("callback:^/pong ")["a"] == runs["pong"]
    assert count("callback:.")["a"] == runs["ping"] + runs["pong"]


# ----------------------------------------------------------------- item 7: counted once


@pytest.mark.parametrize("second", [".", "ust", CHANNEL])
def test_stats_counts_a_trace_given_twice_once(second, roscope_cmd):
    """`roscope stats T T` (or T T/ust) counted 88 callback runs instead of 44."""
    p = run(roscope_cmd, "stats", "--json", PINGPONG, os.path.join(PINGPONG, second))
    assert_no_crash(p)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)["summary"]
    assert summary["callback_runs"] == bt2_runs(PINGPONG) == 44
    said = warnings_but_unnamed(p.stderr)
    assert len(said) == 1 and "read once" in said[0], p.stderr


def test_load_counts_a_trace_given_twice_once(tmp_path, roscope_cmd):
    out = tmp_path / "twice.duckdb"
    p = run(roscope_cmd, "load", PINGPONG, os.path.join(PINGPONG, "ust"), "-o", out)
    assert p.returncode == 0, p.stderr
    assert db_count(out) == bt2_runs(PINGPONG)
    assert len(warnings_but_unnamed(p.stderr)) == 1 and "read once" in p.stderr


def test_a_copied_stream_file_is_counted_once(tmp_path, roscope_cmd):
    """`cp ros2_0 ros2_0_copy` added its events again without a warning (babeltrace2 refuses such a trace).
    Every stream file is copied, so whichever holds the callback starts is doubled."""
    trace = copy_trace(PINGPONG, tmp_path / "pingpong")
    chan = os.path.join(trace, CHANNEL)
    streams = [n for n in os.listdir(chan) if re.fullmatch(r"ros2_\d+", n)]
    for n in streams:
        shutil.copyfile(os.path.join(chan, n), os.path.join(chan, f"{n}_copy"))
    p = run(roscope_cmd, "stats", "--json", trace)
    assert_no_crash(p)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["summary"]["callback_runs"] == bt2_runs(PINGPONG)
    said = warnings_but_unnamed(p.stderr)
    assert sorted(re.search(r"/(ros2_\d+_copy): holds the same stream as", x).group(1) for x in said) == \
        sorted(f"{n}_copy" for n in streams), p.stderr
    assert all("read once" in x for x in said)
    p = run(roscope_cmd, "info", "--json", trace)
    assert p.returncode == 0 and json.loads(p.stdout)["events"] == bt2_reading(PINGPONG).n_events == 864


def test_a_channel_without_metadata_is_reported(tmp_path, roscope_cmd):
    """ROS 1 folder (kernel + ust) whose UST metadata is gone: the UST channel was
    ignored silently; now a warning names it, and the kernel's events are all read."""
    folder = copy_trace(ROS1, tmp_path / "ros1")
    ust = os.path.join(folder, CHANNEL)
    os.remove(os.path.join(ust, "metadata"))
    p = run(roscope_cmd, "info", "--json", folder)
    assert_no_crash(p)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["events"] == bt2_reading(os.path.join(ROS1, "kernel")).n_events == 2260
    assert warnings_but_unnamed(p.stderr) == [f"roscope: warning: {ust}: holds CTF stream files, but no 'metadata' file: "
                                     "its streams are not read"]


# ----------------------------------------------------------------- item 6: concurrency


@pytest.mark.parametrize("force", [False, True], ids=["no-force", "force"])
def test_two_loads_to_one_file_at_once(force, tmp_path, roscope_cmd):
    """Two `load -o same.duckdb` started together (two traces): without --force one
    wins and the other is refused; with --force both succeed and the file is one of
    them, whole. Never a traceback, never a partial or temporary file."""
    out = tmp_path / "same.duckdb"
    flags = ["--force"] if force else []
    procs = [subprocess.Popen([*roscope_cmd, "load", t, "-o", str(out), *flags], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for t in (PINGPONG, E2E)]
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
    for r in results:
        assert_no_crash(r)
    codes = sorted(rc for rc, _ in results)
    if force:
        assert codes == [0, 0], results
    else:
        assert codes == [0, 1], results
        err = next(e for rc, e in results if rc == 1)
        assert re.search(r"same\.duckdb: (already exists|appeared while roscope was writing it)", err), err
    assert db_count(out) in {bt2_runs(PINGPONG), bt2_runs(E2E)}
    if not force:  # the winner's trace
        winner = (PINGPONG, E2E)[[rc for rc, _ in results].index(0)]
        assert db_count(out) == bt2_runs(winner)
    assert sorted(os.listdir(tmp_path)) == ["same.duckdb"]


def test_stats_while_load_writes(tmp_path, roscope_cmd):
    """`stats DB` while `load --force` replaces DB again and again: every stats run
    reads a whole database, the old one or the new one."""
    out = tmp_path / "run.duckdb"
    assert run(roscope_cmd, "load", PINGPONG, "-o", out).returncode == 0
    expected = {bt2_runs(PINGPONG), bt2_runs(E2E)}
    loads: list[tuple[int, str]] = []

    def loader():
        for t in (E2E, PINGPONG, E2E, PINGPONG):
            p = run(roscope_cmd, "load", t, "-o", out, "--force")
            loads.append((p.returncode, p.stderr))

    th = threading.Thread(target=loader)
    th.start()
    seen = []
    while th.is_alive() or not seen:
        p = run(roscope_cmd, "stats", "--json", out)
        assert_no_crash(p, "stats")
        assert p.returncode == 0, p.stderr
        seen.append(json.loads(p.stdout)["summary"]["callback_runs"])
    th.join()
    assert [rc for rc, _ in loads] == [0] * 4, loads
    assert len(seen) >= 2 and set(seen) <= expected, seen
    assert db_count(out) == bt2_runs(PINGPONG)
    assert os.listdir(tmp_path) == ["run.duckdb"]


@pytest.fixture(scope="module")
def aw_db(tmp_path_factory, roscope_cmd) -> str:
    """The Autoware trace's database: its `stats` text (150 kB) outgrows a pipe."""
    out = tmp_path_factory.mktemp("awdb") / "autoware.duckdb"
    p = run(roscope_cmd, "load", AUTOWARE, "-o", out)
    assert p.returncode == 0, p.stderr
    return str(out)


@contextlib.contextmanager
def stats_reading(cmd, db):
    """A real `roscope stats DB` holding DB open: its stdout is a pipe nobody reads."""
    p = subprocess.Popen([*cmd, "stats", db], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert p.stdout.read(1), "stats printed nothing"
        time.sleep(0.2)
        assert p.poll() is None, "stats finished: its output no longer outgrows the pipe"
        yield p
    finally:
        p.kill()
        p.wait()


VERB_STORE = {"executor": ["executor", "--store"], "flow": ["flow", "--from", "^/tf$", "--to", "^/tf$", "--store"]}


@pytest.mark.parametrize("verb", sorted(VERB_STORE))
def test_executor_or_flow_while_stats_reads(verb, aw_db, tmp_path, roscope_cmd):
    """Reading verbs read together; a verb that stores (--store) is refused while
    `stats` reads, with the reader's process id, and without calling it a writer."""
    db = str(tmp_path / "aw.duckdb")
    shutil.copyfile(aw_db, db)
    before = md5(db)
    with stats_reading(roscope_cmd, db) as reader:
        p = run(roscope_cmd, *VERB_STORE[verb][:-1], db)
        assert_no_crash(p, verb)
        assert p.returncode == 0, p.stderr
        p = run(roscope_cmd, *VERB_STORE[verb], db)
        assert_no_crash(p, f"{verb} --store")
    assert p.returncode == 1, p.stderr
    assert re.search(rf"aw\.duckdb: the database is locked by process {reader.pid} \(.*\), which has it open; ", p.stderr), \
        p.stderr
    assert "for writing" not in p.stderr
    assert md5(db) == before and os.listdir(tmp_path) == ["aw.duckdb"]


# ----------------------------------------------------------------- item 6: permissions


@contextlib.contextmanager
def as_other_user():
    """(argv prefix, directory) to run a command as a user who cannot write root's
    files: `setpriv` to nobody when running as root (root writes a 0444 file), else
    nothing. The directory is readable by that user and removed afterwards."""
    d = tempfile.mkdtemp(prefix="roscope-perm-")
    os.chmod(d, 0o755)
    try:
        if os.geteuid() != 0:
            yield [], d
        elif shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot test permissions")
        else:
            yield ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("verb", sorted(VERB_STORE))
def test_store_on_a_read_only_database(verb, pp_db, roscope_cmd):
    """`flow/executor --store` on a database file without write permission (chmod
    444): refused with the file's name; without --store the verb works; the file
    is unchanged."""
    with as_other_user() as (prefix, d):
        db = os.path.join(d, "ro.duckdb")
        shutil.copyfile(pp_db, db)
        os.chmod(db, 0o444)
        before = (md5(db), os.stat(db).st_mode)
        argv = VERB_STORE[verb] if verb == "executor" else ["flow", "--from", ".", "--to", ".", "--store"]
        p = run(prefix + roscope_cmd, *argv[:-1], db)
        assert_no_crash(p, verb)
        assert p.returncode == 0, p.stderr
        p = run(prefix + roscope_cmd, *argv, db)
        assert_no_crash(p, f"{verb} --store")
        assert p.returncode == 1, p.stderr
        assert p.stderr.strip() == f"roscope: error: {db}: cannot open the database: permission denied"
        assert (md5(db), os.stat(db).st_mode) == before
        assert os.listdir(d) == ["ro.duckdb"]


def test_load_into_an_unwritable_directory(roscope_cmd):
    """The message names the output the user gave (was: roscope's hidden temporary file)."""
    with as_other_user() as (prefix, d):
        locked = os.path.join(d, "locked")
        os.mkdir(locked, 0o555)
        os.chmod(locked, 0o555)
        p = run(prefix + roscope_cmd, "load", PINGPONG, "-o", os.path.join(locked, "run.duckdb"))
        assert_no_crash(p)
        assert p.returncode == 1, p.stderr
        assert p.stderr.strip() == f"roscope: error: {locked}/run.duckdb: cannot write in {locked}: Permission denied"
        assert os.listdir(locked) == []


# ----------------------------------------------------------------- item 6: SIGINT while tables are written


@pytest.mark.parametrize("phase, size", [(".wal", 0), (".wal", 1 << 20), (".wal", 2 << 20), ("", 256 << 10)],
                         ids=["first-table", "tables-1MiB", "tables-2MiB", "checkpoint"])
def test_sigint_while_load_writes_tables(phase, size, tmp_path, pp_db, roscope_cmd):
    """A real `load --force` of the Autoware trace over an old database, SIGINT sent
    while it writes its tables (the new database's log `run.duckdb.wal`, in its
    private directory `.run.duckdb.*.tmp/` beside the old one, grows past `size`:
    DuckDB scans Arrow tables, calling Python) or checkpoints them into the file
    (the new `run.duckdb` there grows): exit 130, no traceback, the old database
    untouched (bytes, inode), no partial, temporary or log file left."""
    out = tmp_path / "run.duckdb"
    shutil.copyfile(pp_db, out)
    before = (md5(out), os.stat(out).st_ino)
    proc = subprocess.Popen([*roscope_cmd, "load", AUTOWARE, "-o", str(out), "--force"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def writing() -> bool:
        for d in glob.glob(str(tmp_path / ".run.duckdb.*.tmp")):
            with contextlib.suppress(FileNotFoundError):
                if os.path.getsize(os.path.join(d, "run.duckdb" + phase)) > size:
                    return True
        return False

    deadline = time.monotonic() + 120
    while not writing():
        assert proc.poll() is None, f"load ended before writing its run.duckdb{phase}: {proc.stderr.read()}"
        assert time.monotonic() < deadline
        time.sleep(0.0005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert_no_crash((proc.returncode, err), "load")
    assert proc.returncode == 130, err
    assert (md5(out), os.stat(out).st_ino) == before
    assert os.listdir(tmp_path) == ["run.duckdb"]


# ----------------------------------------------------------------- issue 31 item 9: Ctrl-C mid-query

#: Verbs that ran DuckDB queries long enough on the Autoware trace to be interrupted in one
#: (argv; the database they read is {aw}, a copy of aw_db; {tmp} the case's directory).
CTRL_C = {
    "stats": ["stats", "{aw}"],
    "why": ["why", "{aw}"],
    "export": ["export", "{aw}", "--perfetto", "{tmp}/out.pftrace"],
    "report": ["report", "{aw}", "-o", "{tmp}/out.html"],
    "load-dataset": ["load", AUTOWARE, "--dataset", "{tmp}/ds", "--run-id", "aw"],
}


def _querying(pid: int, tmp) -> bool:
    """The process has its database open: DuckDB is running its queries (load --dataset:
    the run's model database exists in the dataset's temporary directory)."""
    if glob.glob(str(tmp / "ds" / ".tmp-aw-*" / ".model.duckdb")):
        return True
    with contextlib.suppress(OSError):
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(tmp / "aw.duckdb") for fd in os.listdir(f"/proc/{pid}/fd"))
    return False


def _start_querying(cmd, tmp) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _querying(proc.pid, tmp):
        assert proc.poll() is None, f"ended before its queries: {proc.stderr.read()}"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    return proc, time.monotonic()


@pytest.mark.slow
@pytest.mark.parametrize("verb", sorted(CTRL_C))
def test_ctrl_c_mid_query_exits_130(verb, aw_db, tmp_path, roscope_cmd):
    """Issue 31 item 9: Ctrl-C during a DuckDB query gave exit 70 ("RuntimeError: Query
    interrupted") in report, export, why, stats and load --dataset, or was swallowed
    (exit 0). A real run on the Autoware database is timed from the moment it has the
    database open (its queries begin) to its end; then runs get SIGINT at 15, 35, 55
    and 85 % of that time, each while still running: exit 130 (at 85 %, 0 if the work
    was done: then the output is there), no traceback or error line, no temporary file
    left, and the output absent or whole (the bytes of the uninterrupted run's, a report's
    but for its digits: `whole_output`; a dataset without the run or with all of it)."""
    shutil.copyfile(aw_db, tmp_path / "aw.duckdb")
    cmd = [*roscope_cmd, *(a.format(aw=tmp_path / "aw.duckdb", tmp=tmp_path) for a in CTRL_C[verb])]
    complete, spans = {}, []  # the whole output of an uninterrupted run (`whole_output`: the same every time)
    for _ in range(2):  # the shorter of two runs: the machine is shared
        proc, t0 = _start_querying(cmd, tmp_path)
        _, err = proc.communicate(timeout=300)
        spans.append(time.monotonic() - t0)
        assert proc.returncode == 0, err
        for f in ("out.pftrace", "out.html"):
            if os.path.exists(tmp_path / f):
                complete[f] = whole_output(tmp_path / f)
                os.remove(tmp_path / f)
        shutil.rmtree(tmp_path / "ds", ignore_errors=True)
    span = min(spans)
    before = sorted(os.listdir(tmp_path))
    signalled = 0
    for share in (0.15, 0.35, 0.55, 0.85):
        for f in complete:  # what a run that ended before its signal wrote
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp_path / f)
        shutil.rmtree(tmp_path / "ds", ignore_errors=True)
        proc, t0 = _start_querying(cmd, tmp_path)
        time.sleep(max(0.0, t0 + share * span - time.monotonic()))
        if proc.poll() is not None:  # ended already (this machine is shared): nothing to interrupt
            proc.communicate()
            continue
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        signalled += 1
        assert_no_crash((proc.returncode, err), f"{verb} at {share:.0%}")
        # Near its end the run may have finished its work: roscope ignores Ctrl-C while it exits
        # (an interrupt then would end it by the signal, not with an exit status), and its output is whole.
        late = proc.returncode == 0 and share > 0.8
        assert proc.returncode == 130 or late, f"{verb} interrupted at {share:.0%}: exit {proc.returncode}\n{err}"
        assert "error" not in err, err
        # The output is not there, or whole: an interrupt that came once it was renamed into place
        # (or that DuckDB swallowed in a query that finished) still exits 130.
        for f, whole in complete.items():
            assert os.path.exists(tmp_path / f) or not late, f"exit 0 without {f}"
            if os.path.exists(tmp_path / f):
                assert whole_output(tmp_path / f) == whole, f"{f}: a partial output"
                os.remove(tmp_path / f)
        assert sorted(n for n in os.listdir(tmp_path) if n != "ds") == [n for n in before if n != "ds"]
        assert leftovers(tmp_path) == []
        if verb == "load-dataset":  # no run, or the whole run
            if glob.glob(str(tmp_path / "ds" / "runs" / "run=*")):  # checked whole (dataset.verify), all its runs
                p = run(roscope_cmd, "dataset", "runs", tmp_path / "ds", "--json")
                assert p.returncode == 0, p.stderr
                assert [r["callback_runs"] for r in json.loads(p.stdout)] == [db_count(tmp_path / "aw.duckdb")]
            assert not [n for n in os.listdir(tmp_path / "ds") if n.startswith(".")]
            shutil.rmtree(tmp_path / "ds")
    assert signalled >= 3, f"only {signalled} of 4 runs were still running when interrupted"


def test_kill_9_during_load_dataset_leaves_nothing_to_trip_on(tmp_path, roscope_cmd, monkeypatch):
    """Issue 31 item 16: `kill -9` during `load --dataset` left its `.tmp-RUN-*` directory
    (a model database of the run) for the next run to trip on. A real `roscope load` of
    the Autoware trace is killed with SIGKILL once its run's model database exists: its
    private directory stays (nothing runs after SIGKILL). The next append, a real
    `roscope load` at once, leaves it (it is seconds old: it may be a live load's) and
    the dataset reads fine around it (`dataset runs` lists only the whole run); an append
    once it is older than a minute (dataset.TMP_MIN_AGE set to 0 here: its age is its
    ctime, which cannot be set back) removes it, and the dataset then holds no dot
    directory and the two whole runs, each with babeltrace2's callback count."""
    from roscope import dataset

    ds = tmp_path / "ds"
    proc = subprocess.Popen([*roscope_cmd, "load", AUTOWARE, "--dataset", str(ds), "--run-id", "aw"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not glob.glob(str(ds / ".tmp-aw-*" / ".model.duckdb")):
        assert proc.poll() is None, "the load ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.kill()
    assert proc.wait() == -signal.SIGKILL
    stale = glob.glob(str(ds / ".tmp-aw-*"))
    assert len(stale) == 1 and os.path.isdir(stale[0])

    p = run(roscope_cmd, "load", PINGPONG, "--dataset", ds, "--run-id", "pp")
    assert p.returncode == 0, p.stderr
    assert glob.glob(str(ds / ".tmp-aw-*")) == stale  # seconds old: left alone
    p = run(roscope_cmd, "dataset", "runs", ds, "--json")
    assert p.returncode == 0, p.stderr
    assert [(r["run_id"], r["callback_runs"]) for r in json.loads(p.stdout)] == [("pp", bt2_runs(PINGPONG))]

    monkeypatch.setattr(dataset, "TMP_MIN_AGE", 0)
    dataset.append(PINGPONG, str(ds), run_id="pp2")
    assert [n for n in os.listdir(ds) if n.startswith(".")] == []
    assert sorted((r["run_id"], r["callback_runs"]) for r in dataset.runs(str(ds))) == \
        [("pp", bt2_runs(PINGPONG)), ("pp2", bt2_runs(PINGPONG))]


# ----------------------------------------------------------------- item 11: escapes in flow and executor


@pytest.fixture(scope="module")
def esc_db(tmp_path_factory, roscope_cmd) -> str:
    """pingpong with ESC in the names of `ping` (node, process, topic /ping; same
    length, so every packet stays valid), checked with babeltrace2; and its database."""
    d = tmp_path_factory.mktemp("esc")
    trace = copy_trace(PINGPONG, d / "pingpong")
    for f in glob.glob(os.path.join(trace, CHANNEL, "ros2_*")):
        data = open(f, "rb").read()
        open(f, "wb").write(data.replace(b"ping\x00", b"p\x1bng\x00"))
    names = set()
    for ev in oracle.Reading(trace).events():
        names.update(v for v in {**ev.get("payload", {}), **ev.get("context", {})}.values()
                     if isinstance(v, str) and "\x1b" in v)
    assert {"p\x1bng", "/p\x1bng"} <= names
    p = run(roscope_cmd, "load", trace, "-o", d / "esc.duckdb")
    assert p.returncode == 0, p.stderr
    return str(d / "esc.duckdb")


@pytest.mark.parametrize("argv", [["executor"], ["flow", "--from", ".", "--to", "."]], ids=["executor", "flow"])
def test_text_output_escapes_trace_strings(argv, esc_db, roscope_cmd):
    p = run(roscope_cmd, *argv, esc_db)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout and "\x1b" not in p.stderr
    assert "/p\\x1bng" in p.stdout, p.stdout


# ----------------------------------------------------------------- item 3: error exits under CPU load


def test_error_exits_under_cpu_load(tmp_path, pp_db, trunc_meta, roscope_cmd):
    """Two busy processes take both cores while 30 `roscope` runs fail, 10 at a
    time: a trace with truncated metadata for load and stats (once 3 crashes in 30:
    SIGABRT/SIGSEGV at exit, `FATAL: exception not rethrown`), a missing path, a bad
    regex, a truncated database. Each exits 1 with one `roscope: error:` line."""
    bad_db = tmp_path / "bad.duckdb"
    shutil.copyfile(pp_db, bad_db)
    os.truncate(bad_db, 4096 + 100)
    runs = []
    for i in range(10):
        runs += [["stats", trunc_meta], ["load", trunc_meta, "-o", str(tmp_path / f"out{i}.duckdb")]]
    runs += [["stats", str(tmp_path / "missing")]] * 3 + [["load", str(tmp_path / "missing"), "-o", str(tmp_path / "m.duckdb")]]
    runs += [["flow", trunc_meta, "--from", "(", "--to", "."], ["flow", pp_db, "--from", ".", "--to", "[z-a]"]]
    runs += [["stats", str(bad_db)], ["executor", str(bad_db)]] * 2
    assert len(runs) == 30
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    results = []
    try:
        for k in range(0, len(runs), 10):
            wave = [(argv, subprocess.Popen([*roscope_cmd, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True)) for argv in runs[k:k + 10]]
            # pingpong's unnamed objects (issue 28) are warned of before any later error
            results += [(argv, p.wait(timeout=300), "".join(
                x for x in p.communicate()[1].splitlines(keepends=True) if "known only by their handles" not in x))
                for argv, p in wave]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    bad = [(argv, rc, err) for argv, rc, err in results
           if rc != 1 or CRASH_TEXT.search(err) or not err.startswith("roscope: error: ") or len(err.splitlines()) != 1]
    assert not bad, "\n".join(f"{' '.join(a)}: exit {rc}\n{e[-1500:]}" for a, rc, e in bad[:5])
    assert all("metadata" in err for argv, _, err in results if trunc_meta in argv and argv[0] != "flow")
    assert sorted(os.listdir(tmp_path)) == ["bad.duckdb"]


def test_duckdb_out_of_its_budget_is_a_user_error():
    """A query that needs more than DuckDB's budget (exact percentiles hold a group's
    values: 20M doubles in 64 MiB) is the user's to raise with --memory, not a bug."""
    import duckdb
    from roscope.errors import user_message

    con = duckdb.connect()
    con.execute("SET memory_limit = '64MiB'")
    con.execute("SET threads = 1")
    with pytest.raises(duckdb.OutOfMemoryException) as exc:
        con.execute("SELECT quantile_cont(random(), 0.5) FROM range(20000000)").fetchall()
    msg = user_message(exc.value)
    assert msg is not None and "--memory" in msg, msg


def test_a_step_out_of_its_budget_is_given_more_with_a_warning():
    """memory.within_memory (the kernel step, the scheduling analysis): the same
    query under 16 MiB runs out of it, is run again with the
    budget doubled until it fits, says so once per doubling, and gives the exact
    median of 0..N-1, (N - 1) / 2; the budget is put back afterwards."""
    import duckdb
    from roscope.memory import memory_limit, within_memory

    con = duckdb.connect()
    con.execute("SET memory_limit = '16MiB'")
    con.execute("SET threads = 1")
    n = 8_000_000
    with pytest.raises(duckdb.OutOfMemoryException):
        con.execute(f"SELECT quantile_cont(i::DOUBLE, 0.5) FROM range({n}) t(i)").fetchall()
    warnings: list[str] = []
    got = within_memory(con, lambda: con.execute(f"SELECT quantile_cont(i::DOUBLE, 0.5) FROM range({n}) t(i)").fetchall(),
                        warnings, "the median")
    assert got == [((n - 1) / 2,)]
    assert warnings and warnings[0] == ("the median: 16 MiB of memory were not enough; made with 32 MiB "
                                        "(--memory sets the budget)"), warnings
    assert all(f"{16 << k} MiB of memory were not enough; made with {32 << k} MiB" in w for k, w in enumerate(warnings))
    assert memory_limit(con)[1] == 16 << 20


def test_topic_statistics_fit_a_budget_their_one_statement_did_not(tmp_path):
    """`stats.topics` runs each part of a topic's row (publications, latencies,
    unmatched publications, takes, drops) as its own query. As one statement,
    DuckDB held every part's joins and aggregates at once: on 100M events that
    needed more than the 256 MiB default budget (`roscope stats` failed), and on
    the Autoware trace more than 24 MiB. The parts fit in 16 MiB, and the budget
    changes no value: the rows equal those under DuckDB's own budget (their values
    are checked against ground truth in test_caret_humble and test_cli)."""
    import roscope
    from roscope import stats

    db_path = str(tmp_path / "aw.duckdb")
    p = subprocess.run([sys.executable, "-m", "roscope", "load", AUTOWARE, "-o", db_path],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = {}
    for budget in (0, 16 << 20):
        with roscope.open(db_path) as db:
            db.limit_memory(budget) if budget else db.con.execute("RESET memory_limit")
            rows[budget] = stats.topics(db)
    assert len(rows[0]) > 100 and sum(r["publications"] for r in rows[0]) > 20_000
    assert rows[16 << 20] == rows[0]


def test_callback_and_topic_percentiles_beyond_the_budget_come_by_selection(tmp_path):
    """`stats.callbacks` (run durations) and `stats.topics` (delivery latencies) take
    their percentiles through percentiles.grouped: a callback with millions of runs
    never needs its runs whole in memory (quantile_cont), nor a sort of them. The real CARET
    end-to-end trace with its busiest callback's runs and its busiest topic's links
    each repeated to 6M: under 48 MiB every row, without a warning, equals the one
    quantile_cont gives under DuckDB's own budget. (48 MiB, not 32: the transport latency of
    issue 30 joins every link with its take, whose hash join alone needs more than 32.)"""
    import roscope
    from roscope import stats

    db_path = str(tmp_path / "e2e.duckdb")
    p = subprocess.run([sys.executable, "-m", "roscope", "load", os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds"),
                        "-o", db_path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    n = 6_000_000
    with roscope.open(db_path, read_only=False) as db:
        con = db.con
        [(cb, runs)] = con.execute("SELECT callback_id, count(*) FROM callback_runs WHERE end_ts IS NOT NULL "
                                   "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1").fetchall()
        [(topic, links)] = con.execute("SELECT topic, count(*) FROM links_info WHERE callback_start_ts IS NOT NULL "
                                       "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1").fetchall()
        [(span, top)] = con.execute("SELECT max(end_ts) - min(start_ts) + 1, max(run_id) FROM callback_runs").fetchall()
        # Copies shifted past the trace's end, with run ids of their own.
        con.execute("INSERT INTO callback_runs SELECT c.* REPLACE (run_id + k * $top AS run_id, start_ts + k * $span AS "
                    "start_ts, end_ts + k * $span AS end_ts) FROM callback_runs c, range(1, $k) t(k) "
                    "WHERE callback_id = $cb AND end_ts IS NOT NULL", {"top": top + 1, "span": span, "cb": cb, "k": n // runs})
        con.execute("INSERT INTO links SELECT l.* FROM links l JOIN (SELECT DISTINCT publication_id, run_id, topic, "
                    "callback_start_ts FROM links_info) i USING (publication_id, run_id), range(1, $k) t(k) "
                    "WHERE i.topic = $topic AND i.callback_start_ts IS NOT NULL", {"topic": topic, "k": n // links})
    rows, warned = {}, {}
    for budget in (0, 48 << 20):
        with roscope.open(db_path) as db:
            db.limit_memory(budget) if budget else db.con.execute("RESET memory_limit")
            rows[budget] = (stats.callbacks(db), stats.topics(db))
            warned[budget] = [w for w in db.warnings if "statistics" in w]
    assert warned == {0: [], 48 << 20: []}
    callbacks, topics = rows[0]
    assert {r["callback_id"]: r["count"] for r in callbacks}[cb] == runs * (n // runs) > n // 2
    assert {r["topic"]: r["deliveries"] for r in topics}[topic] == links * (n // links) > n // 2
    # Equal, but for standard deviations: DuckDB sums their squares in another order.
    for small, whole in zip(rows[48 << 20], rows[0]):
        assert len(small) == len(whole) > 1
        for a, b in zip(small, whole):
            assert list(a) == list(b)
            inexact = [k for k in a if k in ("std_ns", "lat_std_ns", "transport_std_ns", "period_jitter_ns") and a[k] is not None]
            assert {k: v for k, v in a.items() if k not in inexact} == {k: v for k, v in b.items() if k not in inexact}
            assert all(a[k] == pytest.approx(b[k], rel=1e-12) for k in inexact)


def test_percentiles_beyond_the_budget_come_by_selection():
    """percentiles.grouped (per-path and per-component statistics of `roscope flow`):
    exact percentiles with quantile_cont hold a group's values whole, so a path of
    tens of millions of flows needed gigabytes (2.5 GB peak at 144M events), and
    then a sort spilled to disk (minutes). By selection they need little: 8M values
    in one group under 16 MiB, where quantile_cont runs out of memory; no warning,
    and the percentiles of 0..n-1 computed by hand, f * (n - 1)."""
    import duckdb
    import roscope
    from roscope import percentiles
    from roscope.memory import memory_limit

    n = 8_000_000
    with roscope.open(PINGPONG) as db:
        db.con.execute(f"CREATE TEMP TABLE v AS SELECT 0 AS g, (i * 7919) % {n} AS x FROM range({n}) t(i)")
        db.limit_memory(16 << 20)
        with pytest.raises(duckdb.OutOfMemoryException):
            db.records(f"SELECT g, {percentiles.aggregates('x', quartiles=True)} FROM v GROUP BY g")
        db.meta["warnings"] = []
        [row] = percentiles.grouped(db, "SELECT g, x FROM v", ["g"], quartiles=True, what="the test's group")
        assert db.meta["warnings"] == []
        assert memory_limit(db.con)[1] == 16 << 20
    assert list(row) == ["g", "count", *percentiles.keys(quartiles=True)]
    assert (row["count"], row["min_ns"], row["max_ns"], row["mean_ns"]) == (n, 0, n - 1, (n - 1) / 2)
    for name in ("p25", "p50", "p75", "p90", "p99"):
        assert row[f"{name}_ns"] == pytest.approx(int(name[1:]) / 100 * (n - 1), rel=1e-15, abs=0), name


def test_percentiles_by_selection_are_those_of_quantile_cont():
    """The percentiles by selection are DuckDB quantile_cont's, bit for bit, on the data
    flows of the real Autoware trace: per path (every latency part) and per
    component, groups keyed by columns that may be null (a timer's topic)."""
    import roscope
    from roscope import flow, percentiles

    with roscope.open(AUTOWARE) as db:
        paths, components = flow.sources(flow.data_flows(db, ".", "."))
        sources = [(src, ["path_id"], "") for src in paths] + list(components.values())
        nulls = 0
        for source, by, extra in sources:
            fast = db.records(f"SELECT {', '.join(by)}, {percentiles.aggregates('x', quartiles=True)}"
                              f"{', ' + extra if extra else ''} FROM ({source}) GROUP BY ALL")
            slow = percentiles.grouped(db, source, by, quartiles=True, extra=extra)
            key = lambda r, by=by: tuple(str(r[c]) for c in by)  # noqa: E731
            fast, slow = sorted(fast, key=key), sorted(slow, key=key)
            assert len(fast) == len(slow) > 1
            for a, b in zip(fast, slow):
                assert list(a) == list(b)
                assert {k: v for k, v in a.items() if k != "std_ns"} == {k: v for k, v in b.items() if k != "std_ns"}
                assert a["std_ns"] == (None if b["std_ns"] is None else pytest.approx(b["std_ns"], rel=1e-12))
            nulls += sum(1 for r in slow if any(r[c] is None for c in by))
    assert nulls > 0


def test_private_directories_of_killed_processes_are_removed(tmp_path, monkeypatch):
    """A roscope killed with SIGKILL (the OOM killer's signal) cannot remove its private
    directory, which may hold a model file of gigabytes: the next roscope removes it,
    and leaves those of live processes (each holds its directory's lock). Two real
    processes open a trace in a private $TMPDIR; one is killed, one keeps running."""
    from roscope import memory

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
    monkeypatch.setattr(memory, "PRIVATE_MIN_AGE", 0)  # these directories are seconds old
    code = ("import roscope, sys, time; d = roscope.open(sys.argv[1], memory=1 << 30); "
            "open(d.private_dir + '/model.part', 'wb').write(b'x' * 4096); print(d.private_dir, flush=True); time.sleep(600)")
    procs = [subprocess.Popen([sys.executable, "-c", code, PINGPONG], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp)}) for _ in range(2)]
    try:
        dirs = [p.stdout.readline().strip() for p in procs]
        assert all(d.startswith(str(tmp)) and os.path.isdir(d) for d in dirs), dirs
        procs[0].kill()
        procs[0].wait()
        assert os.path.exists(os.path.join(dirs[0], "model.part"))  # nothing cleaned up after SIGKILL
        mine = memory.private_dir()
        try:
            assert not os.path.exists(dirs[0])
            assert os.path.exists(os.path.join(dirs[1], "model.part"))
            assert sorted(os.listdir(tmp)) == sorted(os.path.basename(d) for d in (dirs[1], mine))
        finally:
            memory.remove_private_dir(mine)
    finally:
        for p in procs:
            p.kill()
            p.wait()
