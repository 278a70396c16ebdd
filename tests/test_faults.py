"""Fault injection: roscope on damaged copies of the real traces, next to babeltrace2.

The suite makes its own damage from the shared traces with a fixed seed
(tests/faults): truncations, bit flips, packet header flips, garbage and zero
blocks, bad sizes, bad UUIDs and bad timestamps in stream files (at least 300
cases), and the same kinds of damage in metadata files (at least 100), a part
of the stream cases with the traces' packet index hidden. For every case:

* no traceback, panic or hang (each case has a timeout; a hang or a crash of
  the worker process is a result, the run goes on);
* every event before the damage is kept, unchanged (compared with
  babeltrace2's reading of the undamaged trace, packet by packet), and every
  undamaged stream is read whole;
* at least as many events as babeltrace2 reads, wherever babeltrace2 reads
  the damaged input (``babeltrace2 -c sink.utils.counter``, with a timeout:
  it hangs on some);
* events lost are reported by a warning naming the file and a byte offset
  in the damaged packets; a metadata error names the metadata file and the
  line or byte (metadata damaged into other valid metadata is reported where
  the events stop decoding: a stream file and an offset);
* reading resumes after the damage: every event of the packets after it is
  read again (resynchronization), and each stream stays in time order.

Cases run in-process in one worker process (``roscope._core.Trace``), plus a
few real CLI runs. ``ROSCOPE_FAULT_SEED`` and ``ROSCOPE_FAULT_CASES``
("STREAM,METADATA", default "320,104") select another or a longer run (the
nightly run: e.g. ROSCOPE_FAULT_SEED=$(date +%Y%m%d) ROSCOPE_FAULT_CASES=3000,1000).
``ROSCOPE_FAULT_REPORT=FILE`` writes the figures as JSON.

Then: inputs given twice, nested or copied are read once with a warning; and
``load`` writes its outputs atomically (see also tests/test_cli.py).
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from tests.faults import mutations, runner
from tests.faults.bases import BASES, PACKET_SIZE_AT, TS_BEGIN_AT, UUID_AT
from tests.support import oracle
from tests.support.dump_check import assert_clean_stderr
from tests.support.shared import TRACES

PINGPONG = os.path.join(TRACES, BASES["pingpong"])
ROS1 = os.path.join(TRACES, BASES["ros1"])
SEED = int(os.environ.get("ROSCOPE_FAULT_SEED", "20261123"))
N_STREAM, N_META = (int(x) for x in os.environ.get("ROSCOPE_FAULT_CASES", "320,104").split(","))

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """Runs every case once; returns [(case, result)] and prints the figures."""
    if shutil.which("babeltrace2") is None or oracle.bt2 is None:
        pytest.skip("babeltrace2 and its Python bindings (the oracle) are needed")
    work = str(tmp_path_factory.mktemp("faults"))
    t0 = time.monotonic()
    cases, results = runner.run(TRACES, work, SEED, N_STREAM, N_META, bt2_timeout=2.0)
    figs = runner.figures(cases, results)
    print(f"\nfault injection, seed {SEED}: {len(cases)} cases in {time.monotonic() - t0:.1f} s\n{runner.table(figs)}")
    if os.environ.get("ROSCOPE_FAULT_REPORT"):
        with open(os.environ["ROSCOPE_FAULT_REPORT"], "w") as f:
            json.dump({"seed": SEED, "figures": figs, "cases": [c.to_json() for c in cases], "results": results}, f, indent=1)
    return list(zip(cases, results))


def _report(bad: list, what: str) -> None:
    if bad:
        lines = [f"case {c.id} ({c.base}, {c.kind}: {c.what}, file {c.file}{', no index' if c.no_index else ''}): "
                 f"{r.get('status')} {r.get('message', '')[:400]} warnings={r.get('warnings', [])[:3]}" for c, r in bad[:10]]
        pytest.fail(f"{len(bad)} cases {what}:\n" + "\n".join(lines), pytrace=False)


def test_the_suite_is_as_large_as_promised(faults):
    stream = [c for c, _ in faults if not c.metadata]
    meta = [c for c, _ in faults if c.metadata]
    assert len(stream) >= min(300, N_STREAM) and len(meta) >= min(100, N_META)
    assert {c.kind for c in stream} == set(mutations.STREAM_KINDS)
    assert {c.kind for c in meta} == set(mutations.META_KINDS)
    assert sum(c.no_index for c in stream) >= len(stream) // 4
    # The damage is real: babeltrace2 fails on a good part of it, and roscope
    # reports a good part of it (a suite whose mutations do nothing cannot fail).
    bt2_failed = sum(r["bt2"]["status"] != "ok" for _, r in faults)
    warned = sum(bool(r.get("warnings")) or r["status"] == "error" for _, r in faults)
    assert bt2_failed >= len(faults) // 4, bt2_failed
    assert warned >= len(faults) // 3, warned


def test_no_traceback_panic_or_hang(faults):
    _report([(c, r) for c, r in faults if r["status"] not in ("ok", "error")], "ended in a panic, a bug, a hang or a crash")
    # A damaged stream file never makes the whole trace unreadable.
    _report([(c, r) for c, r in faults if not c.metadata and r["status"] != "ok"], "of stream damage made the trace unreadable")


def test_every_event_before_the_damage_is_kept(faults):
    _report([(c, r) for c, r in faults if not c.metadata and r["status"] == "ok" and not r["before_kept"]],
            "lost or changed events before the damaged packet")
    _report([(c, r) for c, r in faults if not c.metadata and r["status"] == "ok" and not r["others_ok"]],
            "changed the events of an undamaged stream file")


def test_at_least_as_many_events_as_babeltrace2(faults):
    """Genuine events: equal to one of the undamaged trace. (babeltrace2 also
    prints garbage decoded as events, e.g. zero padding read as events when a
    content size is damaged; counting those would ask roscope to invent data.)"""
    _report([(c, r) for c, r in faults if r["bt2"]["status"] == "ok" and r["genuine"] < r["bt2"]["genuine"]],
            "read fewer genuine events than babeltrace2 on the same damaged input")


def test_lost_events_are_reported_with_file_and_offset(faults):
    """Unless the damage cannot be told from valid data: a file cut exactly at
    a packet boundary without its index (a shorter stream), or damaged bytes
    that still decode as valid events, which babeltrace2 reads without an
    error too (the figures count these cases)."""
    def unreported(c, r):
        if r["bt2"]["status"] == "ok" and r["status"] == "ok":
            return False
        if c.metadata:
            return (r["status"] == "error" and not r["warned_at"]) or (r["status"] == "ok" and r["lost"] and not r["reported"])
        return r["status"] == "ok" and r["lost"] and not r["warned_at"] and not (r["boundary"] and c.no_index)

    _report([(c, r) for c, r in faults if unreported(c, r)], "lost events without a warning naming the file and an offset in the damage")


def test_reading_resumes_after_the_damage(faults):
    _report([(c, r) for c, r in faults if not c.metadata and r["status"] == "ok" and r["recovered"] != r["after"]],
            "did not read again the events of the packets after the damage")
    _report([(c, r) for c, r in faults if r["status"] == "ok" and not r["in_order"]], "put a stream's events out of time order")


# ----------------------------------------------------------------- the CLI on damaged traces


def _damaged_copy(tmp_path, edits, no_index=False) -> str:
    """A copy of pingpong with `edits` [(file, offset, bytes)] applied."""
    dst = str(tmp_path / "trace")
    shutil.copytree(PINGPONG, dst, ignore=shutil.ignore_patterns("converted"))
    for root, _dirs, files in os.walk(dst):
        for n in files:
            os.chmod(os.path.join(root, n), 0o644)
    chan = os.path.join(dst, "ust/uid/1000/64-bit")
    for name, off, data in edits:
        with open(os.path.join(chan, name), "r+b") as f:
            f.seek(off)
            f.write(data)
    if no_index:
        shutil.rmtree(os.path.join(chan, "index"))
    return dst


def _bt2_count(path: str) -> int | None:
    res = runner.babeltrace2(path, 20)
    return res["n"] if res["status"] == "ok" else None


SECOND_PACKET = 8192  # ros2_1: packets at 0, 8192, 12288 (its index)


@pytest.mark.parametrize("damage", ["uuid", "packet_size", "timestamp_begin"])
@pytest.mark.parametrize("no_index", [False, True])
def test_cli_reads_past_one_damaged_packet(damage, no_index, tmp_path, run_roscope):
    """The issue's cases: one flipped byte in a packet UUID, a packet_size not a
    multiple of 8, a timestamp_begin moved back: every event is still read
    (as many as babeltrace2 reads from the undamaged trace), and the warning
    names the file and the packet."""
    edit = {"uuid": (SECOND_PACKET + UUID_AT + 3, b"\x00"),
            "packet_size": (SECOND_PACKET + PACKET_SIZE_AT, (32768 + 1).to_bytes(8, "little")),
            "timestamp_begin": (SECOND_PACKET + TS_BEGIN_AT + 4, b"\x00")}[damage]
    trace = _damaged_copy(tmp_path, [("ros2_1", *edit)], no_index)
    p = run_roscope("dump", trace, timeout=120)
    assert p.returncode == 0, p.stderr
    assert_clean_stderr(p.stderr, "roscope dump")
    events = list(oracle.read_dump_lines(p.stdout.splitlines()))
    assert len(events) == _bt2_count(PINGPONG) == 864
    assert all(a["ts"] <= b["ts"] for a, b in zip(events, events[1:]))
    assert f"ros2_1: at byte {SECOND_PACKET}: " in p.stderr, p.stderr


def test_cli_reports_damaged_metadata_as_a_user_error(tmp_path, run_roscope):
    trace = _damaged_copy(tmp_path, [])
    meta = os.path.join(trace, "ust/uid/1000/64-bit/metadata")
    os.truncate(meta, 5000)
    for verb in ("info", "stats"):
        p = run_roscope(verb, trace, timeout=120)
        assert p.returncode == 1, p.stderr
        assert_clean_stderr(p.stderr, f"roscope {verb}")
        assert f"roscope: error: {meta}:" in p.stderr, p.stderr


# ----------------------------------------------------------------- inputs read once


def _count(*paths: str) -> tuple[int, list[str]]:
    from roscope import _core

    t = _core.Trace(list(paths))
    n = json.loads(t.summary_json())["events"]
    return n, list(t.warnings())


@pytest.mark.parametrize("second", [".", "ust", "ust/uid/1000/64-bit", "ust/uid/1000/64-bit/metadata"])
def test_a_trace_given_twice_or_nested_is_read_once(second):
    n, warnings = _count(PINGPONG, os.path.join(PINGPONG, second))
    assert n == _bt2_count(PINGPONG)
    assert len(warnings) == 1, warnings
    assert "read once" in warnings[0] and PINGPONG in warnings[0]


def test_a_nested_input_among_others_is_read_once():
    n, warnings = _count(os.path.join(ROS1, "ust"), ROS1)
    assert n == _bt2_count(ROS1)
    assert len(warnings) == 1 and "ust/uid/1000/64-bit found under" in warnings[0], warnings


def test_a_copied_stream_file_is_read_once(tmp_path):
    trace = _damaged_copy(tmp_path, [])
    chan = os.path.join(trace, "ust/uid/1000/64-bit")
    shutil.copyfile(os.path.join(chan, "ros2_1"), os.path.join(chan, "ros2_1_copy"))
    n, warnings = _count(trace)
    assert n == _bt2_count(PINGPONG)
    assert warnings == [f"{chan}/ros2_1_copy: holds the same stream as {chan}/ros2_1 (stream class 0, instance 1, "
                        f"first packet number 0, same bytes): the stream is read once, from that file"]
    # babeltrace2 refuses such a trace; roscope reads it once.
    assert _bt2_count(trace) is None


def test_a_copied_trace_directory_is_read_once(tmp_path):
    chan = os.path.join(PINGPONG, "ust/uid/1000/64-bit")
    copy = str(tmp_path / "copy")
    shutil.copytree(chan, copy)
    n, warnings = _count(PINGPONG, copy)
    assert n == _bt2_count(PINGPONG)
    assert len(warnings) == 1 and warnings[0].startswith(f"{copy}: 8 stream files"), warnings


def test_the_model_counts_a_twice_given_trace_once():
    """`roscope stats T T` counted every callback run twice (88 instead of 44)."""
    from roscope import loading

    once = loading.load([PINGPONG])[1]
    twice = loading.load([PINGPONG, PINGPONG])[1]
    assert twice.tables == once.tables
    assert once.tables["callback_runs"] == _callback_starts(PINGPONG)
    assert any("read once" in w for w in twice.warnings)


def _callback_starts(path: str) -> int:
    """babeltrace2's count of ros2:callback_start events (one callback run each)."""
    return oracle.Reading(path).run().counts["ros2:callback_start"]


