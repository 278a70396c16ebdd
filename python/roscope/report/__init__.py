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

from roscope import stats
from roscope.database import is_db
from roscope.report import build as B
from roscope.report import queries as Q
from roscope.report.flows import flows as flow_section
from roscope.report.html import Page
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
    first, last = stats.trace_span(db)
    if flavours is None:
        traces = [s for s in sources if not is_db(s)] or list(db.meta.get("sources") or [])
        flavours = Q.flavours(traces) if traces else []
    name = title or ", ".join(os.path.basename(os.path.normpath(s)) for s in sources) or os.path.basename(str(db.path))
    page = Page(f"roscope report: {name}")
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
    return page.render(f"Made by roscope {__version__}. Durations in milliseconds. Works offline: everything is in this file.")


def write(db: Database, out: str, *, force: bool = False, **kw) -> dict:
    """Writes the report of `db` to `out` atomically (a temporary file beside it,
    renamed when complete); never replaces a file unless `force`. Returns
    {"path", "bytes", "budget_scale"}."""
    if os.path.lexists(out) and not force:
        raise FileExistsError(f"{out}: already exists (roscope never overwrites; pass --force to replace it)")
    if os.path.isdir(out):
        raise IsADirectoryError(f"{out}: is a directory")
    scale = 1.0
    while True:
        budget = {k: max(1, int(v * scale)) for k, v in B.BUDGET.items()}
        text = build_page(db, budget=budget, **kw)
        data = text.encode("utf-8")
        if len(data) <= MAX_BYTES or scale < 0.05:
            break
        scale /= 2
    d = os.path.dirname(os.path.abspath(out))
    tmp = os.path.join(d, f".{os.path.basename(out)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return {"path": out, "bytes": len(data), "budget_scale": scale}
