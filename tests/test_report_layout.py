"""The report read as a user reads it: headless Chromium at 1400 px, measured.

- The page stays short with its parts folded (the Autoware trace: under 12,000 px)
  and never wider than the window; its file under 15 MB.
- The path graph (Graphviz dot) has no two labels overlapping and none outside the
  drawing (measured: the bounding boxes of its texts).
- Every column of every table can be seen: in view, or by scrolling its own box.
- Every categorical plot labels every row; a legend never touches an axis title; a
  box plot on a log axis keeps its whiskers inside the plot area.
- Beside every path that rests on fallback intra-node edges, the "guessed" badge; on
  no other. The oracle: the trace has no causal-link annotation (babeltrace2 lists its
  events) and no dependency file is given, so every intra-node step of a path (two
  callbacks in a row in its full text) is a fallback edge.
- The timeline opens and folds a process, zooms, and draws the axis at the top and
  the bottom; the message-flow plot draws one line per flow of the top path.

Inputs: the CARET end-to-end trace, and the Autoware trace (slow; its screenshot is
docs/report-autoware.png, kept with ROSCOPE_REPORT_SCREENSHOTS=DIR).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.report_pages import E2E_PAIR, TRACES, Opened, make_report, open_report, unfold

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) drives the browser")
bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) say which events the trace has")

from tests.support import ros_graph  # noqa: E402  (needs bt2)
from tests.support.cli import roscope as run_roscope  # noqa: E402

WIDTH = 1400
MAX_HEIGHT = 12_000


@pytest.fixture(scope="module")
def wide(chromium):
    """An offline context of the session's chromium (conftest.py), WIDTH px wide."""
    ctx = chromium.new_context(offline=True, viewport={"width": WIDTH, "height": 1000})
    yield ctx
    ctx.close()


def _trace(name: str) -> Path:
    t = TRACES / "ros2" / name
    if not t.is_dir():
        pytest.skip(f"{t} is not there")
    return t


@pytest.fixture(scope="module")
def e2e(wide, report_page):
    trace = _trace("caret-end-to-end-cyclonedds")
    path = report_page(trace, [E2E_PAIR])  # test_report's page (conftest.py: made once per session)
    return trace, path, open_report(wide, path)


@pytest.fixture
def autoware(wide, report_page):
    """Its page is closed after the test: left open with every plot drawn, it slowed the next tests' pages."""
    trace = _trace("autoware-carla-galactic")
    path = report_page(trace)  # test_report's and test_report_pairs' page (conftest.py: made once per session)
    o = open_report(wide, path)
    yield trace, path, o
    o.page.close()


def annotated(trace: Path) -> bool:
    """Whether the trace has causal-link annotation events (babeltrace2's event names: tests/support/ros_graph.py's
    decoding, which test_report_pairs reads too, made once per session)."""
    return any("message_link" in name for name in ros_graph.read(trace).events)


# ---------------------------------------------------------------- checks


def page_size(o: Opened) -> tuple[int, int]:
    return tuple(o.page.evaluate("() => [document.documentElement.scrollHeight, document.documentElement.scrollWidth]"))


def overlapping_labels(o: Opened) -> list:
    """Pairs of texts of a path graph whose boxes overlap, and texts outside their drawing."""
    return o.page.evaluate("""() => {
        const bad = [];
        for (const svg of document.querySelectorAll('svg.dot-graph')) {
            const box = svg.getBoundingClientRect();
            const r = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
            for (const [s, b] of r) {
                if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5)
                    bad.push(['outside', s]);
            }
            for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++) {
                const a = r[i][1], b = r[j][1];
                const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                if (w > 0.5 && h > 0.5) bad.push(['overlap', r[i][0], r[j][0]]);
            }
        }
        return bad; }""")


