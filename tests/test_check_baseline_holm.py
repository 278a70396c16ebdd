"""`roscope check --baseline`: Holm-Bonferroni over the lines of one check (issue 39 item 7).

Before, each line was tested alone at alpha = 5 %, so a check of 30 budget lines on an unchanged
system called some line significant in 1 - 0.95^30 = 79 % of its runs. Now the U test's
p-values of the lines one check compares are adjusted by Holm's step-down procedure, and the
outputs say the family-wise rate.

Oracles: Holm's step-down worked by hand on known p-values; statsmodels' `multipletests(...,
method="holm")` where it is installed; the family-wise rate of null families (the binomial
1 - (1 - alpha)^m uncorrected). The CLI's outputs on a dataset of a real trace recorded by
others (CARET's end-to-end sample, loaded as 4 runs). Fast: no LTTng, no ROS.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.support.shared import TRACES as SHARED_TRACES

TRACE = os.path.join(SHARED_TRACES, "ros2", "caret-end-to-end-cyclonedds")

# Hand-computed: p = (0.01, 0.04, 0.03, 0.005), m = 4. Sorted: 0.005, 0.01, 0.03, 0.04; times
# m - j + 1 = 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06. In
# the order given: 0.03, 0.06, 0.06, 0.02. At alpha 0.05 Holm rejects 0.005 and 0.01 only
# (0.03 > 0.05 / 2 stops the step-down), where each tested alone at 0.05 would reject all four.
HAND = [
    ((0.01, 0.04, 0.03, 0.005), (0.03, 0.06, 0.06, 0.02)),
    # capped at 1: 0.5 * 2 = 1.0, then max(1.0, 0.6 * 1)
    ((0.6, 0.5), (1.0, 1.0)),
    # ties: 0.01 * 3 = 0.03, 0.01 * 2 = 0.02 -> 0.03 (running max), 0.2 * 1 = 0.2
    ((0.2, 0.01, 0.01), (0.2, 0.03, 0.03)),
    # one p-value: unadjusted; none: nothing
    ((0.04,), (0.04,)),
    ((), ()),
]


@pytest.mark.parametrize("p, want", HAND)
def test_holm_by_hand(p, want):
    from roscope.check.baseline import holm

    assert holm(list(p)) == pytest.approx(list(want), abs=1e-15)


def test_holm_against_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    from roscope.check.baseline import holm

    rng = np.random.default_rng(39)
    for m in (1, 2, 5, 30, 100):
        for _ in range(20):
            p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 3)
            p[rng.integers(0, m, m // 4)] = p[0]   # ties
            reject, adj, _, _ = multitest.multipletests(p, alpha=0.05, method="holm")
            got = holm(list(p))
            assert got == pytest.approx(list(adj), abs=1e-12)
            assert [x < 0.05 for x in got] == list(reject)


def test_the_familywise_rate_of_null_families():
    """30 lines whose runs all come from one distribution (no change), 400 checks: some line's U
    test is below 5 % in about 1 - 0.95^30 = 79 % of the checks alone; after Holm, in at most 5 %."""
    from roscope.check.baseline import holm
    from roscope.experiment.stattests import mann_whitney_u

    rng = np.random.default_rng(7)
    checks, m, alpha = 400, 30, 0.05
    raw_any = holm_any = 0
    for _ in range(checks):
        ps = [mann_whitney_u(rng.normal(0, 1, 60), rng.normal(0, 1, 25))["p"] for _ in range(m)]
        raw_any += min(ps) < alpha
        holm_any += min(holm(ps)) < alpha
    expected = 1 - (1 - alpha) ** m
    sd = (expected * (1 - expected) / checks) ** 0.5
    assert abs(raw_any / checks - expected) < 4 * sd, raw_any / checks
    assert holm_any / checks <= alpha + 4 * (alpha * (1 - alpha) / checks) ** 0.5, holm_any / checks


def _line(index: int, shift: float, rng) -> tuple:
    """A callback duration line whose run's samples are the baseline's shifted by `shift` (ms), and
    its 3 baseline runs (value, samples)."""
    from roscope.check.budgets import Budget, Limit, Measure
    from roscope.check.measure import PASS, Line
    from roscope.check.units import DURATION

    lim = Limit("p50", "<=", 1e9, DURATION)
    b = Budget("callback", (Measure("duration", (lim,)),), select=f"cb{index}", index=index)
    base = []
    for r in range(3):   # three baseline runs of 30 values each, alike
        s = 10e6 + rng.normal(0, 1e6, 30) + r * 0.01e6
        base.append((float(np.median(s)), s))
    cur = 10e6 + rng.normal(0, 1e6, 30) + shift * 1e6
    line = Line(b, b.measures[0], lim, f"cb{index}", f"cb{index}", float(np.median(cur)), PASS, kind=DURATION,
                samples=cur)
    return line, base


def test_compare_adjusts_the_family_and_a_marginal_line_is_no_longer_worse():
    """One line far slower (its U test p tiny) stays `worse`; one whose p alone is below 5 % but not
    Holm's bound for its rank is now `no significant difference`; the rest are unchanged. The
    adjusted p-values are Holm's of the lines' own p-values (each line's alone, `compare_line`)."""
    from roscope.check import baseline

    rng = np.random.default_rng(3)
    shifts = [5.0] + [0.0] * 8
    lines, bases = zip(*(_line(i, s, rng) for i, s in enumerate(shifts)))
    # a marginal line: find a shift whose p alone is in [0.005, 0.05) and whose value is beyond the spread
    for k in range(200):
        cand, cbase = _line(9, 0.45 + 0.005 * k, np.random.default_rng(100 + k))
        alone = baseline.compare_line(cand, cbase)
        if 0.005 <= alone["p"] < 0.05 and alone["verdict"] == "worse":
            break
    else:
        pytest.fail("no marginal line found")
    lines, bases = [*lines, cand], [*bases, cbase]
    runs = {f"r{r}": {baseline.line_id(x): b[r] for x, b in zip(lines, bases)} for r in range(3)}
    got = baseline.compare(lines, runs)
    raw = [baseline.compare_line(x, b)["p"] for x, b in zip(lines, bases)]
    assert [got[i]["p"] for i in range(len(lines))] == raw
    assert [got[i]["p_adjusted"] for i in range(len(lines))] == pytest.approx(baseline.holm(raw), abs=0)
    assert {got[i]["family"] for i in got} == {len(lines)}
    assert got[0]["verdict"] == "worse" and got[0]["p_adjusted"] < 0.05
    assert got[9]["verdict"] == "no significant difference" and got[9]["p_adjusted"] >= 0.05 > got[9]["p"]
    assert "Holm-adjusted over 10 lines p = " in got[9]["text"]
    fam = baseline.family(got)
    assert fam["family"] == 10 and fam["worse"] == 1 and fam["correction"] == "holm"
    assert fam["uncorrected_familywise_error_rate"] == pytest.approx(1 - 0.95 ** 10)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    if not os.path.isdir(TRACE):
        pytest.skip(f"no shared trace at {TRACE}")
    ds = tmp_path_factory.mktemp("holm") / "ds"
    for rid in ("a", "b", "c", "d"):
        p = subprocess.run([sys.executable, "-m", "roscope", "load", TRACE, "--dataset", str(ds), "--run-id", rid],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    return str(ds)


BUDGETS = """budgets:
  - callback: "^/filter_node "
    duration: {p50: 1 s, max: 1 s}
  - callback: "^/sensor_dummy_node timer"
    duration: {p99: 1 s}
    jitter: 1 s
  - topic: "^/topic[1-4]$"
    rate: {min: 1 Hz}
"""


def test_the_outputs_say_the_correction_and_the_familywise_rate(dataset, tmp_path):
    f = tmp_path / "b.yaml"
    f.write_text(BUDGETS)
    xml = tmp_path / "check.xml"
    argv = [sys.executable, "-m", "roscope", "check", str(f), dataset, "--run", "d", "--baseline", dataset]
    p = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    compared = [x for x in doc["lines"] if x["baseline"] and "p" in x["baseline"]]
    # every line but the lost events' has its values in the 3 other runs: 2 + 2 + 4 lines compared
    assert len(compared) == 8 == len([x for x in doc["lines"] if x["measure"] != "lost"])
    fam = doc["baseline"]
    assert fam["runs"] == ["a", "b", "c"] and fam["correction"] == "holm" and fam["family"] == 8
    assert fam["familywise_error_rate"] == 0.05
    assert fam["uncorrected_familywise_error_rate"] == pytest.approx(1 - 0.95 ** 8)
    from roscope.check.baseline import holm

    assert [x["baseline"]["p_adjusted"] for x in compared] == pytest.approx(holm([x["baseline"]["p"] for x in compared]))
    assert all(x["baseline"]["family"] == 8 for x in compared)
    # the runs are one trace loaded four times: nothing differs
    assert {x["baseline"]["verdict"] for x in compared} == {"no significant difference"}

    p = subprocess.run([*argv, "--junit", str(xml)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = [s for s in p.stdout.splitlines() if s.startswith("baseline: ")]
    assert summary == ["baseline: 8 lines compared, U test p-values adjusted by Holm-Bonferroni over the 8: the "
                       "chance of any false 'worse' or 'better' is at most 5 % (family-wise; each line tested alone "
                       "at 5 %, up to 34 % for 8 independent lines): 0 worse, 0 better"], p.stdout
    assert sum("Holm-adjusted over 8 lines p = " in s for s in p.stdout.splitlines()) == 8
    suite = ET.parse(xml).getroot().find("testsuite")
    props = {e.get("name"): e.get("value") for e in suite.find("properties")}
    assert props["baseline_correction"] == "holm" and props["baseline_family"] == "8"
    assert props["baseline_familywise_error_rate"] == "0.05"
    assert suite.find("system-out").text == summary[0]
