"""HTML assembly of the report: one self-contained page.

Everything the page needs is inlined: the stylesheet, Plotly (plotly.min.js from
the `plotly` Python package, inlined once), the report's script, and the data as
one JSON block. The Content-Security-Policy forbids every network request, so the
page works offline and cannot leak anything.

Every string from the trace goes through `esc()` (HTML text and attributes);
the JSON block is written so that no sequence in it can close the script.
"""
from __future__ import annotations

import html as _html
import json
import math
import os
from dataclasses import dataclass, field

from roscope.errors import UserError
from roscope.extras import install_hint
from roscope.report import names
from roscope.text import clean, escape

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")
CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")


def esc(s) -> str:
    """A trace string (or anything) as HTML text: control characters shown, markup escaped
    (a long one cut while the report is built: report.names)."""
    return _html.escape(escape("-" if s is None else names.cut(s) if isinstance(s, str) else s), quote=True)


def plotly_js() -> str:
    """plotly.min.js as shipped by the `plotly` Python package."""
    try:
        import plotly
    except ImportError:
        raise UserError(f"roscope report needs the `plotly` Python package ({install_hint('plotly')}): "
                        "the page embeds its plotly.min.js") from None
    path = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
    with open(path, encoding="utf-8") as f:
        js = f.read()
    return js.replace("</script", "<\\/script")


def asset(name: str) -> str:
    with open(os.path.join(ASSETS, name), encoding="utf-8") as f:
        return f.read()


def json_block(obj) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>', '&' or line separators."""
    text = json.dumps(clean(obj), separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# ---------------------------------------------------------------- tables


@dataclass
class Col:
    key: str
    title: str
    kind: str = "text"  # text, ns (shown in ms), int, pct (share 0..1), float, hz, html (already HTML: not escaped)
    tip: str = ""
    sort: str | None = None  # for kind html: the key whose value sorts the column (data-v)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and not math.isfinite(v))


def fmt(v, kind: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if kind == "ns":
        return f"{v / 1e6:.3f}"
    if kind == "int":
        return f"{int(v):,}"
    if kind == "pct":
        return f"{100 * v:.2f}"
    if kind in ("float", "hz"):
        return f"{v:.2f}"
    return esc(v)


def table(tid: str, cols: list[Col], rows: list[dict], row_id: str | None = None, limit: int | None = None) -> str:
    """A sortable table (id "tbl-" + tid); each numeric cell carries its exact value in data-v (ns
    for durations), and each row the value of `row_id` in data-id."""
    shown = rows if limit is None else rows[:limit]
    head = "".join(f'<th class="{c.kind if c.kind in ("text", "html") else "num"}" data-k="{esc(c.key)}"'
                   + (f' title="{esc(c.tip)}"' if c.tip else "") + f">{esc(c.title)}</th>" for c in cols)
    body = []
    for r in shown:
        cells = []
        for c in cols:
            v = r.get(c.key)
            if c.kind == "text":
                cells.append(f'<td class="text" data-k="{esc(c.key)}" data-v="{esc(v if v is not None else "")}" '
                             f'title="{esc(v)}">{esc(v)}</td>')
            elif c.kind == "html":
                sv = r.get(c.sort) if c.sort else None
                cells.append(f'<td class="html" data-k="{esc(c.key)}" data-v="{esc(sv if sv is not None else "")}">{v or ""}</td>')
            else:
                dv = repr(float(v)) if _num(v) and isinstance(v, float) else (str(int(v)) if _num(v) else "")
                cells.append(f'<td data-k="{esc(c.key)}" data-v="{dv}">{fmt(v, c.kind)}</td>')
        rid = f' data-id="{esc(r.get(row_id))}"' if row_id else ""
        body.append(f"<tr{rid}>{''.join(cells)}</tr>")
    more = ""
    if limit is not None and len(rows) > limit:
        more = f'<p class="caption">The first {limit:,} of {len(rows):,} rows are shown.</p>'
    return (f'<div class="scroll"><table id="tbl-{esc(tid)}" class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{more}")


def fold(summary: str, body: str, *, opened: bool = False, cls: str = "") -> str:
    """A folded part of a section: `summary` (HTML) always shown, `body` (HTML) on demand.
    Plots inside are drawn when it is first opened."""
    return (f'<details class="fold{" " + cls if cls else ""}"{" open" if opened else ""}><summary>{summary}</summary>'
            f'<div class="fold-body">{body}</div></details>')


def badge(text: str, kind: str, tip: str = "") -> str:
    """A small coloured label (kind: guessed, nolink, racy, ok), with a tooltip."""
    return f'<span class="badge {esc(kind)}"' + (f' title="{esc(tip)}"' if tip else "") + f">{esc(text)}</span>"


# ---------------------------------------------------------------- page


@dataclass
class Page:
    title: str
    sections: list[tuple[str, str, str]] = field(default_factory=list)  # (id, title, html)
    figs: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # more JSON data for the script (series, ...)

    def fig(self, key: str, spec: dict, caption: str = "") -> str:
        """A figure placeholder drawn by the script; its spec goes to the JSON block."""
        self.figs[key] = spec
        cap = f'<p class="caption">{caption}</p>' if caption else ""
        return f'<div class="plot" id="fig-{esc(key)}" data-fig="{esc(key)}"></div>{cap}'

    def add(self, sid: str, title: str, body: str) -> None:
        self.sections.append((sid, title, body))

    def render(self, subtitle: str = "") -> str:
        nav = "".join(f'<a href="#{esc(sid)}">{esc(title)}</a>' for sid, title, _ in self.sections)
        secs = "".join(f'<section id="{esc(sid)}"><h2>{esc(title)}</h2>{body}</section>' for sid, title, body in self.sections)
        data = json_block({"figs": self.figs, **self.extra})
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(self.title)}</title><style>{asset('report.css')}</style></head><body>"
            f'<nav><span class="brand">roscope</span>{nav}</nav><main><h1>{esc(self.title)}</h1>'
            f'<p class="sub">{esc(subtitle)}</p>{secs}</main>'
            f'<script id="roscope-data" type="application/json">{data}</script>'
            f"<script>{plotly_js()}</script><script>{asset('timeline.js')}</script><script>{asset('report.js')}</script>"
            "</body></html>\n"
        )
