"""The CLI's contract, on the real shared traces (fast: no LTTng, no ROS).

- user errors: `roscope: error: <message naming the file>`, exit 1, no traceback;
- bugs: the traceback and a request to report it, exit 70;
- every verb reports the trace's warnings and lost events on stderr the same way;
- databases: read-only for verbs that only read, clear messages for locked,
  corrupt and foreign files, atomic `load` output;
- text output escapes control characters found in trace strings;
- `stats` shows both unmatched counts, checked against babeltrace2's counts.

Most tests call ``roscope.cli.main`` in this process (fast, and lets a test
replace a library function to provoke a bug); a few run the real command.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import roscope
import roscope.loading
import roscope.stats
from roscope import cli
from roscope.commands import _common as C

from tests.support.shared import TRACES

PINGPONG = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
TALKER = os.path.join(TRACES, "ros2", "caret-talker-listener-galactic")
E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
ROS1 = os.path.join(TRACES, "ros1", "nodes-pipeline-melodic")

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")


def run(capfd, *args: str) -> tuple[int, str, str]:
    """roscope ARGS in this process: (exit status, stdout, stderr)."""
    try:
        rc = cli.main([str(a) for a in args])
    except SystemExit as exc:  # argparse: usage errors
        rc = exc.code
    cap = capfd.readouterr()
    return rc, cap.out, cap.err


def assert_user_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 1, f"exit status {rc}, expected 1 (user error); stderr:\n{err}"
    assert "Traceback" not in err, f"a user error printed a traceback:\n{err}"
    assert "roscope: error: " in err, err
    for n in needles:
        assert n in err, f"{n!r} not in the error message:\n{err}"


def copy_trace(src: str, dst) -> str:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("converted"))
    return str(dst)


@pytest.fixture(scope="module")
def talker_db(tmp_path_factory) -> str:
    """A database of the CARET talker/listener trace, written by `roscope load`."""
    out = tmp_path_factory.mktemp("db") / "talker.duckdb"
    db, _ = roscope.loading.load([TALKER], str(out))
    db.close()
    return str(out)


# ----------------------------------------------------------------- user errors


@pytest.mark.parametrize("verb", ["info", "dump", "stats", "load"])
def test_missing_path(verb, capfd, tmp_path):
    missing = tmp_path / "no-such-trace"
    extra = ["-o", str(tmp_path / "x.duckdb")] if verb == "load" else []
    rc, out, err = run(capfd, verb, missing, *extra)
    assert_user_error(rc, err, str(missing), "no such file or directory")
    assert not os.path.exists(tmp_path / "x.duckdb")


@pytest.mark.parametrize("verb", ["info", "dump", "stats"])
def test_not_a_trace(verb, capfd, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run(capfd, verb, empty)
    assert_user_error(rc, err, str(empty), "no CTF trace found")
    afile = tmp_path / "notes.txt"
    afile.write_text("not a trace\n")
    rc, _, err = run(capfd, verb, afile)
    assert_user_error(rc, err, str(afile), "not a trace directory")


def test_user_error_in_a_real_process(run_roscope, tmp_path):
    """The installed command: exit 1, one line, no traceback (also no crash at exit)."""
    p = run_roscope("stats", str(tmp_path / "nothing"), timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines() == [f"roscope: error: {tmp_path / 'nothing'}: no such file or directory"]


def test_bad_regex(capfd):
    rc, _, err = run(capfd, "flow", TALKER, "--from", "(", "--to", ".")
    assert_user_error(rc, err, "(")


def test_empty_regex_is_a_regex(capfd):
    # '' is a valid regular expression that matches every topic, like '.' (issue 15);
    # a missing --from is the error.
    rc, out, err = run(capfd, "flow", PINGPONG, "--from", "", "--to", "^/pong$", "--json")
    assert rc == 0, err
    rc2, out2, _ = run(capfd, "flow", PINGPONG, "--from", ".", "--to", "^/pong$", "--json")
    assert rc2 == 0 and json.loads(out)["summary"]["flows"] == json.loads(out2)["summary"]["flows"] > 0
    assert json.loads(out)["summary"]["topics_from"] == json.loads(out2)["summary"]["topics_from"]
    rc, _, err = run(capfd, "flow", PINGPONG, "--to", "^/pong$")
    assert_user_error(rc, err, "--from")


def test_numbers_out_of_range(capfd):
    for bad in ("99999999999999999999999", "-1", "ten"):
        rc, out, err = run(capfd, "dump", "-n", bad, PINGPONG)
        assert rc == 2 and "Traceback" not in err and "--limit" in err and not out, (bad, rc, err)
    rc, out, _ = run(capfd, "dump", "-n", "3", PINGPONG)
    assert rc == 0 and len(out.splitlines()) == 3


def test_corrupt_database(capfd, talker_db, tmp_path):
    truncated = tmp_path / "truncated.duckdb"
    shutil.copy(talker_db, truncated)
    os.truncate(truncated, 4096 + 100)
    rc, out, err = run(capfd, "stats", truncated)
    assert_user_error(rc, err, str(truncated), "corrupt or truncated")
    assert not out
    # Blocks zeroed past the header: DuckDB finds it when reading a table, mid-query.
    zeroed = tmp_path / "zeroed.duckdb"
    data = bytearray(open(talker_db, "rb").read())
    data[20000:] = bytes(len(data) - 20000)
    zeroed.write_bytes(bytes(data))
    rc, _, err = run(capfd, "stats", zeroed)
    assert_user_error(rc, err, "corrupt or truncated")


def test_not_a_roscope_database(capfd, tmp_path):
    import duckdb

    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    rc, _, err = run(capfd, "stats", other)
    assert_user_error(rc, err, str(other), "not a roscope database")
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_text("hello\n")
    rc, _, err = run(capfd, "stats", garbage)
    assert_user_error(rc, err, str(garbage), "not a DuckDB database")


def test_several_databases(capfd, talker_db, tmp_path):
    second = tmp_path / "second.duckdb"
    shutil.copy(talker_db, second)
    rc, _, err = run(capfd, "stats", talker_db, second)
    assert_user_error(rc, err, "2 databases given", str(second))
    rc, _, err = run(capfd, "stats", talker_db, TALKER)
    assert_user_error(rc, err, "is a database", TALKER)


def _hold(db: str, read_only: bool) -> subprocess.Popen:
    """Another process that keeps `db` open until killed."""
    code = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == 'ro'); "
            "print('open', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, db, "ro" if read_only else "rw"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "open"
    return p


def test_locked_database_names_the_process(capfd, talker_db):
    p = _hold(talker_db, read_only=False)
    try:
        rc, _, err = run(capfd, "stats", talker_db)
    finally:
        p.kill()
        p.wait()
    assert_user_error(rc, err, talker_db, "locked", f"process {p.pid}")


def test_reading_verbs_open_read_only(capfd, talker_db):
    """stats works while another process reads the database (a writer would be refused),
    and roscope.open gives a read-only database by default."""
    p = _hold(talker_db, read_only=True)
    try:
        rc, out, err = run(capfd, "stats", talker_db, "--json")
    finally:
        p.kill()
        p.wait()
    assert rc == 0, err
    assert json.loads(out)["summary"]["callback_runs"] > 0
    db = roscope.open(talker_db)
    assert db.read_only
    with pytest.raises(Exception, match="read-only"):
        db.con.execute("CREATE TABLE scratch (a INTEGER)")
    db.close()


# ----------------------------------------------------------------- load output


def test_load_never_leaves_partial_files(capfd, tmp_path, monkeypatch):
    out = tmp_path / "run.duckdb"
    rc, _, err = run(capfd, "load", TALKER, "-o", out)
    assert rc == 0, err
    before = out.read_bytes()
    # Existing output without --force: refused, untouched.
    rc, _, err = run(capfd, "load", TALKER, "-o", out)
    assert_user_error(rc, err, str(out), "--force")
    # A failing build with --force keeps the old output.
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run(capfd, "load", empty, "-o", out, "--force")
    assert_user_error(rc, err, "no CTF trace found")
    assert out.read_bytes() == before
    # Interrupted while writing tables: exit 130, old output intact, no temporary file left.
    import roscope.loading

    def interrupted(con, meta):
        con.execute("CREATE TABLE half AS SELECT 1 AS a")
        raise KeyboardInterrupt

    monkeypatch.setattr(roscope.loading, "_fill", interrupted)
    rc, _, _ = run(capfd, "load", TALKER, "-o", out, "--force")
    assert rc == 130
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["empty", "run.duckdb"]


def test_load_force_replaces_a_database_with_its_log(capfd, tmp_path):
    """A DuckDB process that ends without closing its database (killed, or
    `flow --store` cut short) leaves DB.wal beside it. `load --force` replaces the
    database and that log with it: the old log beside the new file made DuckDB
    refuse to open it ("WAL does not match database file")."""
    db = str(tmp_path / "run.duckdb")
    code = ("import duckdb, os, sys; c = duckdb.connect(sys.argv[1]); c.execute('CREATE TABLE t AS SELECT 1 AS x'); "
            "c.execute('CHECKPOINT'); c.execute('INSERT INTO t VALUES (2)'); os._exit(0)")
    subprocess.run([sys.executable, "-c", code, db], check=True)
    assert os.path.exists(db + ".wal")
    rc, _, err = run(capfd, "load", PINGPONG, "-o", db, "--force")
    assert rc == 0, err
    assert not os.path.exists(db + ".wal") and sorted(os.listdir(tmp_path)) == ["run.duckdb"]
    rc, out, err = run(capfd, "stats", db, "--json")
    assert rc == 0, err
    assert json.loads(out)["summary"]["callback_runs"] > 0


def test_load_refuses_what_is_not_a_regular_file(capfd, tmp_path):
    fifo = tmp_path / "fifo.duckdb"
    os.mkfifo(fifo)
    rc, _, err = run(capfd, "load", TALKER, "-o", fifo, "--force")
    assert_user_error(rc, err, str(fifo), "not a regular file")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
    dangling = tmp_path / "link.duckdb"
    os.symlink(tmp_path / "elsewhere.duckdb", dangling)
    rc, _, err = run(capfd, "load", TALKER, "-o", dangling, "--force")
    assert_user_error(rc, err, str(dangling), "symbolic link")
    assert not os.path.exists(tmp_path / "elsewhere.duckdb")
    rc, _, err = run(capfd, "load", TALKER, "-o", tmp_path / "no" / "dir.duckdb")
    assert_user_error(rc, err, "does not exist")


def test_parquet_path_is_never_sql(capfd, tmp_path):
    """A directory name with a quote (once a ParserException, or an injection) is just a name."""
    out = tmp_path / "run.duckdb"
    pq = tmp_path / "it's here'); COPY meta TO 'pwned.csv"
    rc, _, err = run(capfd, "load", TALKER, "-o", out, "--parquet", pq)
    assert rc == 0, err
    import pyarrow.parquet as papq

    db = roscope.open(str(out))
    for name in ("callback_runs", "publications", "takes"):
        n = db.con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        assert papq.read_table(pq / f"{name}.parquet").num_rows == n
    db.close()
    assert not glob.glob(str(tmp_path / "**" / "pwned.csv"), recursive=True)


def test_full_disk(capfd, tmp_path):
    """On a 1 MiB tmpfs: a clear message, and nothing left behind (was: 'wrote', with a .wal left)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        rc, out, err = run(capfd, "load", E2E, "-o", mnt / "run.duckdb")
        left = os.listdir(mnt)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert_user_error(rc, err, "disk is full")
    assert left == [], left


