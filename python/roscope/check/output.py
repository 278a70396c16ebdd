"""What `roscope check` writes: one text line per budget line (verdict, measured value,
limit, margin, where in the budgets file), JSON, JUnit XML (one test case per budget
line, a failure for a failing one, an error for one that cannot be evaluated) and
GitHub Actions annotations (`::error file=...,line=...::`)."""
from __future__ import annotations

import datetime as dt
import os
import re
import socket
from collections.abc import Sequence
from xml.sax.saxutils import quoteattr

from roscope.check import units
from roscope.check.measure import ERROR, FAIL, PASS, Line
from roscope.text import escape

#: What a verdict is called in text.
WORD = {PASS: "PASS", FAIL: "FAIL", ERROR: "ERROR"}


def where(line: Line) -> tuple[str | None, int | None]:
    """(budgets file, line) of a budget line: its limit's line, else its budget's (None: the
    default lost budget, which is in no file)."""
    if line.budget.default:
        return line.budget.source, None
    n = (line.limit.line if line.limit and line.limit.line else 0) or line.budget.line or 1
    return line.budget.source, n


def head(line: Line) -> str:
    """"<what> of <subject>" (with the budget's name when it has one); "events lost"."""
    name = f"[{line.budget.name}] " if line.budget.name else ""
    if line.measure.name == "lost":
        return f"{name}{line.subject}"
    return f"{name}{line.what} of {line.subject}"


def describe(line: Line) -> str:
    """The line's verdict in words: value, limit and margin, or why it cannot be evaluated."""
    if line.status == ERROR:
        return f"{head(line)}: cannot be evaluated: {line.message}"
    if line.no_runs:
        return f"{head(line)}: no runs (never ran in this trace: nothing to break the limit)"
    lim = line.limit
    value = units.show(line.value, lim.kind)
    limit = f"{lim.op} {units.show(lim.value, lim.kind)}"
    margin = line.margin
    if margin >= 0:
        rel = f", {100 * margin / abs(lim.value):.1f} %" if lim.value else ""
        tail = f"margin {units.show(margin, lim.kind)}{rel}"
    else:
        tail = f"{'over' if lim.op == '<=' else 'under'} by {units.show(-margin, lim.kind)}"
    return f"{head(line)}: {value} (limit {limit}, {tail})"


def verdict(line: Line) -> str:
    """One text line of a budget line: PASS/FAIL/ERROR, what, where in the budgets file."""
    f, n = where(line)
    loc = f"  [{os.path.basename(f)}:{n}]" if f and n else f"  [{os.path.basename(f)}: default budget]" if f else ""
    return f"{WORD[line.status]:<5} {describe(line)}{loc}"


def counts(lines: Sequence[Line]) -> dict:
    """Lines per status, and how many of the passing ones pass with no runs."""
    return {**{s: sum(1 for x in lines if x.status == s) for s in (PASS, FAIL, ERROR)},
            "no_runs": sum(1 for x in lines if x.no_runs)}


def summary_text(lines: Sequence[Line], status: int) -> str:
    c = counts(lines)
    word = {0: "PASS", 1: "FAIL", 2: "INCOMPLETE"}[status]
    norun = f" ({c['no_runs']} with no runs)" if c["no_runs"] else ""
    return (f"{len(lines)} budget lines: {c[PASS]} pass{norun}, {c[FAIL]} fail, {c[ERROR]} cannot be evaluated: "
            f"{word} (exit {status})")


def family_text(baseline: dict) -> str:
    """How the baseline verdicts were corrected (roscope.check.baseline.family's fields)."""
    m, a = baseline["family"], baseline["alpha"]
    if not m:
        return "baseline: no line compared (too few runs or values, or not evaluated)"
    return (f"baseline: {m} line{'s' if m != 1 else ''} compared, U test p-values adjusted by Holm-Bonferroni over "
            f"the {m}: the chance of any false 'worse' or 'better' is at most {100 * a:g} % (family-wise; each line "
            f"tested alone at {100 * a:g} %, up to {100 * baseline['uncorrected_familywise_error_rate']:.0f} % for "
            f"{m} independent lines): {baseline['worse']} worse, {baseline['better']} better")


def text(lines: Sequence[Line], status: int, comparisons: dict | None = None, write=print,
         baseline: dict | None = None) -> None:
    """The text report: one line per budget line (and its baseline comparison), then the
    baseline's family (when compared) and a summary."""
    for i, line in enumerate(lines):
        write(escape(verdict(line)))
        if comparisons is not None and i in comparisons:
            write(escape("      " + comparisons[i]["text"]))
    if baseline is not None and "family" in baseline:
        write(escape(family_text(baseline)))
    write(summary_text(lines, status))


def line_json(line: Line) -> dict:
    f, n = where(line)
    b = line.budget
    lim = line.limit
    return {
        "file": f, "line": n, "budget": b.index, "name": b.name, "kind": b.kind, "select": b.select,
        "path": b.path_options or None, "subject": line.subject, "measure": line.measure.name,
        "stat": lim.stat if lim else None, "deadline_ns": line.measure.over, "op": lim.op if lim else None,
        "unit": {"duration": "ns", "rate": "Hz", "share": "fraction", "count": "count"}[line.kind],
        "limit": lim.value if lim else None, "value": line.value, "margin": line.margin, "status": line.status,
        "no_runs": line.no_runs,
        "message": line.message or None, "text": describe(line),
        "callback_id": line.ref.get("callback_id"), "thread_id": line.ref.get("thread_id"),
    }