def unreachable_columns(o: Opened) -> list:
    """Table columns that can be neither seen nor scrolled to inside their box."""
    return o.page.evaluate("""() => {
        const bad = [];
        for (const t of document.querySelectorAll('main table')) {
            const box = t.closest('.scroll');
            const ths = [...t.tHead.rows[0].cells];
            for (const th of ths) {
                if (box) {  // scroll the box so that the column's left edge is at its left
                    box.scrollLeft = 0;
                    box.scrollLeft = Math.max(0, th.getBoundingClientRect().left - box.getBoundingClientRect().left - 8);
                }
                const b = box ? box.getBoundingClientRect() : document.querySelector('main').getBoundingClientRect();
                const c = th.getBoundingClientRect();
                const seen = Math.min(c.right, b.right) - Math.max(c.left, b.left);
                if (seen < Math.min(c.width, b.width) - 1) bad.push([t.id, th.textContent, seen, c.width]);
            }
            if (box) box.scrollLeft = 0;
        }
        return bad; }""")


def unlabelled_rows(o: Opened) -> list:
    """Categorical plots whose rows are not all labelled, or whose labels overlap."""
    return o.page.evaluate("""() => {
        const bad = [];
        for (const el of document.querySelectorAll('.plot[data-rendered]')) {
            const ya = el._fullLayout && el._fullLayout.yaxis;
            if (!ya || ya.type !== 'category') continue;
            const rows = ya._categories.length;  // the rows Plotly made of the data
            const ticks = [...el.querySelectorAll('.ytick text')].map(t => t.getBoundingClientRect()).filter(r => r.height > 0);
            if (ticks.length !== rows || rows === 0) bad.push([el.id, 'labels', ticks.length, 'rows', rows]);
            ticks.sort((a, b) => a.top - b.top);
            for (let i = 1; i < ticks.length; i++) if (ticks[i].top < ticks[i - 1].bottom - 1) { bad.push([el.id, 'overlap', i]); break; }
        }
        return bad; }""")


def legend_on_titles(o: Opened) -> list:
    """Plots whose legend touches an axis title or the plot's title."""
    return o.page.evaluate("""() => {
        const bad = [];
        const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > -2 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > -2;
        for (const el of document.querySelectorAll('.plot[data-rendered]')) {
            const lg = el.querySelector('.legend');
            if (!lg || !lg.getBoundingClientRect().width) continue;
            const l = lg.querySelector('.bg') ? lg.querySelector('.bg').getBoundingClientRect() : lg.getBoundingClientRect();
            for (const t of el.querySelectorAll('.g-xtitle, .g-ytitle, .g-gtitle')) {
                const r = t.getBoundingClientRect();
                if (r.width && hit(l, r)) bad.push([el.id, t.getAttribute('class')]);
            }
        }
        return bad; }""")


def whiskers_off_axis(o: Opened) -> list:
    """Box plots on a log axis whose whiskers start left of the plot area (a 0 at -inf)."""
    return o.page.evaluate("""() => {
        const bad = [];
        for (const el of document.querySelectorAll('.plot[data-rendered]')) {
            const fl = el._fullLayout;
            if (!fl || !fl.xaxis || fl.xaxis.type !== 'log' || !el._fullData.some(t => t.type === 'box')) continue;
            const area = el.querySelector('.nsewdrag').getBoundingClientRect();
            for (const p of el.querySelectorAll('.boxlayer path.box')) {
                const r = p.getBoundingClientRect();
                if (r.width && r.left < area.left + 1) bad.push([el.id, r.left, area.left]);
            }
            el._fullData.filter(t => t.type === 'box').forEach(t => (t.lowerfence || []).forEach(v => {
                if (v !== null && Math.log10(v) < fl.xaxis.range[0]) bad.push([el.id, 'fence', v]);
            }));
        }
        return bad; }""")