# ----------------------------------------------------------------- bugs


@pytest.mark.parametrize("exc", [RuntimeError("boom"), ValueError("boom"), KeyError("boom")])
def test_bug_prints_traceback_and_exit_70(exc, capfd, monkeypatch):
    def broken(*_parts):
        raise exc

    # the callbacks' rows: made from a database's parts or from the core's (a short recording)
    monkeypatch.setattr(roscope.stats, "callback_rows", broken)
    rc, _, err = run(capfd, "stats", TALKER)
    assert rc == 70, err
    assert "Traceback (most recent call last)" in err and "boom" in err
    assert "this is a bug in roscope" in err and "please report it" in err


def test_ctrl_c(capfd, monkeypatch):
    def interrupted(*_parts):
        raise KeyboardInterrupt

    monkeypatch.setattr(roscope.stats, "callback_rows", interrupted)
    rc, _, err = run(capfd, "stats", TALKER)
    assert rc == 130 and "Traceback" not in err


# ----------------------------------------------------------------- warnings


@pytest.fixture(scope="module")
def truncated_trace(tmp_path_factory) -> tuple[str, str]:
    """A copy of the CARET end-to-end trace with its largest stream file cut in half."""
    dst = copy_trace(E2E, tmp_path_factory.mktemp("damaged") / "e2e")
    stream = max((p for p in glob.glob(os.path.join(dst, "ust", "**", "ros2_*"), recursive=True) if os.path.isfile(p)),
                 key=os.path.getsize)
    os.truncate(stream, os.path.getsize(stream) // 2 + 3)
    return dst, os.path.basename(stream)


VERBS = {
    "info": ["info"],
    "info --json": ["info", "--json"],
    "dump": ["dump"],
    "stats": ["stats"],
    "stats --json": ["stats", "--json"],
    "flow": ["flow", "--from", ".", "--to", "."],
    "executor": ["executor"],
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_reports_warnings(verb, capfd, truncated_trace):
    trace, stream = truncated_trace
    rc, _, err = run(capfd, *VERBS[verb], trace)
    assert rc == 0, err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if stream in x and "truncated" in x]
    assert lines and all(x.startswith("roscope: warning: ") for x in lines), err


def test_load_and_stats_on_its_database_report_warnings(capfd, truncated_trace, tmp_path):
    trace, stream = truncated_trace
    out = tmp_path / "damaged.duckdb"
    rc, _, err = run(capfd, "load", trace, "-o", out)
    assert rc == 0 and any(x.startswith("roscope: warning: ") and stream in x for x in err.splitlines()), err
    rc, _, err = run(capfd, "stats", out)
    assert rc == 0 and any(x.startswith("roscope: warning: ") and stream in x for x in err.splitlines()), err


@pytest.mark.lttng
@pytest.mark.parametrize("verb", sorted(VERBS) + ["load"])
def test_every_verb_reports_lost_events(verb, capfd, ust_traces, tmp_path):
    """The discard fixture really lost events (babeltrace2 counts them): every verb says so."""
    from tests.support import oracle

    trace = ust_traces["discard"]
    ref = oracle.Reading(trace, full=lambda ts, name: False).run()
    assert sum(ref.discarded_events.values()) > 0
    args = VERBS.get(verb, ["load", "-o", str(tmp_path / "d.duckdb")])
    rc, _, err = run(capfd, *args, trace)
    assert rc == 0, err
    said = [x for x in err.splitlines() if x.startswith("roscope: warning: ") and "events discarded" in x]
    per_file = collections.Counter()
    for x in said:
        m = re.search(r"(\S+): ([\d,]+) events discarded", x)
        per_file[os.path.basename(m.group(1))] += int(m.group(2).replace(",", ""))
    expected = collections.Counter()
    for (_t, f), n in ref.discarded_events.items():
        expected[f] += n
    assert sum(per_file.values()) == sum(expected.values()), (err, dict(expected))


# ----------------------------------------------------------------- text output


def test_escape_shows_control_characters():
    assert C.escape("/a\x1b[31mred\x07") == "/a\\x1b[31mred\\x07"
    assert C.escape("line\nnext\ttab\r") == "line\\nnext\\ttab\\r"
    assert C.escape("\x7f\x9b\u202e") == "\\x7f\\x9b\\u202e"
    assert C.escape("/ordinary_topic µs") == "/ordinary_topic µs"
    assert C.cell("\x1b" * 10, 8) == "\\x1b\\x1…"
    assert C.cell(None, 3) == "-"

    class Sink:
        text = ""

        def write(self, s):
            self.text += s

    sink = Sink()
    C.TextOut(sink).write("a\x1bb\nc\n")
    assert sink.text == "a\\x1bb\nc\n"


def test_units_and_json_cleaning():
    import decimal

    import numpy as np

    assert C.ms(1_234_567) == "1.235" and C.ms(None) == "-" and C.ms(float("nan")) == "-"
    assert C.clean({"a": np.int64(3), "b": float("nan"), "c": decimal.Decimal("2"), "d": (1, np.float64(2.5)),
                    "e": np.array([1, 2]), "f": float("inf")}) == {"a": 3, "b": None, "c": 2, "d": [1, 2.5], "e": [1, 2],
                                                                   "f": None}


@pytest.fixture(scope="module")
def esc_trace(tmp_path_factory) -> str:
    """The ping-pong trace with ESC in the node, process and topic names of `ping`
    (same length, so every packet stays valid), checked with babeltrace2."""
    from tests.support import oracle

    dst = copy_trace(PINGPONG, tmp_path_factory.mktemp("esc") / "pingpong")
    replaced = 0
    for f in glob.glob(os.path.join(dst, "ust", "**", "*"), recursive=True):
        if os.path.isfile(f) and os.path.basename(f) != "metadata" and not f.endswith(".idx"):
            data = open(f, "rb").read()
            replaced += data.count(b"ping\x00")
            open(f, "wb").write(data.replace(b"ping\x00", b"p\x1bng\x00"))
    assert replaced > 0
    seen = set()
    for ev in oracle.Reading(dst).events():
        seen.update(v for v in {**ev.get("payload", {}), **ev.get("context", {})}.values() if isinstance(v, str) and "\x1b" in v)
    assert {"p\x1bng", "/p\x1bng"} <= seen
    return dst


@pytest.mark.parametrize("verb", ["stats", "info"])
def test_text_output_escapes_trace_strings(verb, capfd, esc_trace):
    rc, out, err = run(capfd, verb, esc_trace)
    assert rc == 0, err
    assert "\x1b" not in out and "\x1b" not in err
    assert "p\\x1bng" in out
    if verb == "stats":
        assert "/p\\x1bng" in out
    rc, out, _ = run(capfd, verb, esc_trace, "--json")
    assert "\x1b" not in out and "p\x1bng" in out.encode().decode("unicode_escape")


# ----------------------------------------------------------------- stats


def _bt2_counts_by_topic(path: str, event: str) -> collections.Counter:
    from tests.support import oracle

    counts = collections.Counter()
    for ev in oracle.Reading(path, full=lambda ts, name: name == event).events():
        if ev["name"] == event:
            counts[ev["payload"]["topic"]] += 1
    return counts


def _text_topics(out: str) -> dict[str, dict]:
    """The Topics table of `roscope stats` text output, by topic."""
    lines = out.split("\nTopics ")[1].split("\n\n")[0].splitlines()
    head = lines[1].split()
    assert head[-3:] == ["pubs", "unm", "takes", "drops"][-3:] or "unm" in head
    rows = {}
    for line in lines[2:]:
        cells = line.split()
        rows[cells[0]] = {"msgs": cells[3], "unm_pubs": cells[-3], "unm_takes": cells[-2]}
    return rows


def test_stats_text_shows_both_unmatched_counts(capfd):
    """ROS 1 (Bosch ros1_tracetools) trace: without message identities in its
    events, no publication is linked to a take, so every publication on a
    subscribed topic and every take is unmatched. babeltrace2 counts them."""
    pubs = _bt2_counts_by_topic(ROS1, "roscpp:publisher_message_queued")
    takes = _bt2_counts_by_topic(ROS1, "roscpp:subscriber_callback_start")
    rc, out, err = run(capfd, "stats", ROS1)
    assert rc == 0, err
    assert "unm pubs" in out and "unm takes" in out
    rows = _text_topics(out)
    assert set(rows) == set(pubs)
    assert any(pubs[t] != takes[t] for t in pubs)  # the two columns can be told apart
    for topic, row in rows.items():
        assert row["msgs"] == str(pubs[topic])
        assert row["unm_pubs"] == f"{pubs[topic]:,}", (topic, row)
        assert row["unm_takes"] == f"{takes[topic]:,}", (topic, row)
    rc, out, _ = run(capfd, "stats", ROS1, "--json")
    js = {t["topic"]: t for t in json.loads(out)["topics"]}
    assert {t: js[t]["unmatched_takes"] for t in js} == dict(takes)


def test_stats_caret_takes_all_matched(capfd):
    """CARET talker/listener: babeltrace2 finds the source stamp of every
    dispatched message among the publish-side stamps, so no take is unmatched."""
    from tests.support import oracle

    stamps, dispatched = set(), []
    for ev in oracle.Reading(TALKER).events():
        if ev["name"] == "ros2_caret:dds_bind_addr_to_stamp":
            stamps.add(ev["payload"]["source_stamp"])
        elif ev["name"] == "ros2:dispatch_subscription_callback":
            dispatched.append(ev["payload"]["source_stamp"])
    assert dispatched and all(s in stamps for s in dispatched)
    rc, out, err = run(capfd, "stats", TALKER)
    assert rc == 0, err
    rows = _text_topics(out)
    assert rows and all(r["unm_takes"] == "0" for r in rows.values()), rows


def test_stats_text_is_in_milliseconds(capfd):
    """The text tables show the JSON's nanoseconds as milliseconds with 3 decimals."""
    rc, js, _ = run(capfd, "stats", E2E, "--json")
    rc2, out, _ = run(capfd, "stats", E2E)
    assert rc == rc2 == 0
    d = json.loads(js)
    assert "Callbacks (durations, timer period and jitter in ms)" in out
    c = d["callbacks"][0]
    line = next(x for x in out.splitlines() if x.strip().startswith(c["node"]) and C.cell(c["symbol"], 60) in x)
    want = [f"{c[k] / 1e6:.3f}" for k in ("min_ns", "mean_ns", "std_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")]
    assert " ".join(want) in " ".join(line.split()), (want, line)



def test_the_memory_help_shows_the_budget_duckdb_gets():
    """Every verb's `--memory` help names the default budget that DuckDB is then
    given on a real trace (flow has its own, smaller one)."""
    import argparse

    from roscope import opening

    parser = cli.build_parser()
    verbs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0].choices
    seen = {}
    for name in ("stats", "flow", "report", "why", "executor", "export"):
        sub = verbs[name]
        text = " ".join(next(a.help for a in sub._actions if "--memory" in a.option_strings).split())
        shown = int(re.search(r"default (\d+)M;", text).group(1))
        args = parser.parse_args([name, PINGPONG] + (["--perfetto", "x"] if name == "export" else []))
        with opening.open(PINGPONG, memory=args.memory) as d:
            limit = d.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        seen[name] = (shown, limit)
        assert limit == f"{shown}.0 MiB", (name, text, limit)
    assert seen["flow"][0] < seen["stats"][0]


