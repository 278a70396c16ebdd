"""Long work is never silent (issue 30, item 1): every verb that can run long shows
its phase, how far it got, what it found so far, the time elapsed and an estimate,
on stderr: redrawn in place on a terminal (and cleared before the results), a line
per phase and every few seconds elsewhere when asked (`--progress`), nothing with
`--json` or without a terminal unless asked. A data-flow search whose pace makes it
huge says so while it runs, with how to narrow it.

The terminal is a real pseudo-terminal; the count of output messages a search
goes through is babeltrace2's count of publications on the --to topic.
"""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest
from roscope import progress

from tests.support.shared import TRACES

E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")

pytestmark = pytest.mark.skipif(not os.path.isdir(TRACES), reason=f"no shared traces at {TRACES}")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": PYTHON, "COLUMNS": "200"}


def _publications_on(path: str, topic: str) -> int:
    """babeltrace2: rcl_publish events of the publishers of `topic` (by process and handle)."""
    bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings are the oracle")
    handles, n = set(), 0
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        if ev.name == "ros2:rcl_publisher_init" and str(ev.payload_field["topic_name"]) == topic:
            handles.add((int(ev.common_context_field["vpid"]), int(ev.payload_field["publisher_handle"])))
        elif ev.name == "ros2:rcl_publish":
            n += (int(ev.common_context_field["vpid"]), int(ev.payload_field["publisher_handle"])) in handles
    return n


