"""`roscope report`'s pages as the report tests make and read them in headless chromium (an offline
context, every request but the page's own aborted and recorded): run the verb, open a page, unfold
it, check it drew every section and plot with no error, compare its tables' exact values
(data-v) with the verbs' JSON."""
from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.shared import TRACES as SHARED_TRACES

TRACES = Path(SHARED_TRACES)


SECTIONS = ("overview", "callbacks", "topics", "threads", "why", "flows", "method")


E2E_PAIR = ("^/topic1$", "^/topic3$")


def roscope(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return cli.roscope(*args, timeout=timeout, check=True)


def make_report(inp, out: Path, pairs=(), extra=()) -> Path:
    args = ["report", str(inp), "-o", str(out)]
    for a, b in pairs:
        args += ["--from", a, "--to", b]
    p = roscope(*args, *extra)
    assert p.stdout.strip() == str(out.resolve())
    return out


class Opened:
    def __init__(self, page, errors, requests):
        self.page, self.errors, self.requests = page, errors, requests

    def table(self, tid: str) -> dict[str, dict]:
        """{row data-id: {column key: data-v}} of a table."""
        return self.page.evaluate("""tid => Object.fromEntries([...document.getElementById("tbl-" + tid).tBodies[0].rows].map(r =>
            [r.dataset.id, Object.fromEntries([...r.cells].map(c => [c.dataset.k, c.dataset.v]))]))""", tid)

    def shot(self, name: str, selector: str) -> None:
        d = os.environ.get("ROSCOPE_REPORT_SCREENSHOTS")
        if not d:
            return
        top, height = self.page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
            return [r.top + window.scrollY, r.height]; }""", selector)
        self.page.screenshot(path=os.path.join(d, name), full_page=True,
                             clip={"x": 0, "y": top - 10, "width": 1300, "height": min(height + 20, 1400)})


def open_report(browser, path: Path) -> Opened:
    url = path.resolve().as_uri()
    page = browser.new_page()
    errors, requests = [], []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url) if r.url != url else None)
    page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
    page.goto(url)
    # What the page draws at once: every plot outside a folded part, and the timeline.
    page.wait_for_function("""() => [...document.querySelectorAll('.plot')].filter(e => !e.closest('details:not([open])'))
        .every(e => e.dataset.rendered) && [...document.querySelectorAll('.timeline')].every(e => e.dataset.rendered)""",
                           timeout=120_000)
    return Opened(page, errors, requests)


def unfold(o: Opened) -> None:
    """Opens every folded part; its plots are drawn then."""
    o.page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    o.page.wait_for_function("() => [...document.querySelectorAll('.plot')].every(e => e.dataset.rendered)", timeout=120_000)


def check_page(o: Opened, min_plots: dict[str, int]) -> None:
    """No error, no request; every section there, and (every part unfolded) every plot drawn."""
    assert o.errors == []
    assert o.requests == []
    unfold(o)
    drawn = o.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('main > section')].map(s => [s.id,
        [...s.querySelectorAll('.plot')].map(el => {
            const svg = el.querySelector('svg.main-svg'), r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
            const marks = [...el.querySelectorAll('.cartesianlayer g.trace path')].filter(p => (p.getAttribute('d') || '').length > 4);
            return [el.id, r.width > 100 && r.height > 100, marks.length];
        })]))""")
    assert list(drawn) == list(SECTIONS)
    for sec, plots in drawn.items():
        assert len(plots) >= min_plots.get(sec, 0), (sec, plots)
        for pid, sized, marks in plots:
            assert sized and marks > 0, f"{sec}: plot {pid} is empty"
    # The thread timeline (drawn by the page's own script) and the path graph (Graphviz dot).
    tl = o.page.evaluate("""() => { const t = document.getElementById('timeline');
        return t ? [t.querySelectorAll('.tl-rows rect:not(.tl-prow)').length, t.querySelectorAll('.tl-top text').length,
                    t.querySelectorAll('.tl-bottom text').length] : null; }""")
    if min_plots.get("threads"):
        assert tl and tl[0] > 0 and tl[1] > 2 and tl[2] > 2, tl
    if min_plots.get("flows"):
        assert o.page.evaluate("() => document.querySelectorAll('#flows svg.dot-graph .gnode').length") > 1


def _num(v):
    return None if v in (None, "") else float(v)


def same(got: dict[str, dict], want: list[dict], key, cols=None) -> None:
    """Every row of `want` (JSON) is a row of the table with equal numbers."""
    assert set(got) == {str(key(w)) for w in want}
    for w in want:
        row = got[str(key(w))]
        for k, v in row.items():
            if cols is not None and k not in cols or k not in w or not isinstance(w[k], (int, float, type(None))):
                continue
            exp = w[k]
            if exp is None or (isinstance(exp, float) and not math.isfinite(exp)):
                assert _num(v) is None, (key(w), k, v)
            else:
                assert _num(v) == pytest.approx(exp, rel=1e-12, abs=1e-9), (key(w), k)
