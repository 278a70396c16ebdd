"""Issue 43 ("Reliability, round 3"), items MEDIUM 2-6 and their LOW companions: the
numbers and regular expressions a user gives `watch`, `record`, `load`, `stats`, `flow`,
`report` and `check`, trace names in `watch`'s view, `check`'s JUnit XML and inputs, and
the pytest plugin's markers. docs/reliability.md ("Reliability, round 3") maps each case to
its test here.

Every case runs the real `roscope` command on the shared traces (or files made here) and
asserts what a user sees: the exit status (0, 1, or 2 for a usage error; never 70, a bug,
never a signal, never past a stated time bound), one `error:` line naming what is wrong,
nothing on stdout, no traceback. Expected values come from outside roscope: Python's `re`
(for patterns it runs in bounded time), babeltrace2 (bt2) for the trace's contents,
`xml.etree` for the XML, `float` and `decimal` for the numbers.
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from decimal import Decimal, InvalidOperation

import pytest

from tests.support import oracle
from tests.support.shared import TRACES

PINGPONG = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")

#: What a crash or a bug report prints (never on a user error).
CRASH_TEXT = re.compile(r"Traceback \(most recent call last\)|panicked at|RUST_BACKTRACE|FATAL|[Aa]bort|"
                        r"[Ss]egmentation fault|core dumped|this is a bug in roscope")

#: The time bound of one refused command (it must never start work, let alone hang).
REFUSE_S = 20


def run(cmd: list[str], *args, timeout: float = REFUSE_S, **kw) -> subprocess.CompletedProcess:
    """The command, killed (with its process group) past `timeout`: a hang fails the test
    with the command's output so far, it never hangs the suite."""
    p = subprocess.Popen([*cmd, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, errors="backslashreplace", **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{[*cmd, *args]} still ran after {timeout} s (a hang); stderr:\n{err[-2000:]}")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def assert_refused(p: subprocess.CompletedProcess, rc: int, pattern: str | None = None) -> str:
    """`p` exited `rc` (1 or 2) with one `error:` line (matching `pattern`), nothing on
    stdout, no traceback; returns that line."""
    assert p.returncode >= 0, f"killed by signal {-p.returncode}:\n{p.stderr}"
    assert p.returncode != 70, f"a bug (exit 70):\n{p.stderr}"
    assert not CRASH_TEXT.search(p.stderr), p.stderr
    assert p.returncode == rc, f"exit {p.returncode}, expected {rc}:\n{p.stderr}"
    errors = [x for x in p.stderr.splitlines() if re.match(r"roscope( [a-z]+)*: error: ", x)]
    assert len(errors) == 1, p.stderr
    assert not p.stdout, p.stdout
    if pattern is not None:
        assert re.search(pattern, errors[0]), f"{pattern!r} not in {errors[0]!r}"
    return errors[0]


# ---------------------------------------------------------------- MEDIUM 2: watch's regexes


@pytest.mark.parametrize("argv, names", [
    (["--deadline", "(->^/x$=20"], r"--deadline: '\(->\^/x\$=20': FROM: bad regular expression '\(': unclosed group"),
    (["--deadline", "^/a$->[z-a]=5"], r"TO: bad regular expression '\[z-a\]'"),
    (["--deadline", "a->(?=b)=5"], r"'\(\?=b\)': look-around.*no look-around"),
    (["--from", "(", "--to", "x"], r"argument --from: bad regular expression '\('"),
    (["--from", "x", "--to", r"(a)\1"], r"argument --to: bad regular expression '\(a\)\\\\1': backreferences"),
], ids=["deadline-from-unclosed", "deadline-to-range", "deadline-look-around", "from-unclosed", "to-backreference"])
def test_watch_refuses_a_bad_regex_at_parse_time(argv, names, roscope_cmd, tmp_path):
    """MEDIUM 2: `watch --deadline '(->^/x$=20'` was accepted and its path silently never
    watched (live.py's search swallowed the regex error each window: exit 0, no alert).
    Now argparse refuses it (exit 2) naming the regex, before any recording starts: no
    output directory is made. (`--duration 1`: the code before this fix watched for 1 s.)"""
    p = run(roscope_cmd, "watch", *argv, "--duration", "1", "--json", "-o", tmp_path / "w")
    assert_refused(p, 2, names)
    assert not (tmp_path / "w").exists()


def test_live_search_stops_swallowing_user_errors():
    """MEDIUM 2, the library side: a watched path whose topics are not seen yet is waited
    for (no entry, no error), but any other error of the user's (here an exclusion regex the
    engine cannot run) ends the watch instead of being swallowed at each window; a bad
    regex in a `WatchedPath` is refused when it is made. The chunk is a real trace
    (pingpong), whose topics /ping and /pong bt2 lists."""
    from roscope.errors import InputError
    from roscope.live import LiveWindows, WatchedPath

    topics = {ev["payload"]["topic_name"] for ev in oracle.Reading(PINGPONG).events()
              if ev["name"] == "ros2:rcl_publisher_init"}
    assert {"/ping", "/pong"} <= topics

    with pytest.raises(InputError, match=r"--from: bad regular expression '\(': unclosed group"):
        WatchedPath("(", "^/pong$", 5_000_000)

    waiting = WatchedPath("^/ping$", "^/not_yet$", 5_000_000)
    lw = LiveWindows(2_000_000_000, paths=[waiting])
    lw.feed(PINGPONG)
    lw.close()
    _windows, alerts = lw.step(final=True)
    assert alerts == []

    broken = WatchedPath("^/ping$", "^/pong$", 5_000_000)
    broken.request = dataclasses.replace(broken.request, exclude=("(",))
    lw = LiveWindows(2_000_000_000, paths=[broken])
    lw.feed(PINGPONG)
    lw.close()
    with pytest.raises(InputError, match=r"--exclude: bad regular expression '\('"):
        lw.step(final=True)


# ---------------------------------------------------------------- MEDIUM 3: numbers

#: (verb argv, the option the error names): every duration option of every verb, and the
#: `--window START:END` of stats, flow and report, with values that are no number, not
#: finite, negative, zero where a duration must be positive, or past the stated range.
_NUMBERS = [
    *[(["watch", "--window", v], "--window") for v in ("nan", "inf", "-inf", "1e30", "-1", "0", "abc", "", "0x10", "1_0")],
    *[(["watch", "--duration", v], "--duration") for v in ("nan", "inf", "-5", "0", "1e400")],
    *[(["watch", "--deadline", f"a->b={v}"], "--deadline") for v in ("inf", "1e400", "1e300", "nan", "0", "-3", "")],
    *[(["record", "--flight-recorder", "--keep", v, "--", "true"], "--keep") for v in ("nan", "0", "1e9", "inf")],
    *[(["record", "--flight-recorder", "--rate", v, "--", "true"], "--rate") for v in ("inf", "0", "-1", "1e400")],
    *[(["load", PINGPONG, "-o", "{tmp}/x.duckdb", "--window", v], "--window") for v in ("nan", "-1", "1e6", "inf")],
    *[(["stats", PINGPONG, "--window", v], "--window")
      for v in ("0:inf", "nan:1", "5:1", "1:1", "-1:2", "abc", "1e999999:2", "0:1e400", "1:2:3", "0x1:2")],
    (["flow", PINGPONG, "--from", ".", "--to", ".", "--window", "0:inf"], "--window"),
    (["report", PINGPONG, "-o", "{tmp}/r.html", "--window", "1e309:2"], "--window"),
    # the other real-valued options, through the same parser
    *[(["check", "b.yaml", PINGPONG, "--alpha", v], "--alpha") for v in ("nan", "0", "1", "1e400")],
    *[(["check", "--suggest", "ds", "--margin", v], "--margin") for v in ("nan", "-1", "11")],
    *[(["experiment", "compare", "a", "b", "--alpha", v], "--alpha") for v in ("inf", "-0.5")],
    *[(["trend", "ds", "--metric", "callback:.", "--threshold", v], "--threshold") for v in ("nan", "-1", "inf")],
]


@pytest.mark.parametrize("argv, option", _NUMBERS, ids=[" ".join(a[:1] + a[-1:] if a[-1] != "true" else a[:1] + a[-3:-2])
                                                         + f" {o}" for a, o in _NUMBERS])
def test_every_duration_option_refuses_a_bad_number(argv, option, roscope_cmd, tmp_path):
    """MEDIUM 3: `watch --deadline 'a->b=inf'`/`=1e400` exited 70 (OverflowError), `=1e300`
    70 mid-run; `--window nan|inf|1e30` 70 after setup, `--window -1` gave windows ending
    before they start; `--duration nan|inf` ran forever; `stats --window 0:inf` exited 70.
    Each is now refused where the option is parsed (exit 2, within REFUSE_S): one line that
    names the option, the value, the unit and the range; nothing is made (the case's
    directory stays empty)."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    i = argv.index(option)
    argv[i:i + 2] = [f"{option}={argv[i + 1]}"]   # the value as given, even "-1"
    p = run(roscope_cmd, *argv, cwd=tmp_path)
    line = assert_refused(p, 2, rf"argument (-\w/)?{option}: ")
    assert re.search(r"not a number|out of range|end after its start|give START:END|give FROM->TO", line), line
    assert re.search(r"give (a number of (seconds|milliseconds|events per second)|a significance level|a margin|a share)"
                     r"|give START:END|a time from 0|end after|give FROM->TO", line), line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("window, lo_s, hi_s", [("0:", 0, None), (":", 0, None), (":1.5", 0, 1.5), ("0.5:", 0.5, None),
                                                ("0.000000001:1", 1e-9, 1)])
def test_stats_window_reads_either_side_empty_exactly(window, lo_s, hi_s, roscope_cmd):
    """MEDIUM 3 / issue 40: one `--window` vocabulary for stats, flow and report (before,
    stats refused an empty side and report clamped floats). The callback runs `stats
    --window` counts are those whose ros2:callback_start bt2 reads in [START, END) from the
    trace's first event (END empty: to the end)."""
    starts, first = [], None
    for ev in oracle.Reading(PINGPONG).events():
        first = ev["ts"] if first is None else first
        if ev["name"] == "ros2:callback_start":
            starts.append(ev["ts"])
    lo = first + round(lo_s * 1e9)
    hi = math.inf if hi_s is None else first + round(hi_s * 1e9)
    want = sum(lo <= t < hi for t in starts)
    p = run(roscope_cmd, "stats", PINGPONG, "--window", window, "--json", timeout=60)
    assert p.returncode == 0, p.stderr
    got = sum(c["count"] for c in json.loads(p.stdout)["callbacks"])
    assert got == want


# ---------------------------------------------------------------- MEDIUM 4: rich markup


def test_watch_view_shows_markup_in_names_as_text():
    """MEDIUM 4: a node or topic named `/ns[/bold]x` or `/t[/]` crashed the view (MarkupError,
    exit 70, the recording cut short) and `[link=...]`, `[bold red]` styled the names. The
    view (a real rich Console, with colours, rendering to a string) now shows every name as
    it is: each appears literally, and the output holds no hyperlink (OSC 8) and no red."""
    from rich.console import Console
    from roscope.commands.watch import _View

    names = ["/ns[/bold]x", "/t[/]", "[link=http://evil.example]/n[/link]", "[bold red]/alarm", "/a\\[b]"]
    buf = io.StringIO()
    view = _View(Console(file=buf, width=400, height=200, force_terminal=True, color_system="truecolor"))
    cb = {"procname": "p", "kind": "subscription", "count": 1, "p50_ns": 1e6, "p99_ns": 1e6, "max_ns": 1e6}
    d = {"window": {"start_s": 0.0, "end_s": 1.0},
         "callbacks": [{**cb, "node": n, "topic": n} for n in names],
         "topics": [{"topic": n, "rate_hz": 1.0, "deliveries": 1, "lat_p50_ns": 1, "lat_p99_ns": 1, "lat_max_ns": 1}
                    for n in names],
         "paths": [{"path": f"{names[0]}->{names[1]}",
                    "routes": [{"route": n, "flows": 1, "p50_ns": 1, "p99_ns": 1, "max_ns": 1, "misses": 0} for n in names]}],
         "lost_events": 0, "lost_events_total": 0}
    view(d)
    view.stop()
    out = buf.getvalue()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for n in names:
        assert plain.count(n) >= 3, f"{n!r} not shown as it is:\n{plain}"
    assert "\x1b]8;" not in out            # no hyperlink
    assert not re.search(r"\x1b\[[0-9;]*(31|38;2;128;0;0|91)m", out)   # no red


# ---------------------------------------------------------------- MEDIUM 5: check's XML and paths


def _budgets(path, name: str, callback: str = "^/ping ", extra: str = "") -> str:
    path.write_text(f'budgets:\n  - name: "{name}"\n    callback: "{callback}"\n    duration: {{max: 10 s}}\n{extra}',
                    encoding="utf-8")
    return str(path)


def test_junit_holds_names_xml_cannot(roscope_cmd, tmp_path):
    r"""MEDIUM 5: a budget named with U+FFFE and U+FFFF (a YAML escape) made JUnit XML that
    no parser reads. Now a real XML parser (xml.etree) reads it, and the name is in it with
    those characters shown as \ufffe, \uffff."""
    b = _budgets(tmp_path / "b.yaml", r"fast\ufffe and\uffff done", "^/ping timer")
    p = run(roscope_cmd, "check", b, PINGPONG, "--junit", tmp_path / "j.xml", timeout=60)
    assert p.returncode == 0, p.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    text = ET.tostring(root, encoding="unicode")
    assert r"fast\ufffe and\uffff done" in text


def test_a_lone_surrogate_in_budgets_is_one_line(roscope_cmd, tmp_path):
    r"""MEDIUM 5: a budget name "\ud800" (a lone surrogate: no Unicode character) exited 70
    writing the output. Now the file is refused with its line (check's usage errors are exit 2)."""
    b = _budgets(tmp_path / "b.yaml", r"a\ud800b")
    p = run(roscope_cmd, "check", b, PINGPONG, "--junit", tmp_path / "j.xml", timeout=60)
    assert_refused(p, 2, r"b\.yaml:2: holds a lone surrogate \(\\ud800\)")
    assert not (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("verb", ["stats", "info", "dump", "flow", "check-trace", "check-budgets", "load"])
def test_a_path_that_is_not_utf8_is_one_line(verb, roscope_cmd, tmp_path):
    """MEDIUM 5: a trace or budgets path of non-UTF-8 bytes (b'tr\\xff') exited 70 in every
    verb (the core takes UTF-8 paths). Now it is refused at parse time (exit 2) naming the
    path, shown with \\xff."""
    bad = os.fsencode(tmp_path) + b"/tr\xff"
    os.symlink(PINGPONG, bad)
    good_b = _budgets(tmp_path / "b.yaml", "ok")
    bad_b = os.fsencode(tmp_path) + b"/b\xff.yaml"
    os.link(good_b, bad_b)
    argv = {"stats": ["stats", bad], "info": ["info", bad], "dump": ["dump", bad], "load": ["load", bad, "-o", "x.duckdb"],
            "flow": ["flow", bad, "--from", ".", "--to", "."], "check-trace": ["check", good_b, bad],
            "check-budgets": ["check", bad_b, PINGPONG]}[verb]
    p = run(roscope_cmd, *[os.fsdecode(a) if isinstance(a, bytes) else a for a in argv], cwd=tmp_path)
    assert_refused(p, 2, r"\\xff.*: the input path is not UTF-8 text")
    assert not (tmp_path / "x.duckdb").exists()


# ---------------------------------------------------------------- MEDIUM 6: ReDoS


def test_regex_engine_agrees_with_python_re():
    """MEDIUM 6: the linear-time engine (`roscope.regex`, Rust's regex through the core)
    finds what Python's `re` finds, for the patterns users write (anchors, classes,
    alternations, escapes of names as `re.escape` makes them, Unicode classes); `$` is
    the end of the text (no trailing newline)."""
    from roscope import regex

    texts = ["/ping", "/pong", "/ping\n", "/a/b_c", "/sensors/imu timer 20.0 ms cb", "/мир", "", "x-y.z", "/t[0]",
             "std::_Bind<void (Foo::*(Foo*))()>", "/ns/ping2"]
    patterns = [r"^/ping$", r"ping", r"^/(ping|pong)$", r"\d+\.\d", r"^/\w+$", r"timer \d", r"^$", r"[.-]",
                r"(?i)^/PING", r"^/" + re.escape("t[0]") + r"$", re.escape("Foo::*(Foo*)"), r"/ns/.*\d$", r"\bimu\b"]
    for pat in patterns:
        rx = regex.compile(pat, "test")
        for t in texts:
            want = bool(re.search(pat, t)) and not (pat.endswith("$") and t.endswith("\n"))
            assert rx.search(t) == want, (pat, t)
        assert rx.mask(texts) == [rx.search(t) for t in texts]


def test_a_backtracking_budget_regex_is_linear(roscope_cmd, tmp_path):
    r"""MEDIUM 6: `callback: "^(\S+\s?)+X$"` ran past 40 s on ~400-character labels (Python's
    backtracking `re`). caret-end-to-end's callbacks have such labels (bt2: a registered
    symbol of 400+ characters, with a run of 60+ non-space characters, where Python's `re`
    takes exponential time on this pattern). `check` now ends in seconds: no callback
    matches (no label ends in X), one error line for the budget, exit 2 (incomplete)."""
    symbols = [ev["payload"]["symbol"] for ev in oracle.Reading(E2E).events()
               if ev["name"] == "ros2:rclcpp_callback_register"]
    longest = max(symbols, key=len)
    assert len(longest) >= 400 and max(len(w) for w in longest.split()) >= 60
    assert not any(s.rstrip().endswith("X") for s in symbols)
    b = _budgets(tmp_path / "b.yaml", "redos", r"^(\\S+\\s?)+X$")
    t0 = time.monotonic()
    p = run(roscope_cmd, "check", b, E2E, "--json", timeout=60)
    assert time.monotonic() - t0 < 30
    assert p.returncode == 2, p.stderr
    lines = json.loads(p.stdout)["lines"]
    bad = [x for x in lines if x["status"] == "error"]
    assert len(bad) == 1 and "no callback matches" in bad[0]["message"], bad


@pytest.mark.parametrize("pattern, reason", [(r"a(?=b)", "look-around"), (r"(a)\\1", "backreferences"),
                                             (r"a{1000}{1000}", "larger than"), (r"(", "unclosed group")])
def test_a_budget_regex_the_engine_cannot_run_is_one_line(pattern, reason, roscope_cmd, tmp_path):
    """MEDIUM 6: syntax the linear-time engine has not (look-around, backreferences, a
    pattern compiling past its size limit) is refused with the engine's reason, naming the
    file, the line and the key."""
    b = _budgets(tmp_path / "b.yaml", "x", pattern)
    p = run(roscope_cmd, "check", b, PINGPONG)
    assert_refused(p, 2, rf"b\.yaml:3: budgets\[0\]\.callback: bad regular expression .*{re.escape(reason)}")


def test_trend_path_metric_takes_the_flow_syntax(roscope_cmd, tmp_path):
    """MEDIUM 6 (consistency): `trend --metric path:FROM->TO` checked its regexes with
    Python's `re`, while the data-flow search now runs them on the linear-time engine: a
    look-ahead passed the check. It is checked by the same compiler now (exit 1, the
    engine's reason), before any dataset is opened."""
    p = run(roscope_cmd, "trend", tmp_path, "--metric", "path:^/ping(?=x)->^/pong$")
    assert_refused(p, 1, r"metric 'path:\^/ping\(\?=x\)->\^/pong\$': bad regular expression '\^/ping\(\?=x\)': look-around")


# ---------------------------------------------------------------- LOW


@pytest.mark.parametrize("argv", [["watch", "-o", "", "--duration", "1"], ["record", "-o", "", "--", "true"],
                                  ["record", "start", "-o", ""], ["check", "{b}", PINGPONG, "--junit", ""],
                                  ["check", "--suggest", "{tmp}", "-o", ""]],
                         ids=["watch-o", "record-o", "record-start-o", "check-junit", "check-suggest-o"])
def test_an_empty_output_path_is_refused(argv, roscope_cmd, tmp_path):
    """LOW: `watch -o ''` and `record -o ''` recorded into the current directory; `check
    --junit ''` wrote nothing and said nothing. Each is refused at parse time (exit 2),
    and nothing appears in the current directory."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    b = _budgets(tmp_path / "b.yaml", "x")
    p = run(roscope_cmd, *[a.replace("{b}", b).replace("{tmp}", str(tmp_path)) for a in argv], cwd=cwd)
    assert_refused(p, 2, r"the output path is empty")
    assert os.listdir(cwd) == []


def test_an_experiment_name_with_a_trailing_newline_is_refused(roscope_cmd, tmp_path):
    """LOW (`$` before a newline): an experiment's name `demo\\n` passed `^...$`; names are
    matched whole now (fullmatch)."""
    body = 'system: {start: [sleep, "30"]}\ndriver: {command: [true]}\nscenarios:\n  - {name: SCENARIO}\n'
    (tmp_path / "e.yaml").write_text('name: "demo\\n"\n' + body.replace("SCENARIO", "s"))
    p = run(roscope_cmd, "experiment", "run", tmp_path / "e.yaml", "-o", tmp_path / "out")
    assert_refused(p, 1, r"e\.yaml: name: 'demo\\n': use letters, digits")
    (tmp_path / "e.yaml").write_text(body.replace("SCENARIO", '"s1\\n"'))
    p = run(roscope_cmd, "experiment", "run", tmp_path / "e.yaml", "-o", tmp_path / "out")
    assert_refused(p, 1, r"e\.yaml: scenarios\[0\]\.name: 's1\\n': use letters, digits")
    assert not (tmp_path / "out").exists()


def test_a_fifo_as_budgets_or_deps_file_never_hangs(roscope_cmd, tmp_path):
    """LOW: a FIFO as the budgets file, or as a path budget's `deps:` file, hung `check`
    (an open that waits for a writer). Both are refused at once, without blocking: the
    budgets file with exit 2; the deps file makes its budget's lines errors naming it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p = run(roscope_cmd, "check", fifo, PINGPONG)
    assert_refused(p, 2, r"fifo: is a FIFO, not a regular file: not a budgets file")
    b = tmp_path / "deps.yaml"
    b.write_text('budgets:\n  - path: {from: "^/ping$", to: "^/pong$", deps: fifo}\n    latency: {p99: 1 s}\n')
    p = run(roscope_cmd, "check", b, PINGPONG, "--json", timeout=60)
    assert p.returncode == 2, p.stderr
    errs = [x for x in json.loads(p.stdout)["lines"] if x["status"] == "error"]
    assert errs and all("fifo: is a FIFO, not a regular file: not a dependency file" in x["message"] for x in errs)


def test_a_file_that_is_not_budgets_is_never_quoted(roscope_cmd, tmp_path):
    """LOW: `check /etc/shadow` (or `roscope_budgets("../../etc/shadow")`) printed the file's
    first line in the error (`experiment run /etc/shadow` too: "unknown key(s) root:..."). A
    file without `budgets:` is now said not to be a budgets file (without any of system,
    driver, scenarios: not an experiment file), and no byte of it is in the output."""
    secret = "root:$6$s3cretHash:19000:0:99999:7:::"
    (tmp_path / "shadow").write_text(secret + "\nbin:*:19000:0:99999:7:::\n")
    p = run(roscope_cmd, "check", tmp_path / "shadow", PINGPONG)
    assert_refused(p, 2, r"shadow:1: top level: no `budgets:` key: not a budgets file")
    assert "s3cret" not in p.stderr and "19000" not in p.stderr and "bin:" not in p.stderr
    # the experiment file is read the same way
    p = run(roscope_cmd, "experiment", "run", tmp_path / "shadow", "-o", tmp_path / "out")
    assert_refused(p, 1, r"shadow: top level: none of system, driver, scenarios: not an experiment file")
    assert "s3cret" not in p.stderr and "19000" not in p.stderr and "bin:" not in p.stderr


def _plugin_args() -> list[str]:
    """`-p roscope.pytest_plugin` unless roscope is installed with its pytest11 entry point."""
    import importlib.metadata
    eps = importlib.metadata.entry_points(group="pytest11")
    return [] if any(e.value == "roscope.pytest_plugin" for e in eps) else ["-p", "roscope.pytest_plugin"]


_PLUGIN_TEST = '''
import pytest
from roscope.pytest_plugin import ms

{marker}
def test_it({fixture}):
    {body}
'''


@pytest.mark.parametrize("marker, fixture, body, expect", [
    ("@pytest.mark.roscope_budgets(123)\n@pytest.mark.roscope_trace(TRACE)", "roscope_trace", "pass",
     r"roscope_budgets\(FILE\): expected a path \(str or os\.PathLike\), got int 123"),
    ("@pytest.mark.roscope_trace(12345)", "roscope_trace", "pass",
     r"roscope_trace\(PATH\): expected a path \(str or os\.PathLike\), got int 12345"),
    ("@pytest.mark.roscope_record(kernel='false')", "roscope_recording", "pass",
     r"roscope_record\(kernel=\.\.\.\): expected True or False, got str 'false'"),
    ("@pytest.mark.roscope_budgets(SHADOW)\n@pytest.mark.roscope_trace(TRACE)", "roscope_trace", "pass",
     r"no `budgets:` key: not a budgets file"),
], ids=["budgets-int", "trace-int", "record-kernel-text", "budgets-not-a-budgets-file"])
def test_plugin_markers_of_the_wrong_kind(marker, fixture, body, expect, pytester, tmp_path):
    """LOW: `roscope_budgets(123)` / `roscope_trace(12345)` raised raw TypeErrors;
    `roscope_record(kernel="false")` turned kernel recording on (a recording of the kernel,
    as root); a budgets marker on another file quoted its first line. Each is now one clear
    message (a usage error, before any recording starts), and nothing of the file."""
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$s3cretHash:19000:0:99999:7:::\n")
    marker = marker.replace("TRACE", repr(PINGPONG)).replace("SHADOW", repr(str(shadow)))
    pytester.makepyfile(_PLUGIN_TEST.format(marker=marker, fixture=fixture, body=body))
    r = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", timeout=120)
    text = r.stdout.str() + r.stderr.str()
    assert re.search(expect, text), text
    assert "TypeError:" not in text and "Traceback" not in text and "s3cret" not in text
    assert r.ret != 0


def test_plugin_report_dir_on_a_file_keeps_the_measured_value(pytester, tmp_path):
    """LOW: `--roscope-reports` naming a file replaced a failing assertion's message (the
    measured value, the limit) with FileExistsError. The message keeps them and says the
    report was not written."""
    (tmp_path / "reports").write_text("a file\n")
    pytester.makepyfile(_PLUGIN_TEST.format(
        marker=f"@pytest.mark.roscope_trace({PINGPONG!r})", fixture="roscope_trace",
        body='assert roscope_trace.callback("^/ping timer").duration.max <= ms(0.000001)'))
    r = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider",
                                      f"--roscope-reports={tmp_path / 'reports'}", timeout=180)
    text = r.stdout.str()
    assert r.ret == 1, text
    assert re.search(r"duration max of /ping timer .*: measured \d+\.\d{3} ms, limit <= 0\.000 ms", text), text
    assert "the report of the trace was not written" in text and "FileExistsError" not in text


@pytest.mark.lttng
def test_plugin_recording_without_a_trace_fails_once(pytester, lttng_ready):
    """LOW: a `roscope_recording` in which nothing was traced failed twice: the test's
    `stop()` and again at teardown (stopping the session a second time). It now fails
    the test once, with the reason, and the teardown adds no error."""
    pytester.makepyfile(_PLUGIN_TEST.format(marker="", fixture="roscope_recording", body="roscope_recording.stop()"))
    r = pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", timeout=180)
    text = r.stdout.str()
    r.assert_outcomes(failed=1, errors=0)
    assert "error at teardown" not in text.lower(), text


# ---------------------------------------------------------------- fuzz


def _decimal_in(text: str, lo: float, hi: float, lo_open=False, hi_open=False) -> bool:
    """The oracle of the number options: a plain decimal (Python's own reading of digits,
    point and exponent) in the range."""
    if not re.fullmatch(r"\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]{1,6})?\s*", text):
        return False
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        return False
    return (d > Decimal(str(lo)) if lo_open else d >= Decimal(str(lo))) and (d < Decimal(str(hi)) if hi_open else d <= Decimal(str(hi)))


def _numbers(rng: random.Random, n: int) -> list[str]:
    fixed = ["nan", "NaN", "inf", "-inf", "+inf", "infinity", "1e309", "-0", "0", "0.0", "1e-400", "1e400", "9" * 400,
             "1_000", "0x1f", "١٢", "5 ", " 5", "5s", "", " ", "-1", "1e6", "86400", "86400.000001", "1e-3", "0.0009",
             "2592000", "3600000", "0.001", "\x00", "5\n"]
    out = fixed[:]
    while len(out) < n:
        k = rng.randrange(4)
        if k == 0:
            out.append(repr(rng.uniform(-1e6, 1e7)))
        elif k == 1:
            out.append(f"{rng.randint(1, 9)}e{rng.randint(-20, 400)}")
        elif k == 2:
            out.append("".join(rng.choice("0123456789.eE+-nai x_") for _ in range(rng.randint(1, 12))))
        else:
            out.append(str(rng.randint(-10, 10**7)))
    return out


def test_fuzz_numbers_and_regexes_of_every_verb(roscope_cmd, tmp_path):
    """Must show: a fuzz (a seeded table: hypothesis is not installed here) of every numeric
    and regex option of watch, record, check, flow and stats. Each run exits 0, 1 or 2 with
    at most one error line, never 70, never a signal, never past REFUSE_S (60 s for the runs
    that analyse). The parse-only runs (watch, record: a valid value must not start a
    recording) end with a known-bad `--rotate-ms 0` / `--num-subbuf x` after the fuzzed
    option: the error then names the fuzzed option exactly when the oracle (`_decimal_in`,
    Python's `re` for regexes) says its value is bad. Numbers: a third fixed (nan, inf,
    1e400, 400 digits, `1_000`, hex, Arabic digits, NUL...), the rest random; regexes:
    Python-valid and invalid ones, look-around, nested quantifiers."""
    rng = random.Random(43)
    nums = _numbers(rng, 48)
    opts = [("watch", "--window", (0.001, 86400)), ("watch", "--duration", (0.001, 2592000)),
            ("record", "--keep", (0.1, 3600)), ("record", "--rate", (1, 10_000_000))]
    runs = 0
    for verb, opt, (lo, hi) in opts:
        for v in rng.sample(nums, 14):
            tail = ["--rotate-ms", "0"] if verb == "watch" else ["--num-subbuf", "x", "--", "true"]
            argv = [verb, *(["--flight-recorder"] if verb == "record" else []), f"{opt}={v}", *tail]
            if "\x00" in v:
                continue   # no argv holds NUL
            p = run(roscope_cmd, *argv, cwd=tmp_path)
            runs += 1
            line = assert_refused(p, 2)
            bad = _decimal_in(v, lo, hi) is False
            assert (f"argument {opt}:" in line) == bad, (v, line)
    # deadlines: the number and the two regexes
    for v in rng.sample(nums, 8) + ["5"]:
        for src in ["^/ping$", "(", "a(?=b)", "(a+)+$", "[z-a]", r"\d{2,}\b", ""]:
            p = run(roscope_cmd, "watch", f"--deadline={src}->^/pong$={v}", "--rotate-ms", "0", cwd=tmp_path)
            runs += 1
            line = assert_refused(p, 2)
            py_ok = _python_regex_ok(src) and src and "(?=" not in src
            bad = not (py_ok and _decimal_in(v, 0.001, 3_600_000))
            assert ("argument --deadline:" in line) == bad, (src, v, line)
    # analysing verbs: stats --window, flow --from/--to/--window, check's budget regex and numbers
    windows = ["0:1", ":", "0.5:", "1:0", "nan:1", "0:inf", "1e400:", ":-1", "abc", "1:2:3", "0.000000001:0.000000002"]
    for w in windows:
        p = run(roscope_cmd, "stats", PINGPONG, "--window", w, "--json", timeout=60)
        runs += 1
        _assert_outcome(p)
        assert (p.returncode == 0) == _window_ok(w), (w, p.stderr)
    for src in ["^/ping$", "(", "(a+)+$", r"^(\S+\s?)+X$", "a(?=b)", ".*", r"\bpong\b"]:
        p = run(roscope_cmd, "flow", PINGPONG, "--from", src, "--to", "^/pong$", "--json", timeout=60)
        runs += 1
        _assert_outcome(p)
        if not (_python_regex_ok(src) and "(?=" not in src):
            assert p.returncode == 1 and "bad regular expression" in p.stderr, (src, p.stderr)
    for cb, dur in [("^/ping ", "1 ms"), ("(", "1 ms"), (r"^(\\S+\\s?)+X$", "1 ms"), ("^/ping ", "nan ms"),
                    ("^/ping ", "1e400 ms"), ("^/ping ", "-1 ms"), ("^/ping ", "1e16 ms"), ("^/ping ", "5 parsecs")]:
        b = tmp_path / "b.yaml"
        b.write_text(f'budgets:\n  - callback: "{cb}"\n    duration: {{max: {dur}}}\n')
        p = run(roscope_cmd, "check", b, E2E if "S+" in cb else PINGPONG, timeout=60)
        runs += 1
        assert p.returncode in (0, 1, 2), p.stderr
        assert p.returncode != 70 and not CRASH_TEXT.search(p.stderr), p.stderr
    assert runs >= 120


def _python_regex_ok(p: str) -> bool:
    try:
        re.compile(p)
        return True
    except re.error:
        return False


def _window_ok(w: str) -> bool:
    """The oracle of `--window START:END`: two plain decimals (or empty sides) with
    0 <= START < END <= 1e9."""
    if w.count(":") != 1:
        return False
    a, b = w.split(":")
    if a.strip() and not _decimal_in(a, 0, 1e9):
        return False
    if b.strip() and not _decimal_in(b, 0, 1e9):
        return False
    return not (a.strip() and b.strip()) or Decimal(a) < Decimal(b)


def _assert_outcome(p: subprocess.CompletedProcess) -> None:
    assert p.returncode in (0, 1, 2), p.stderr
    assert not CRASH_TEXT.search(p.stderr), p.stderr
    assert len([x for x in p.stderr.splitlines() if ": error: " in x]) <= 1, p.stderr
    if p.returncode:
        assert not p.stdout


if __name__ == "__main__":   # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