def _run_on_pty(args: list[str], timeout: float = 120) -> tuple[int, str, bytes, list[tuple[float, bytes]]]:
    """`roscope ARGS` with stderr on a pseudo-terminal: (exit status, stdout, all of the
    terminal's bytes, [(seconds since start, bytes read)])."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "roscope", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=slave, env=_env())
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                d = os.read(master, 65536)
            except OSError:
                break
            if not d:
                break
            chunks.append((time.monotonic() - t0, d))
        elif p.poll() is not None:
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            raise AssertionError(f"roscope {args} ran for more than {timeout} s")
    out = p.stdout.read().decode()
    p.wait()
    os.close(master)
    return p.returncode, out, b"".join(c for _, c in chunks), chunks


def test_flow_shows_its_phases_and_outputs_searched_when_asked():
    """`--progress` with stderr a pipe: a line per phase (and its end), the search's
    output messages out of babeltrace2's count of publications on the --to topic;
    stdout is the same as without progress."""
    args = [E2E, "--from", "^/topic1$", "--to", "^/topic3$"]
    quiet = subprocess.run([sys.executable, "-m", "roscope", "flow", *args], capture_output=True, text=True, env=_env())
    shown = subprocess.run([sys.executable, "-m", "roscope", "flow", *args, "--progress"], capture_output=True, text=True,
                           env=_env())
    assert quiet.returncode == shown.returncode == 0, shown.stderr
    assert not re.search(r"^roscope flow: ", quiet.stderr, re.M), quiet.stderr  # not a terminal, not asked
    lines = [x for x in shown.stderr.splitlines() if x.startswith("roscope flow: ")]
    phases = [x.split(": ")[1] for x in lines]
    order = ["opening", "reading the trace", "causal links", "data-flow search", "path statistics"]
    assert [p for p in dict.fromkeys(phases) if p in order] == order, phases
    n = _publications_on(E2E, "/topic3")
    assert n > 0
    search = [x for x in lines if ": data-flow search: " in x]
    assert search[0].startswith(f"roscope flow: data-flow search: 0/{n} output messages (0 %), 0 flows"), search
    flows = int(re.search(r'"flows": (\d+)', subprocess.run(
        [sys.executable, "-m", "roscope", "flow", *args, "--json"], capture_output=True, text=True, env=_env()).stdout).group(1))
    assert search[-1].startswith(f"roscope flow: data-flow search: {n}/{n} output messages (100 %), {flows:,} flows"), search
    # the numbers on stdout do not move (only the timing of the search does)
    strip = lambda s: re.sub(r"\(\d+\.\d+ ms, \d+\.\d+ µs per flow\)", "", s)  # noqa: E731
    assert strip(shown.stdout) == strip(quiet.stdout)


def test_a_terminal_gets_one_line_redrawn_and_cleared():
    """On a terminal the progress is one line redrawn in place, from the start, and
    cleared before the warnings; with --json nothing is drawn unless --progress."""
    rc, out, tty, chunks = _run_on_pty(["flow", E2E, "--from", "^/topic1$", "--to", "^/topic3$"])
    assert rc == 0 and "data flows on" in out
    text = tty.decode()
    assert "\r\x1b[Kroscope flow: " in text and "\n" not in text.split("roscope: warning")[0], text[:500]
    first_warning = text.index("roscope: warning")
    assert text[:first_warning].endswith("\r\x1b[K"), text[:first_warning][-200:]  # the line was cleared first
    rc, out, tty, _ = _run_on_pty(["flow", E2E, "--from", "^/topic1$", "--to", "^/topic3$", "--json"])
    assert rc == 0 and "roscope flow:" not in tty.decode() and out.startswith("{")
    rc, out, tty, _ = _run_on_pty(["stats", E2E, "--json", "--progress"])
    assert rc == 0 and "\r\x1b[Kroscope stats: " in tty.decode() and out.startswith("{")


def test_state_estimate_and_watchers():
    """The line's numbers, the estimate of the time left, a watcher's warning printed once
    (also when nothing is drawn), and `wanted`."""
    import io

    class Meter:  # the core's meter as read: (done, total, found, work)
        def __init__(self):
            self.v = (0, 0, 0, 0)

        def read(self):
            return self.v

    out = io.StringIO()
    m = Meter()
    calls = []
    with progress.Progress(False, "flow", out) as p:
        assert progress.current() is p
        p.phase("data-flow search", total=400, unit="output messages", meter=m, found="flows")
        p.watch(lambda s: calls.append(s) or ("huge\x1b" if s.done >= 100 else None))
        m.v = (50, 0, 1_000, 3_000)
        time.sleep(0.8)
        asked = len(calls)
        m.v = (100, 0, 2_500, 9_000)
        time.sleep(0.8)
        warned = len(calls)
        time.sleep(0.8)
        s = p.state()
        assert (s.done, s.total, s.found, s.work) == (100, 400, 2_500, 9_000)
        line = p.line()
    assert progress.current() is not p
    assert "data-flow search: 100/400 output messages (25 %), 2,500 flows" in line and "left" in line, line
    assert out.getvalue().count("roscope: warning: huge\\x1b") == 1, out.getvalue()  # once, escaped
    assert asked >= 1 and warned > asked and len(calls) == warned  # asked until it warned, then no more
    assert progress.duration(59) == "59 s" and progress.duration(185) == "3 min 05 s"
    assert progress.wanted(True, json=True) and not progress.wanted(False)
    assert not progress.wanted(None, stream=io.StringIO())


def test_a_huge_search_says_how_to_narrow_it():
    """The warning of a search whose pace makes it huge names the --to topics with their
    counts (babeltrace2's), the busiest other topics for --exclude, and --max-flows."""
    from roscope.flow import search
    from roscope.flow.request import FlowRequest

    n3 = _publications_on(E2E, "/topic3")
    req = FlowRequest("^/topic1$", "^/topic3$")
    slow = progress.State("data-flow search", elapsed=10.0, done=2, total=n3, found=5, work=40)
    text = search.huge_search_warning(slow, req, [(n3, "/topic3")], [(99, "/parameter_events")])
    assert f"{n3:,} output messages on the --to topics /topic3 ({n3:,})" in text, text
    assert "20 candidate flows per output message" in text and "--exclude" in text and "/parameter_events" in text
    assert "--max-flows N" in text and "(now 10,000,000)" in text and "'^/topic3$'" in text
    fast = progress.State("data-flow search", elapsed=1.0, done=n3 - 1, total=n3, found=5, work=40)
    assert search.huge_search_warning(fast, req, [(n3, "/topic3")], []) is None
    stuck = progress.State("data-flow search", elapsed=4.0, done=0, total=1000, found=0, work=0)
    assert "more than" in search.huge_search_warning(stuck, req, [(1000, "/topic3")], [])