def guessed_badges(o: Opened) -> list[tuple[str, str, bool, bool]]:
    """Per row of the path tables: (table, path text, intra-node step in the text, guessed badge in the row)."""
    rows = o.page.evaluate("""() => [...document.querySelectorAll('table[id^="tbl-top-"], table[id^="tbl-allpaths-"]')]
        .flatMap(t => [...t.tBodies[0].rows].map(r => [t.id, r.querySelector('.fullpath').textContent,
                                                       !!r.querySelector('.badge.guessed')]))""")
    out = []
    for tid, text, badge in rows:
        kinds = ["topic" if part.startswith("[") else "callback" for part in text.split(" -> ")]
        intra = any(a == b == "callback" for a, b in zip(kinds, kinds[1:]))
        out.append((tid, text, intra, badge))
    return out


def check_layout(o: Opened, trace: Path) -> None:
    height, width = page_size(o)
    assert width <= WIDTH, f"the page is {width} px wide at {WIDTH} px"
    assert not annotated(trace)  # the badges' oracle below holds for a trace without annotations
    badges = guessed_badges(o)
    assert badges and any(b for *_x, b in badges)
    for tid, text, intra, badge in badges:
        assert badge == intra, (tid, text)
    unfold(o)
    assert overlapping_labels(o) == []
    assert unreachable_columns(o) == []
    assert unlabelled_rows(o) == []
    assert legend_on_titles(o) == []
    assert whiskers_off_axis(o) == []


def test_caret_end_to_end(e2e):
    trace, _path, o = e2e
    check_layout(o, trace)


@pytest.mark.slow
def test_autoware(autoware):
    trace, path, o = autoware
    assert path.stat().st_size < 15_000_000
    height, _w = page_size(o)
    assert height < MAX_HEIGHT, f"the page is {height} px tall with its parts folded"
    d = os.environ.get("ROSCOPE_REPORT_SCREENSHOTS")
    if d:
        shot = os.path.join(d, "report-autoware.png")
        o.page.screenshot(path=shot, full_page=True)
        small(shot)
    check_layout(o, trace)


