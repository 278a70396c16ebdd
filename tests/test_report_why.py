"""The report's "Why late" section (issue 12), opened in headless chromium like
tests/test_report.py's reports.

With kernel data: the recording of tests/test_sched.py (the ROS 1 example pinned to
one CPU with a SCHED_FIFO competitor, `roscope record --kernel`; the same recording,
made once per test session by tests/conftest.py's sched_recording). Every number of the section's two tables equals
`roscope why --json` on the same database, and, independently, the on-CPU and
runnable times of each run shown, and its top culprit where one clearly leads, equal
those computed from perf's own `perf sched timehist` (test_sched's oracle). Without kernel data (the
shared CARET end-to-end trace): one line says what `roscope record --kernel` would
add, and the waits are still split (equal to `roscope why --json`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.report_pages import TRACES, check_page, make_report, open_report, roscope, same
from tests.support.sched import missed_switches, oracle_culprits, overlap, perf_saw_whole, recorded, timehist

TOP = 10  # the report's budget "why_rows"


def _why(inp: Path) -> dict:
    return json.loads(roscope("why", str(inp), "--top", str(TOP), "--json").stdout)


def _waits(o, d: dict) -> None:
    rows = [{"id": f"{w['run_id']}:{w['publication_id']}", **w} for w in d["waits"]]
    got = o.table("why_waits")
    same(got, rows, lambda r: r["id"])
    assert len(got) == min(TOP, len(d["waits"])) > 0
    for w in d["waits"]:
        shown = got[f"{w['run_id']}:{w['publication_id']}"]
        want = "; ".join(f"{b['label'] or b['callback_id']} {b['ns'] / 1e6:.3f} ms" for b in w["behind"][:3])
        assert shown["behind_text"] == want


@recorded
def test_why_section_with_kernel_data(browser, sched_recording, tmp_path):
    out, db = sched_recording
    o = open_report(browser, make_report(db, tmp_path / "why.html"))
    check_page(o, {"why": 2})
    d = _why(db)
    assert d["kernel"] is True and len(d["runs"]) == TOP
    runs = o.table("why_runs")
    same(runs, d["runs"], lambda r: r["run_id"])
    for r in d["runs"]:
        row = runs[str(r["run_id"])]
        top = r["culprits"][0] if r["culprits"] else None
        assert (int(row["top_culprit_tid"]) if row["top_culprit_tid"] else None) == (top and top["tid"])
        assert (int(row["top_culprit_ns"]) if row["top_culprit_ns"] else None) == (top and top["ns"])
        assert row["explanation"] == r["explanation"]
    _waits(o, d)
    # the figures draw the same numbers: one bar per run / wait in each part
    fig = o.page.evaluate("() => JSON.parse(document.getElementById('roscope-data').textContent).figs.why_runs")
    by_name = {tr["name"]: tr["x"] for tr in fig["data"]}
    assert by_name["waiting for a CPU"] == [pytest.approx(r["runnable_ns"] / 1e6, abs=1e-6) for r in d["runs"]]
    assert "waiting for a CPU" in {tr["name"] for tr in
                                   o.page.evaluate("() => JSON.parse(document.getElementById('roscope-data')"
                                                   ".textContent).figs.why_waits.data")}

    # independently: perf sched timehist's intervals of each run's thread, clipped to the run;
    # not for a run whose thread perf missed a switch of (test_sched.missed_switches): there
    # timehist and roscope each estimate when it started running, differently
    th = timehist(out / "perf" / "perf.data")
    missed = missed_switches(out / "perf" / "perf.data")

    def agrees(r: dict) -> bool:
        """Whether run `r`'s on-CPU and runnable times and top culprit equal timehist's;
        False (not compared) when perf missed a switch of its thread in the run."""
        tid, span = r["tid"], [(r["start_ts"], r["end_ts"])]
        if not perf_saw_whole(missed, tid, r["start_ts"], r["end_ts"]):
            return False
        running = overlap([(s, e) for _c, s, e in th[tid]["running"]], span)
        runnable = overlap(th[tid]["runnable"], span)
        # within 1 %, or the µs to which timehist cuts each of the run's few intervals
        assert int(r["on_cpu_ns"]) == pytest.approx(running, rel=0.01, abs=5_000), r["label"]
        assert int(r["runnable_ns"]) == pytest.approx(runnable, rel=0.01, abs=5_000), r["label"]
        want = oracle_culprits(th, tid, span[0])
        if sum(want.values()) >= 200_000:
            (first, a), (_, b) = (want.most_common(2) + [(None, 0)])[:2]
            if a - b >= 20_000:
                assert int(r["top_culprit_tid"] or 0) == first, r["label"]
        return True

    # the rows shown, as the page shows them (those perf saw whole)
    shown = [{**r, **{k: runs[str(r["run_id"])][k] for k in ("on_cpu_ns", "runnable_ns", "top_culprit_tid")}}
             for r in d["runs"]]
    compared = sum(agrees(r) for r in shown)
    # the ten longest runs are the monitor's 30 ms bursts, where perf most often misses a switch
    # (CI once had 2 of 10 whole): the same check on the next runs of `why` (whose rows the page
    # shows, `same` above) so that at least three are compared
    more = json.loads(roscope("why", str(db), "--top", "60", "--json").stdout)["runs"]
    seen = {r["run_id"] for r in d["runs"]}
    for r in more:
        if compared >= 6:
            break
        if r["run_id"] not in seen:
            top = r["culprits"][0]["tid"] if r["culprits"] else None
            compared += agrees({**r, "top_culprit_tid": top})
    assert compared >= 3, f"only {compared} of 60 runs without a switch perf missed"
    # not a comparison of zeros (the longest runs are the monitor's 30 ms bursts, mostly blocked: how long each
    # was on a CPU, and which of them waited for one, depends on what else the machine ran)
    assert all(int(runs[str(r["run_id"])]["on_cpu_ns"]) > 10_000 for r in d["runs"])
    assert sum(int(runs[str(r["run_id"])]["blocked_ns"]) for r in d["runs"]) > 10_000_000
    assert "record --kernel" not in o.page.inner_text("#why")


def test_why_section_without_kernel_data(browser, report_page):
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    o = open_report(browser, report_page(trace))  # test_report_pairs' page (conftest.py: made once per session)
    check_page(o, {"why": 1})
    notes = o.page.evaluate("() => [...document.querySelectorAll('#why p.note')].map(p => p.textContent)")
    assert len(notes) == 1 and "roscope record --kernel" in notes[0]
    assert o.page.query_selector("#tbl-why_runs") is None
    d = _why(trace)
    assert d["kernel"] is False
    _waits(o, d)
    heads = o.page.evaluate("() => [...document.querySelectorAll('#tbl-why_waits th')].map(h => h.dataset.k)")
    assert "wakeup_ns" not in heads and "queued_ns" in heads
