"""`roscope report` opened in a real browser: Debian's chromium, headless, driven by
playwright, with the network cut (an offline context, and every request other than
the report's own file aborted and recorded).

For each report: no console error, no network request, every section present and
every plot drawn (an SVG with drawn marks), and the numbers in the callback, topic
and path tables equal `roscope stats --json` and `roscope flow --json` on the same
input (each cell keeps its exact value in data-v). Inputs: the CARET end-to-end
trace, a database written by `roscope load` from it, the Autoware trace, a fresh
recording of the ROS 1 example (examples/ros1_pipeline/run.sh, the test session's
recording: tests/conftest.py's ros1_pipeline_run), and a 10M-event ros2sim trace (slow). The
pages of the CARET end-to-end and Autoware traces are made once per session
(conftest.py's report_page) and read by test_report_layout, test_report_pairs and
test_report_why too.

Set ROSCOPE_REPORT_SCREENSHOTS=DIR to keep the screenshots the test takes (docs/
holds the ones committed).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_pages import E2E_PAIR, TRACES, Opened, check_page, make_report, open_report, roscope, same

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) drives the browser")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

REPO = Path(__file__).resolve().parents[1]
ROS1_PAIR = ("^/(lidar|imu|camera)$", "^/plan$")


def check_stats(o: Opened, inp) -> dict:
    st = json.loads(roscope("stats", str(inp), "--json").stdout)
    cbs = o.table("callbacks")
    same(cbs, st["callbacks"], lambda c: c["callback_id"])
    assert any(v.get("p99_ns") for v in cbs.values())
    same(o.table("topics"), st["topics"], lambda t: t["topic"])
    return st


def check_flow(o: Opened, inp, pair, i: int = 0) -> dict:
    fl = json.loads(roscope("flow", str(inp), "--from", pair[0], "--to", pair[1], "--json").stdout)
    rows = [{"id": f"{p['path_id']}:{c}", **p[c]} for p in fl["paths"] for c in ("latency", "communication", "idle", "computation")]
    same(o.table(f"paths-{i}"), rows, lambda r: r["id"])
    comps = fl["components"]
    same(o.table(f"comm-{i}"), comps["communication_by_topic"], lambda r: r["topic"])
    same(o.table(f"idle-{i}"), comps["idle_by_node"], lambda r: r["node"])
    return fl


def flow_pair(o: Opened, i: int = 0) -> tuple[str, str]:
    """The --from/--to regexes a flow set of the page was computed with (kept by its heading)."""
    return tuple(o.page.evaluate("i => { const h = document.getElementById(`flows-${i}`); return [h.dataset.from, h.dataset.to]; }", i))


def test_caret_end_to_end(browser, report_page):
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    o = open_report(browser, report_page(trace, [E2E_PAIR]))  # conftest.py: test_report_layout opens the same page
    check_page(o, {"callbacks": 3, "topics": 2, "threads": 2, "flows": 4})
    check_stats(o, trace)
    fl = check_flow(o, trace, E2E_PAIR)
    assert fl["summary"]["flows"] > 0 and flow_pair(o) == E2E_PAIR
    assert "ROS 2" in o.page.inner_text("#overview")
    o.shot("report-callbacks.png", "#callbacks")
    o.shot("report-flows.png", "#flows")


def test_database_input_is_not_written(browser, tmp_path):
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    db = tmp_path / "run.duckdb"
    roscope("load", str(trace), "-o", str(db))
    before = db.read_bytes()
    o = open_report(browser, make_report(db, tmp_path / "db.html", [E2E_PAIR]))
    check_page(o, {"callbacks": 3, "flows": 4})
    check_stats(o, db)
    check_flow(o, db, E2E_PAIR)
    assert db.read_bytes() == before


@pytest.mark.slow
def test_autoware_with_pairs_found_automatically(browser, report_page):
    trace = TRACES / "ros2" / "autoware-carla-galactic"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    path = report_page(trace)  # the page test_report_layout and test_report_pairs read too (conftest.py)
    assert path.stat().st_size < 15_000_000
    o = open_report(browser, path)
    check_page(o, {"callbacks": 3, "topics": 1, "threads": 1, "flows": 4})
    st = check_stats(o, trace)
    assert len(st["callbacks"]) > 100
    pair = flow_pair(o)
    assert pair[0].startswith("^(") and pair[1].startswith("^(")
    assert check_flow(o, trace, pair)["summary"]["flows"] > 0


@pytest.mark.lttng
@pytest.mark.ros1
def test_ros1_example(browser, lttng_ready, ros1_pipeline_run, tmp_path):
    trace = ros1_pipeline_run["trace"]  # examples/ros1_pipeline/run.sh -d 8, once per session (conftest.py)
    o = open_report(browser, make_report(trace, tmp_path / "ros1.html", [ROS1_PAIR]))
    check_page(o, {"callbacks": 3, "topics": 2, "threads": 1, "flows": 4})
    check_stats(o, trace)
    assert check_flow(o, trace, ROS1_PAIR)["summary"]["paths"] >= 3  # camera, lidar and imu reach the plan
    assert "ROS 1" in o.page.inner_text("#overview")


def big_trace() -> Path:
    """The 10M-event ros2sim trace of bench/flow.py (tests/support/big_trace.py, made when missing)."""
    from tests.support import big_trace

    return Path(big_trace.ensure_trace())


@pytest.mark.slow
@pytest.mark.lttng
def test_ten_million_events(browser, lttng_ready, tmp_path):
    from tests.support import big_trace as bt

    trace = big_trace()
    pair = (bt.FROM, bt.TO)
    # One decode of the 10M events (`roscope load`), then the report and the reference
    # numbers on its database: a report, stats or flow on the database are those on the
    # trace (test_streaming.py, test_database_input_is_not_written; the report of a trace
    # is the report of the database its load makes: commands/report.py opens either
    # through the same `open_inputs`).
    db = tmp_path / "big.duckdb"
    roscope("load", str(trace), "-o", str(db))
    path = make_report(db, tmp_path / "big.html", [pair])
    assert path.stat().st_size < 15_000_000
    o = open_report(browser, path)
    # Input waits over 1M transport links too (roscope.executor's query is linear).
    check_page(o, {"callbacks": 3, "topics": 2, "threads": 2, "flows": 4})
    check_stats(o, db)
    check_flow(o, db, pair)


def test_refuses_to_overwrite_and_checks_arguments(tmp_path):
    trace = TRACES / "ros2" / "caret-talker-listener-galactic"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    out = tmp_path / "r.html"
    out.write_text("keep")
    # --window is parsed by argparse (roscope.numbers.window, issue 43): a usage error, exit 2
    for args, msg, rc in (([], "already exists", 1), (["--force", "--from", "x"], "in pairs", 1),
                          (["--force", "--window", "5:1"], "--window", 2), (["--force", "--from", "(", "--to", "x"], "--from", 1)):
        p = subprocess.run([sys.executable, "-m", "roscope", "report", str(trace), "-o", str(out), *args],
                           capture_output=True, text=True)
        assert p.returncode == rc and msg in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert out.read_text() == "keep"
    make_report(trace, out, extra=["--force", "--window", "0:0.1"])
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_trace_strings_are_escaped(browser, tmp_path):
    """A topic or node name that is markup stays text: in the title, the tables, the figures' labels and the
    JSON block (nothing runs, nothing is fetched, the name is shown as written)."""
    from roscope.report import figures as F
    from roscope.report.html import Col, Page, table

    evil = '</script><img src=x onerror=alert(1)>\x1b[31m&amp;"'
    page = Page(f"report {evil}")
    body = table("evil", [Col("topic", "topic"), Col("n", "n", "int")], [{"topic": evil, "n": 3}], row_id="topic")
    body += page.fig("evil", F.bars([F.t(evil)], [1.0], F.t(evil), "x"))
    page.add("overview", evil, body)
    path = tmp_path / "evil.html"
    path.write_text(page.render(evil), encoding="utf-8")
    dialogs, errors, requests = [], [], []
    pg = browser.new_page()
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url) if r.url != path.resolve().as_uri() else None)
    pg.goto(path.resolve().as_uri())
    pg.wait_for_function("() => document.querySelector('.plot').dataset.rendered")
    assert errors == [] and requests == [] and dialogs == []
    shown = evil.replace("\x1b", "\\x1b")
    assert pg.title() == f"report {shown}"
    assert pg.inner_text("#tbl-evil tbody td") == shown
    assert pg.evaluate("() => document.querySelectorAll('img').length") == 0
    assert shown in pg.evaluate("() => document.querySelector('#fig-evil .ytick text').textContent")


def _long_name_chain(n: int, length: int) -> tuple[dict, list[str]]:
    """A ros2sim system: a chain of `n` nodes, each in its own process, the first on a timer,
    each passing a message on to the next; every node and topic name `length` characters long
    (each of its own letter). Returns (the description, every node and topic name)."""
    procs, names = [], []
    topic = lambda i: f"/t{i}" + chr(ord("k") + i) * length  # noqa: E731
    for i in range(n):
        node = {"name": f"n{i}" + chr(ord("a") + i) * length}
        names.append("/" + node["name"])
        if i < n - 1:
            node["publishers"] = [{"topic": topic(i), "depth": 10}]
            names.append(topic(i))
        work = {"dist": "uniform", "min_us": 30, "max_us": 80}
        if i == 0:
            node["timers"] = [{"period_ms": 50, "work": work, "publish": [topic(0)]}]
        else:
            node["subscriptions"] = [{"topic": topic(i - 1), "depth": 10, "work": work,
                                      **({"publish": [topic(i)]} if i < n - 1 else {})}]
        procs.append({"name": f"p{i}", "nodes": [node]})
    return {"description": "a chain of nodes with long names", "processes": procs}, names


@pytest.mark.lttng
def test_long_names_keep_the_size_limit(browser, lttng_ready, tmp_path):
    """Issue 31 item 13: the report's 15 MB limit with 100 KB names. A real ros2sim recording
    of six nodes and five topics whose names are 100,000 characters each (the report of the
    commit before this work: 30.4 MB) gives a page under MAX_BYTES where every such name is
    shown cut ("… [name N]") and given in full in the "Long names" section: each of the 11
    names of the system's description (the oracle) is in the page in full, and the page
    opens in the browser with no error, the section listing them."""
    from roscope.report import MAX_BYTES, names

    system, long = _long_name_chain(6, 100_000)
    (tmp_path / "system.json").write_text(json.dumps(system))
    sim = REPO / "tools" / "ros2sim"
    subprocess.run(["make", "-s", "-C", str(sim)], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run([sys.executable, str(sim / "ros2sim.py"), "run", "--system", str(tmp_path / "system.json"),
                        "--duration", "2", "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "long.html"
    p = roscope("report", str(tmp_path / "run"), "-o", str(out))
    assert out.stat().st_size <= MAX_BYTES, out.stat().st_size
    text = out.read_text(encoding="utf-8")
    for name in long:
        assert name in text, f"{name[:20]}... ({len(name)} characters) is not in the page in full"
    o = open_report(browser, out)
    assert o.errors == [] and o.requests == []
    listed = o.page.evaluate("() => [...document.querySelectorAll('#long-names code.long-name')].map(c => c.textContent)")
    assert set(long) <= set(listed)
    cells = o.page.evaluate("() => [...document.querySelectorAll('#tbl-topics tbody td[data-k=topic]')].map(c => c.textContent)")
    cut = [c for c in cells if c.startswith("/t")]
    assert len(cut) == 5 and all(len(c) < names.LIMIT + 20 and c.endswith("]") and "… [name " in c for c in cut), cut
    assert "Traceback" not in p.stderr