# ----------------------------------------------------------------- load writes atomically


def _md5(path) -> str:
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def _tree(d) -> dict:
    return {os.path.relpath(p, d): _md5(p) for p in glob.glob(os.path.join(d, "**"), recursive=True) if os.path.isfile(p)}


def test_load_with_quotes_in_every_path(tmp_path, run_roscope):
    d = tmp_path / "it's"
    d.mkdir()
    out, pq = d / "run'1.duckdb", d / "pq'); DROP TABLE meta; --"
    p = run_roscope("load", PINGPONG, "-o", str(out), "--parquet", str(pq), timeout=120)
    assert p.returncode == 0, p.stderr
    import duckdb

    con = duckdb.connect(str(out), read_only=True)
    runs = con.execute("SELECT count(*) FROM callback_runs").fetchone()[0]
    assert runs == _callback_starts(PINGPONG)
    assert con.execute("SELECT count(*) FROM meta").fetchone()[0] > 0
    assert con.execute("SELECT count(*) FROM read_parquet(?)", [str(pq / "callback_runs.parquet")]).fetchone()[0] == runs
    con.close()


def test_load_force_refuses_a_device_node(tmp_path, run_roscope):
    p = run_roscope("load", PINGPONG, "-o", "/dev/null", "--force", timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "roscope: error: /dev/null: exists and is not a regular file" in p.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_failed_load_keeps_the_old_outputs(tmp_path, monkeypatch, capfd):
    """A failure while the Parquet files are written (after the database):
    neither the old database nor the old Parquet files change, nothing is left."""
    from roscope import cli

    out, pq = tmp_path / "run.duckdb", tmp_path / "pq"
    assert cli.main(["load", PINGPONG, "-o", str(out), "--parquet", str(pq)]) == 0
    before = _tree(tmp_path)
    import duckdb

    calls = []
    real = duckdb.DuckDBPyRelation.write_parquet

    def fail_third(rel, path, *a, **kw):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", path)
        return real(rel, path, *a, **kw)

    monkeypatch.setattr(duckdb.DuckDBPyRelation, "write_parquet", fail_third)
    rc = cli.main(["load", os.path.join(TRACES, BASES["caret-e2e"]), "-o", str(out), "--parquet", str(pq), "--force"])
    err = capfd.readouterr().err
    assert rc == 1 and "No space left" in err, err
    assert len(calls) == 3
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["pq", "run.duckdb"]


def _complete(out, pq, trace: str) -> bool:
    """Whether `out` and `pq` hold the complete outputs of loading `trace`."""
    import duckdb
    import pyarrow.parquet as papq

    con = duckdb.connect(str(out), read_only=True)
    try:
        ok = json.loads(con.execute("SELECT value FROM meta WHERE key = 'sources'").fetchone()[0]) == [trace]
        for name in ("callback_runs", "publications", "executor_states"):
            ok &= papq.read_table(pq / f"{name}.parquet").num_rows == con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        return ok
    finally:
        con.close()


@pytest.mark.parametrize("delay", [0.3, 0.7, 0.9, 1.2, 1.6])
def test_an_interrupted_load_keeps_the_old_outputs(delay, tmp_path, roscope_cmd):
    """SIGINT at some point of a real `roscope load` of the large trace (about
    2 s): exit 130 and everything as before, with no file left; or, when the
    signal came too late, the new outputs, complete."""
    out, pq = tmp_path / "run.duckdb", tmp_path / "pq"
    p = subprocess.run([*roscope_cmd, "load", PINGPONG, "-o", str(out), "--parquet", str(pq)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    before = _tree(tmp_path)
    big = os.path.join(TRACES, "ros2/autoware-carla-galactic")
    proc = subprocess.Popen([*roscope_cmd, "load", big, "-o", str(out), "--parquet", str(pq), "--force"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert_clean_stderr(err, "roscope load")
    assert sorted(os.listdir(tmp_path)) == ["pq", "run.duckdb"]
    assert not [n for n in os.listdir(pq) if n.startswith(".")]
    # 130: roscope stopped; -SIGINT: the signal came while the interpreter
    # started or shut down, when Python's handler is not installed.
    if _tree(tmp_path) == before:
        assert proc.returncode in (130, -signal.SIGINT), err
    else:
        assert proc.returncode in (0, 130, -signal.SIGINT), err
        assert _complete(out, pq, big)


def test_load_never_replaces_a_file_that_appears_meanwhile(tmp_path, monkeypatch):
    """Without --force, a file created at the target while roscope builds
    (another load, another program) is left as it is."""
    from roscope import loading
    from roscope.errors import InputError

    out = tmp_path / "run.duckdb"
    real = loading.build

    def build_then_someone_writes(*a, **kw):
        res = real(*a, **kw)
        out.write_text("theirs")
        return res

    monkeypatch.setattr(loading, "build", build_then_someone_writes)
    with pytest.raises(InputError, match="appeared while roscope was writing it"):
        loading.load([PINGPONG], str(out))
    assert out.read_text() == "theirs"
    assert os.listdir(tmp_path) == ["run.duckdb"]


def test_ctrl_c_while_a_temporary_file_is_made_leaves_no_file(tmp_path, monkeypatch):
    """Ctrl-C that arrives inside tempfile.mkstemp (or mkdtemp), once it has made the
    file, but before the caller knows its name (seen in CI: a `.lost.parquet.*.tmp`
    left by an interrupted `roscope load --parquet`): the interrupt is held back until
    the name is known, then raised, and the file is gone. The signal is real
    (os.kill of this process), sent right after the real mkstemp made the file."""
    import signal
    import tempfile

    from roscope import files

    real_mkstemp, real_mkdtemp = tempfile.mkstemp, tempfile.mkdtemp

    def then_ctrl_c(make):
        def made(*args, **kwargs):
            out = make(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)
            return out
        return made

    monkeypatch.setattr(tempfile, "mkstemp", then_ctrl_c(real_mkstemp))
    monkeypatch.setattr(tempfile, "mkdtemp", then_ctrl_c(real_mkdtemp))
    with pytest.raises(KeyboardInterrupt), files.Staged() as staged:  # load's database and Parquet files
        staged.path(str(tmp_path / "run.duckdb"))
    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(tmp_path / "summary.json", "{}\n")
    with pytest.raises(KeyboardInterrupt):
        files.write_file(tmp_path / "report.html", "<html>")
    assert os.listdir(tmp_path) == []
    # A run added to a dataset is written in a temporary directory inside it.
    from roscope import dataset

    ds = tmp_path / "ds"
    monkeypatch.setattr(tempfile, "mkstemp", real_mkstemp)
    with pytest.raises(KeyboardInterrupt):
        dataset.append(PINGPONG, str(ds))
    assert os.listdir(ds) == [dataset.MARKER]
