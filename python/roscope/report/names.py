"""Long trace strings in the report: cut in the page, each full text given once.

A node, topic or symbol name can be any length (100 KB names are legal), and the
page shows a name in a table cell three times (text, tooltip, sort key), in
labels, captions and the figures' data: long names made a 30-60 MB page. While
`cutting()` is active, every trace string the page shows (`html.esc`,
`figures.t`) longer than its `limit` (`LIMIT`: longer than the C++ symbols of
real traces, up to 990 characters in the shared Autoware trace) is shown as its
first `limit` characters and a reference, "… [name N]", and the section "Long
names" (`section`) gives each such text in full once, up to `budget` characters
in all; past that budget (spent on the shortest texts first: the names
themselves before the labels made of several) a text is given cut to `FULL_CUT`
characters, and `section` says how many were (the report warns about them).
report.write builds the page again with smaller limits (`SMALLER`) while it is
over its size limit.
"""
from __future__ import annotations

import contextlib
import contextvars
import html as _html
from collections.abc import Iterator
from dataclasses import dataclass, field

from roscope.text import escape

#: Characters of a trace string shown where it is used; a longer one is cut.
LIMIT = 2_000
#: Characters of all full texts given in the "Long names" section.
FULL_BUDGET = 4_000_000
#: Characters of each full text given once the budget is spent.
FULL_CUT = 8_000
#: (limit, budget) to try, in order, while the page is too large.
SMALLER = ((200, 1_000_000), (60, 250_000))


@dataclass
class Cuts:
    """The texts cut while building one page: {full text: its number}."""

    limit: int = LIMIT
    budget: int = FULL_BUDGET
    texts: dict[str, int] = field(default_factory=dict)


_active: contextvars.ContextVar[Cuts | None] = contextvars.ContextVar("roscope_report_names", default=None)


@contextlib.contextmanager
def cutting(limit: int = LIMIT, budget: int = FULL_BUDGET) -> Iterator[Cuts]:
    """While active, `cut` cuts strings longer than `limit`; yields what it cut."""
    cuts = Cuts(limit, budget)
    token = _active.set(cuts)
    try:
        yield cuts
    finally:
        _active.reset(token)


def cut(s: str) -> str:
    """`s`, or its first characters and its reference when it is too long (and cutting is active)."""
    cuts = _active.get()
    if cuts is None or len(s) <= cuts.limit:
        return s
    n = cuts.texts.setdefault(s, len(cuts.texts) + 1)
    return f"{s[:cuts.limit]}… [name {n}]"


def section(cuts: Cuts) -> tuple[str, int]:
    """The "Long names" section's HTML (each cut text in full once, numbered), and how
    many texts are themselves cut there because the budget was spent."""
    texts = cuts.texts
    given, spent, over = {}, 0, 0
    for s in sorted(texts, key=lambda s: (len(s), texts[s])):
        full = s
        if spent + len(s) > cuts.budget:
            full, over = s[:FULL_CUT], over + 1
        spent += len(full)
        given[s] = full
    rows = []
    for s, n in texts.items():
        full = given[s]
        more = "" if full is s else f" … (cut: {len(s):,} characters in all)"
        rows.append(f'<li id="name-{n}"><b>name {n}</b> ({len(s):,} characters): '
                    f'<code class="long-name">{_html.escape(escape(full), quote=True)}{more}</code></li>')
    head = (f"<p>{len(texts):,} names from the trace are longer than {cuts.limit:,} characters: the page shows "
            "their first characters and \"[name N]\"; here is each in full.</p>")
    if over:
        head += (f"<p>{over:,} of them are cut here too, to {FULL_CUT:,} characters, to keep the page small; "
                 "`roscope stats --json` prints every name in full.</p>")
    return head + f"<ol class=\"long-names\">{''.join(rows)}</ol>", over