def test_a_command_imports_only_its_own_modules(capfd):
    """`roscope info TRACE` builds the parser of `info` alone, so it imports neither
    the other commands nor what they import (the recorder, the data-flow analysis, the
    database module: a third of its time on the largest shared trace), nor DuckDB,
    Arrow or pandas; its count of events is still babeltrace2's. `roscope stats` of a
    short recording (its statistics from the core) imports none of the storage layer
    (issue 42: the start-up of a ~100k-event trace's statistics against babeltrace2's
    whole decode). Neither imports what only some runs need (the other commands' listing,
    a bug's traceback, a pip-installed ROS 2's recorder helpers) nor `dataclasses` and the
    `inspect` it imports (~5 ms), unless the bare interpreter already has them.
    `roscope --help` and an unknown command still list every command."""
    import pkgutil

    import roscope.commands

    bare = set(subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], capture_output=True,
                              text=True, check=True).stdout.split())
    later = ["pkgutil", "traceback", "dataclasses", "inspect", "roscope.ros2_pip", "roscope.processes.group"]
    heavy = {
        "info": ["duckdb", "pyarrow", "pandas", "roscope.database", "roscope.opening", "roscope.record", "roscope.flow",
                 "roscope.commands.load", "roscope.commands.stats"],
        "stats": ["duckdb", "pyarrow", "pandas", "numpy", "roscope.database", "roscope.opening", "roscope.loading",
                  "roscope.kernel", "roscope.dataset", "roscope.memory", "roscope.record", "roscope.flow",
                  "roscope.commands.info", "roscope.commands.load"],
    }
    out = {}
    for verb, names in heavy.items():
        names = [m for m in names + later if m not in bare]
        code = ("import sys; from roscope import cli; rc = cli.main(sys.argv[1:]); "
                f"print('imported:', [m for m in {names!r} if m in sys.modules], file=sys.stderr); sys.exit(rc)")
        p = subprocess.run([sys.executable, "-c", code, verb, E2E, "--json"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "imported: []" in p.stderr, (verb, p.stderr)
        out[verb] = json.loads(p.stdout)
    from tests.support import oracle

    reading = oracle.Reading(E2E, full=lambda ts, name: False)
    assert out["info"]["events"] == sum(1 for _ in reading.events())
    # every run of this trace is whole: as many callback runs as babeltrace2's callback_end events
    assert out["stats"]["summary"]["callback_runs"] == reading.counts["ros2:callback_end"] > 0
    names = sorted(m.name for m in pkgutil.iter_modules(roscope.commands.__path__) if not m.name.startswith("_"))
    rc, out_text, _ = run(capfd, "--help")
    assert rc == 0 and all(n in out_text for n in names), out_text
    rc, _, err = run(capfd, "no-such-command")
    assert rc == 2 and all(n in err for n in names), err


def test_the_parser_of_every_command_starts_without_duckdb_or_arrow():
    """`roscope --help` builds every command's parser, some with the library's defaults
    (flow's caps and budget, trend's statistics): the library modules behind them import
    DuckDB, Arrow and pandas only in the functions that use them."""
    code = ("import sys; from roscope import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('imported:', [m for m in ('duckdb', 'pyarrow', 'pandas') if m in sys.modules], file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "imported: []" in p.stderr, p.stderr
    assert "flow" in p.stdout and "trend" in p.stdout
