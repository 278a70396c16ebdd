"""`roscope report`: one self-contained, offline HTML report of a trace.

    from roscope import report
    from roscope.flow import FlowRequest
    report.write(db, "report.html", flows=[FlowRequest("^/topic1$", "^/topic3$")])

Sections: overview and trace quality, callbacks, topics, executors and threads,
why late (roscope.sched: the longest runs and input waits split), data flows, and how the numbers were made (docs/report.md). Every plot is
aggregated or sampled in DuckDB first (report.build.BUDGET), and the page is
rebuilt with halved budgets while it is larger than MAX_BYTES.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from roscope import files, stats
from roscope.database import is_db
from roscope.report import build as B
from roscope.report import names
from roscope.report import queries as Q
from roscope.report.flows import flows as flow_section
from roscope.report.html import Page, esc
from roscope.report.why import why
from roscope.version import __version__

if TYPE_CHECKING:
    from roscope.database import Database
    from roscope.flow import FlowRequest

#: The largest page roscope writes (the issue's bound: 15 MB).
MAX_BYTES = 15_000_000


def build_page(db: Database, *, flows: list[FlowRequest] | None = None, window=None, sources=(), flavours=None,
               budget=None, title=None) -> str:
    """The report of `db` as HTML text.

    `flows`: the data-flow section's requests, one per pair of topics (None: the
    pairs found automatically); `window`: (start_ns, end_ns) of the timeline
    (None: chosen); `sources`: the input paths (shown, and read for the ROS flavour)."""
    return _build(db, flows=flows, window=window, sources=sources, flavours=flavours, budget=budget, title=title)[0]


def _build(db: Database, *, flows=None, window=None, sources=(), flavours=None, budget=None, title=None,
           cut_at: tuple[int, int] = (names.LIMIT, names.FULL_BUDGET)):
    """(the page, the names it cut (names.Cuts), how many of them it gives cut even in full);
    `cut_at`: names.cutting's (limit, budget)."""
    first, last = stats.trace_span(db)
    if flavours is None:
        traces = [s for s in sources if not is_db(s)] or list(db.meta.get("sources") or [])
        flavours = Q.flavours(traces) if traces else []
    name = title or ", ".join(os.path.basename(os.path.normpath(s)) for s in sources) or os.path.basename(str(db.path))
    with names.cutting(*cut_at) as cut:
        page = Page(f"roscope report: {name}")
        esc(page.title)  # a long title is cut in the page too: known before the list of long names is made
        R = B.Report(db, page, dict(budget or B.BUDGET), first, last)
        R.stats = {"summary": stats.summary(db), "callbacks": stats.callbacks(db), "topics": stats.topics(db)}
        R.labels = B.callback_labels(R.stats["callbacks"])
        for cb, lab in B.callback_labels(db.records("SELECT callback_id, node, procname, kind, topic, period_ns AS timer_period_ns "
                                                    "FROM callbacks_info")).items():
            R.labels.setdefault(cb, lab)
        B.overview(R, flavours, list(sources))
        B.callbacks(R)
        B.topics(R)
        B.threads(R, window)
        why(R)
        flow_section(R, list(flows or []))
        B.method(R)
        over = 0
        if cut.texts:
            body, over = names.section(cut)
            page.add("long-names", "Long names", body)
        text = page.render(f"Made by roscope {__version__}. Durations in milliseconds. Works offline: everything is in this file.")
    return text, cut, over


def write(db: Database, out: str, *, force: bool = False, inputs=(), **kw) -> dict:
    """Writes the report of `db` to `out` by roscope.files' rules (a new temporary
    file beside it, renamed when complete; never a file unless `force`, never
    anything but a regular file, never one of `inputs`). The page is rebuilt with
    long names cut shorter (names.SMALLER), then with halved plot budgets, while
    it is over MAX_BYTES; a warning (db.meta) says when it stays over, or when
    long names are cut even in their full list. Returns {"path", "bytes", "budget_scale"}."""
    files.check(out, force=force, inputs=inputs, what="HTML file")
    scale, tries = 1.0, [(names.LIMIT, names.FULL_BUDGET), *names.SMALLER]
    cut_at = tries.pop(0)
    while True:
        budget = {k: max(1, int(v * scale)) for k, v in B.BUDGET.items()}
        text, cut, over = _build(db, budget=budget, cut_at=cut_at, **kw)
        data = text.encode("utf-8")
        if len(data) <= MAX_BYTES:
            break
        if cut.texts and tries:  # long names make it large: cut them shorter first
            cut_at = tries.pop(0)
        elif scale >= 0.05:
            scale /= 2
        else:
            break
    warnings = db.meta.setdefault("warnings", [])
    if over:
        warnings.append(f"report: {over} of the {len(cut.texts)} names longer than {cut.limit:,} characters are given "
                        f"cut to {names.FULL_CUT:,} characters even in the page's list of long names (its size limit); "
                        "`roscope stats --json` prints them in full")
    if len(data) > MAX_BYTES:
        warnings.append(f"report: the page is {len(data) / 1e6:.1f} MB, over its limit of {MAX_BYTES / 1e6:.0f} MB, "
                        "with its plots at their smallest")
    files.write_file(out, data, force=force, inputs=inputs)
    return {"path": out, "bytes": len(data), "budget_scale": scale}