def small(png: str) -> None:
    """The screenshot in a palette of 64 colours (a tenth of its size), if Pillow is there."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as im:
        im.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)


# ---------------------------------------------------------------- the timeline and the message flow


def test_timeline_folds_and_zooms(e2e):
    _trace_dir, _path, o = e2e
    pg = o.page
    pg.evaluate("() => document.getElementById('timeline').scrollIntoView({block: 'center'})")
    count = lambda sel: pg.evaluate("s => document.querySelectorAll(s).length", sel)  # noqa: E731
    procs, threads = count("#timeline .tl-proc"), count("#timeline .tl-tlabel")
    assert procs >= 1 and threads > procs
    assert count("#timeline .tl-top text") > 3 and count("#timeline .tl-bottom text") > 3
    # Colours: one per callback among the legend's, the same wherever that callback runs.
    fills = pg.evaluate("""() => [...document.querySelectorAll('#timeline .tl-rows rect:not(.tl-prow):not(.tl-state)')]
        .map(r => [r.querySelector('title').textContent.split(': ')[0], r.getAttribute('fill')])""")
    by_cb: dict[str, set] = {}
    for cb, fill in fills:
        by_cb.setdefault(cb, set()).add(fill)
    assert all(len(f) == 1 for f in by_cb.values())
    legend = pg.evaluate("() => [...document.querySelectorAll('#timeline .tl-key')].map(k => k.getAttribute('title'))")
    named = [by_cb[c] for c in legend if c in by_cb]
    assert len(named) > 3 and len({next(iter(f)) for f in named}) == len(named)
    # Fold every process: no thread row left, the runs drawn on the process rows.
    pg.click("#timeline button[data-a=fold]")
    assert count("#timeline .tl-tlabel") == 0 and count("#timeline .tl-rows rect:not(.tl-prow)") > 0
    pg.click("#timeline .tl-plabel >> nth=0")
    assert count("#timeline .tl-tlabel") > 0
    # Zoom: the buttons halve the range; a drag zooms into the dragged part; a double-click shows it all.
    span = pg.inner_text("#timeline .tl-range")
    pg.click("#timeline button[data-a=in]")
    assert pg.inner_text("#timeline .tl-range") != span
    box = pg.evaluate("() => { const r = document.querySelector('#timeline .tl-rows').getBoundingClientRect(); "
                      "return [r.left, r.top, r.width]; }")
    x0, y0, w = box
    pg.mouse.move(x0 + 400, y0 + 10)
    pg.mouse.down()
    pg.mouse.move(x0 + 500, y0 + 10, steps=4)
    pg.mouse.up()
    zoomed = pg.inner_text("#timeline .tl-range")
    a, b = _range(zoomed)
    assert 0 < b - a < float(span.split(" of ")[1].split()[0]) / 4
    pg.dblclick("#timeline .tl-top", position={"x": 600, "y": 10})
    assert pg.inner_text("#timeline .tl-range") == span


def _range(text: str) -> tuple[float, float]:
    """'A ms to B ms of C ms' -> (A, B)."""
    parts = text.replace(" ms", "").split(" ")
    return float(parts[0]), float(parts[2])


def test_message_flow_draws_each_flow(e2e):
    _trace_dir, _path, o = e2e
    got = o.page.evaluate("""() => { const el = document.getElementById('fig-message_flow_0');
        const lines = el._fullData.reduce((n, t) => n + t.x.filter(v => v === null).length, 0);
        return [lines, el._fullLayout.yaxis._categories.length]; }""")
    top = o.page.evaluate("""() => { const r = document.querySelector('#tbl-top-0 tbody tr');
        return [+r.querySelector('[data-k=flows]').dataset.v, r.querySelector('.fullpath').textContent]; }""")
    flows, text = top
    assert got[0] == min(flows, 300)  # one line per flow of the top path (every flow, up to 300)
    assert got[1] == len(text.split(" -> "))  # one row per element of the path


# ---------------------------------------------------------------- nine callbacks, nine labelled rows

NINE = {"processes": [
    {"name": "sensors", "executor": {"type": "multi", "threads": 2}, "nodes": [
        {"name": "lidar", "publishers": [{"topic": "/scan"}, {"topic": "/imu"}],
         "timers": [{"period_ms": 20, "work": {"dist": "uniform", "min_us": 50, "max_us": 400}, "publish": ["/scan"]},
                    {"period_ms": 30, "work": {"dist": "fixed", "us": 30}, "publish": ["/imu"]}]},
        {"name": "camera", "publishers": [{"topic": "/image"}],
         "timers": [{"period_ms": 25, "work": {"dist": "exponential", "mean_us": 300}, "publish": ["/image"]}]}]},
    {"name": "fusion", "nodes": [{"name": "fuser", "publishers": [{"topic": "/cloud"}, {"topic": "/pose"}],
        "subscriptions": [{"topic": "/scan", "work": {"dist": "normal", "mean_us": 900, "std_us": 200}, "publish": ["/cloud"]},
                          {"topic": "/imu", "work": {"dist": "fixed", "us": 20}}],
        "timers": [{"period_ms": 50, "work": {"dist": "fixed", "us": 150}, "inputs": ["/imu"], "publish": ["/pose"]}]}]},
    {"name": "planner", "nodes": [{"name": "planner", "reentrant": True, "publishers": [{"topic": "/plan"}],
        "subscriptions": [{"topic": "/cloud", "work": {"dist": "uniform", "min_us": 200, "max_us": 2500}},
                          {"topic": "/pose", "work": {"dist": "fixed", "us": 60}}],
        "sync_groups": [{"inputs": ["/cloud", "/pose"], "publish": ["/plan"]}]}]},
    {"name": "ctl", "nodes": [{"name": "controller", "subscriptions": [{"topic": "/plan", "work": {"dist": "fixed", "us": 400}}]}]},
]}


@pytest.mark.lttng
def test_nine_callbacks_nine_labels(wide, lttng_ready, tmp_path):
    """A 9-callback system (ros2sim, real LTTng): the callback box plot labels all 9 rows,
    one per callback that ran (ros2sim's ground truth), whatever their durations."""
    import csv
    import json
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    sim = Path(__file__).resolve().parents[1] / "tools" / "ros2sim"
    subprocess.run(["make", "-s", "-C", str(sim)], check=True, stdout=subprocess.DEVNULL)
    (tmp_path / "nine.json").write_text(json.dumps(NINE))
    out = tmp_path / "sim"
    p = subprocess.run([sys.executable, str(sim / "ros2sim.py"), "run", "--system", str(tmp_path / "nine.json"), "--distro", "jazzy",
                        "--duration", "1.5", "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out / "ground_truth" / "callbacks.csv", newline="") as f:
        ran = {(r["vpid"], r["callback"]): r["node"] for r in csv.DictReader(f) if r["end_ns"]}
    assert len(ran) == 9
    o = open_report(wide, make_report(out / "traces", tmp_path / "nine.html"))
    labels = o.page.evaluate("() => [...document.querySelectorAll('#fig-callback_boxes .ytick text')].map(t => t.textContent)")
    assert len(labels) == 9
    nodes = sorted(n.strip("/") for n in ran.values())
    assert sorted(lab.split(" ")[0].strip("/") for lab in labels) == nodes
    assert unlabelled_rows(o) == []


def test_zero_on_a_log_axis(wide, tmp_path):
    """A minimum of 0.000 ms among durations spanning 5 decades (a log axis): the whisker
    starts at the axis' floor inside the plot area, and the caption says where 0 is drawn.
    The statistics are written by hand (no shared trace has a run or latency of 0 ns)."""
    from roscope.report import figures as F
    from roscope.report.html import Page

    ms = 1_000_000
    stats = [{"min_ns": 0, "p25_ns": 2_000, "p50_ns": 5_000, "p75_ns": 9_000, "max_ns": 40_000, "mean_ns": 6_000, "p99_ns": 30_000},
             {"min_ns": 3 * ms, "p25_ns": 10 * ms, "p50_ns": 20 * ms, "p75_ns": 40 * ms, "max_ns": 200 * ms, "mean_ns": 30 * ms,
              "p99_ns": 150 * ms}]
    fig = F.quartile_boxes(["fast callback", "slow callback"], stats, "Callback durations", "duration (ms)")
    assert fig["layout"]["xaxis"]["type"] == "log"
    # The smallest positive value is 0.002 ms (p25): the floor is the power of ten at or below it.
    assert fig["layout"]["meta"]["log_floor"] == pytest.approx(0.001)
    assert "drawn at 0.001 ms" in F.floor_note(fig)
    page = Page("zero")
    page.add("overview", "zero", page.fig("zero", fig, F.floor_note(fig)))
    path = tmp_path / "zero.html"
    path.write_text(page.render(), encoding="utf-8")
    pg = wide.new_page()
    pg.goto(path.resolve().as_uri())
    pg.wait_for_function("() => document.querySelector('.plot').dataset.rendered")
    o = Opened(pg, [], [])
    assert whiskers_off_axis(o) == [] and unlabelled_rows(o) == []
    left = pg.evaluate("""() => { const el = document.querySelector('.plot'), area = el.querySelector('.nsewdrag').getBoundingClientRect();
        return Math.min(...[...el.querySelectorAll('.boxlayer path.box')].map(p => p.getBoundingClientRect().left)) - area.left; }""")
    assert left > 1


def test_without_graphviz_the_page_says_so(tmp_path):
    """dot not on PATH: the report is written all the same, and says, where the graph would be, why it is not."""

    trace = _trace("caret-end-to-end-cyclonedds")
    out = tmp_path / "nodot.html"
    env = {**os.environ, "PATH": str(tmp_path)}
    p = run_roscope("report", str(trace), "-o", str(out), "--from", E2E_PAIR[0], "--to", E2E_PAIR[1], env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    page = out.read_text(encoding="utf-8")
    assert "The data-flow graph is not drawn: Graphviz is not installed" in page and "<svg class=\"dot-graph\"" not in page
