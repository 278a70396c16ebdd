"""Long trace strings in the report: cut in the page, each full text given once.

A node, topic or symbol name can be any length (100 KB names are legal), and the
page shows a name in a table cell three times (text, tooltip, sort key), in
labels, captions and the figures' data: a few long names made a 60 MB page. While
`cutting()` is active, every trace string the page shows (`html.esc`,
`figures.t`) longer than `LIMIT` characters is shown as its first `LIMIT`
characters and a reference, "… [name N]", and the section "Long names" (`section`)
gives each such text in full once, up to `FULL_BUDGET` characters in all; past
that budget (spent on the shortest texts first: the names themselves before the
labels made of several) a text is given cut to `FULL_CUT` characters, and
`section` says how many were (the report warns about them). The page then keeps MAX_BYTES
(report.MAX_BYTES) whatever the names' length.
"""
from __future__ import annotations

import contextlib
import contextvars
import html as _html
from collections.abc import Iterator

from roscope.text import escape

#: Characters of a trace string shown where it is used; a longer one is cut.
LIMIT = 200
#: Characters of all full texts given in the "Long names" section.
FULL_BUDGET = 4_000_000
#: Characters of each full text given once the budget is spent.
FULL_CUT = 2_000

_active: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("roscope_report_names", default=None)


@contextlib.contextmanager
def cutting() -> Iterator[dict[str, int]]:
    """While active, `cut` cuts long strings; yields {full text: its number}."""
    names: dict[str, int] = {}
    token = _active.set(names)
    try:
        yield names
    finally:
        _active.reset(token)


def cut(s: str) -> str:
    """`s`, or its first LIMIT characters and its reference when it is longer (and cutting is active)."""
    names = _active.get()
    if names is None or len(s) <= LIMIT:
        return s
    n = names.setdefault(s, len(names) + 1)
    return f"{s[:LIMIT]}… [name {n}]"


def section(names: dict[str, int]) -> tuple[str, int]:
    """The "Long names" section's HTML (each cut text in full once, numbered), and how
    many texts are themselves cut there because the budget was spent."""
    # The budget goes to the shortest texts first: the names themselves, before the labels made of several.
    given, spent, over = {}, 0, 0
    for s in sorted(names, key=lambda s: (len(s), names[s])):
        full = s
        if spent + len(s) > FULL_BUDGET:
            full, over = s[:FULL_CUT], over + 1
        spent += len(full)
        given[s] = full
    rows = []
    for s, n in names.items():
        full = given[s]
        more = "" if full is s else f" … (cut: {len(s):,} characters in all)"
        rows.append(f'<li id="name-{n}"><b>name {n}</b> ({len(s):,} characters): '
                    f'<code class="long-name">{_html.escape(escape(full), quote=True)}{more}</code></li>')
    head = (f"<p>{len(names):,} names from the trace are longer than {LIMIT} characters: the page shows "
            "their first characters and \"[name N]\"; here is each in full.</p>")
    if over:
        head += (f"<p>{over:,} of them are cut here too, to {FULL_CUT:,} characters, to keep the page small; "
                 "`roscope stats --json` prints every name in full.</p>")
    return head + f"<ol class=\"long-names\">{''.join(rows)}</ol>", over