def document(lines: Sequence[Line], status: int, *, budgets_file: str, inputs: Sequence[str], run: str | None,
             comparisons: dict | None = None, baseline: dict | None = None) -> dict:
    """Everything `roscope check --json` prints (values in ns, Hz, fractions or counts: `unit`)."""
    out = []
    for i, line in enumerate(lines):
        d = line_json(line)
        if comparisons is not None:
            d["baseline"] = {k: v for k, v in comparisons.get(i, {}).items() if k != "text"} or None
        out.append(d)
    return {"budgets_file": budgets_file, "inputs": list(inputs), "run": run, "lines": out,
            "summary": {**counts(lines), "lines": len(lines), "exit_status": status}, "baseline": baseline}


#: What XML 1.0 cannot hold beyond the control characters `escape` shows: surrogates and
#: U+FFFE, U+FFFF (a parser refuses the document).
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _xml_safe(s: str) -> str:
    """`escape(s)` with every character XML 1.0 cannot hold shown as `\\uXXXX`."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group(0)):04x}", escape(s))


def _xml_text(s: str) -> str:
    """Text for XML: characters XML 1.0 cannot hold shown visibly, then &, <, > quoted."""
    return _xml_safe(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(s) -> str:
    return quoteattr(_xml_safe(str(s)))


def junit(lines: Sequence[Line], *, budgets_file: str, inputs: Sequence[str], seconds: float,
          comparisons: dict | None = None, baseline: dict | None = None) -> str:
    """JUnit XML (the schema Jenkins, GitLab and GitHub's JUnit reporters read): one test suite,
    one test case per budget line; a failing line is a <failure>, one that cannot be evaluated an
    <error>; the measured value, limit and margin are in the message; with a baseline, its
    family (correction, lines compared, family-wise error rate) as properties and its text in
    the suite's <system-out>."""
    c = counts(lines)
    stamp = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    suite = f"roscope check {os.path.basename(budgets_file)}"
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name={_attr("roscope check")} tests="{len(lines)}" failures="{c[FAIL]}" errors="{c[ERROR]}" '
           f'time="{seconds:.3f}">',
           f'  <testsuite name={_attr(suite)} tests="{len(lines)}" failures="{c[FAIL]}" errors="{c[ERROR]}" '
           f'skipped="0" time="{seconds:.3f}" timestamp={_attr(stamp)} hostname={_attr(socket.gethostname())}>',
           "    <properties>",
           f'      <property name="budgets" value={_attr(budgets_file)}/>',
           *(f'      <property name="input" value={_attr(p)}/>' for p in inputs),
           *(f'      <property name="baseline_{k}" value={_attr(baseline[k])}/>'
             for k in ("dataset", "correction", "family", "alpha", "familywise_error_rate",
                       "uncorrected_familywise_error_rate") if baseline and k in baseline),
           "    </properties>"]
    for i, line in enumerate(lines):
        f, n = where(line)
        name = head(line) if line.measure.name == "lost" else f"{line.subject}: {line.what}"
        classname = f"{os.path.basename(f or 'budgets')}.budgets[{line.budget.index}]"
        at = f' line="{n}"' if n else ""
        out.append(f"    <testcase name={_attr(name)} classname={_attr(classname)} file={_attr(f or '')}{at} "
                   'time="0">')
        msg = describe(line)
        if line.status == FAIL:
            out.append(f'      <failure message={_attr(msg)} type="budget">{_xml_text(msg)}</failure>')
        elif line.status == ERROR:
            out.append(f'      <error message={_attr(msg)} type="not evaluated">{_xml_text(msg)}</error>')
        extra = msg if line.status == PASS else ""
        if comparisons is not None and i in comparisons:
            extra = (extra + "\n" if extra else "") + comparisons[i]["text"]
        if extra:
            out.append(f"      <system-out>{_xml_text(extra)}</system-out>")
        out.append("    </testcase>")
    if baseline and "family" in baseline:
        out.append(f"    <system-out>{_xml_text(family_text(baseline))}</system-out>")
    out += ["  </testsuite>", "</testsuites>", ""]
    return "\n".join(out)


def _gh(s: str, prop: bool = False) -> str:
    """Text for a GitHub Actions workflow command (its own escapes)."""
    s = escape(s).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def github(lines: Sequence[Line], comparisons: dict | None = None) -> list[str]:
    """GitHub Actions annotations: an error per failing line and per line that cannot be evaluated,
    a warning per line the baseline comparison calls worse."""
    out = []
    for i, line in enumerate(lines):
        f, n = where(line)
        loc = f"file={_gh(f or 'budgets', True)}" + (f",line={n}" if n else "")
        if line.status in (FAIL, ERROR):
            title = "budget failed" if line.status == FAIL else "budget not evaluated"
            out.append(f"::error {loc},title={_gh(title, True)}::{_gh(describe(line))}")
        cmp = (comparisons or {}).get(i)
        if cmp and cmp.get("verdict") == "worse":
            out.append(f"::warning {loc},title={_gh('worse than the baseline', True)}::{_gh(head(line) + ': ' + cmp['text'])}")
    return out
