"""The report's automatic data-flow pairs (roscope.report.pairs) on real traces.

The expected sources and sinks come from babeltrace2 (tests/support/ros_graph.py: the
nodes, publishers, subscriptions and publish events of the trace, and the rule of
docs/report.md applied to them). Whatever the trace, an automatic pair never holds an
infrastructure topic (/rosout, /parameter_events, /clock, /caret/*; /tf* never as a
source) and never one topic as both source and sink.

Inputs: the CARET end-to-end trace; the Autoware trace (slow: babeltrace2 reads
684k events), where /control/command/control_cmd has subscribers but no publication;
and a recording of the CART sample's shape (lttng, root): the issue's trace is not
public, so ros2sim runs what it held, with CARET's hooks: a node whose timer publishes
/beforeSOMEIP (a ROS 2 to SOME/IP bridge takes it on the other side, untraced) and
CARET's trace node, which subscribes to /caret/start_record and /caret/end_record and
publishes /caret/status. There, the report used to pick /beforeSOMEIP and
/caret/status as both source and sink; now it finds no pair, and says why.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.shared import TRACES as SHARED_TRACES

bt2 = pytest.importorskip("bt2", reason="babeltrace2's Python bindings (python3-bt2) are the oracle of the ROS graph")
pytest.importorskip("roscope._core", reason="the roscope core is not built")

from tests.support import ros_graph  # noqa: E402  (needs bt2)

TRACES = Path(SHARED_TRACES)
REPO = Path(__file__).resolve().parents[1]
INFRA = re.compile(r"^/(rosout|rosout_agg|parameter_events|clock)$|^/caret/")


class _Lists(HTMLParser):
    """The <code> texts inside each span#auto-* of the page."""

    def __init__(self):
        super().__init__()
        self.lists: dict[str, list[str]] = {}
        self.stack: list[str | None] = []
        self.code = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span":
            self.stack.append(a.get("id") if (a.get("id") or "").startswith("auto-") else None)
        self.code = self.code or tag == "code"

    def handle_endtag(self, tag):
        if tag == "span" and self.stack:
            self.stack.pop()
        if tag == "code":
            self.code = False

    def handle_data(self, data):
        owner = next((s for s in reversed(self.stack) if s), None)
        if self.code and owner:
            self.lists.setdefault(owner, []).append(data)


def page_lists(html: str) -> dict[str, set[str]]:
    p = _Lists()
    p.feed(html)
    return {k.removeprefix("auto-"): set(v) for k, v in p.lists.items()}


def check_pairs(html: str, trace) -> dict[str, set[str]]:
    """The page's sources and sinks equal babeltrace2's; none is infrastructure, none is both."""
    got = page_lists(html)
    src, snk, both = ros_graph.read(trace).sources_and_sinks()
    assert got.get("sources", set()) == src
    assert got.get("sinks", set()) == snk
    assert not (got.get("sources", set()) & got.get("sinks", set()))
    assert not any(INFRA.search(t) for t in got.get("sources", set()) | got.get("sinks", set()))
    assert not any(re.search(r"(^|/)tf(_static)?$", t) for t in got.get("sources", set()))
    assert both <= got.get("isolated", set())
    return got


def test_caret_end_to_end(report_page):
    trace = TRACES / "ros2" / "caret-end-to-end-cyclonedds"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    html = report_page(trace).read_text(encoding="utf-8")
    got = check_pairs(html, trace)
    assert got["sources"] and got["sinks"]
    assert "/parameter_events" in got["infra"]
    assert 'id="flows-0"' in html  # the pair was analysed


@pytest.mark.slow
def test_autoware(report_page):
    trace = TRACES / "ros2" / "autoware-carla-galactic"
    if not trace.is_dir():
        pytest.skip(f"{trace} is not there")
    html = report_page(trace).read_text(encoding="utf-8")
    got = check_pairs(html, trace)
    g = ros_graph.read(trace)
    # /control/command/control_cmd: subscribed to, but nothing in this trace publishes it (no
    # publisher, no publish event), so it cannot end a flow here: not a sink.
    assert any(t == "/control/command/control_cmd" for _n, t in g.subscriptions)
    assert g.topic_messages().get("/control/command/control_cmd", 0) == 0
    assert "/control/command/control_cmd" not in got["sinks"]
    assert got["sources"] and got["sinks"] and got["isolated"]


# ---------------------------------------------------------------- the CART sample's shape

CART = {"processes": [{
    "name": "gnss_provider", "nodes": [
        {"name": "STR_Client_node", "publishers": [{"topic": "/beforeSOMEIP", "depth": 10}],
         "timers": [{"period_ms": 50, "work": {"dist": "uniform", "min_us": 80, "max_us": 200}, "publish": ["/beforeSOMEIP"]}]},
        {"name": "caret_trace_gnss_provider", "publishers": [{"topic": "/caret/status"}],
         "subscriptions": [{"topic": "/caret/start_record"}, {"topic": "/caret/end_record"}],
         "timers": [{"period_ms": 100, "work": {"dist": "fixed", "us": 50}, "publish": ["/caret/status"]}]}]}]}


@pytest.fixture(scope="module")
def cart(lttng_ready, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("ros2sim hosts need unshare (root)")
    sim = REPO / "tools" / "ros2sim"
    subprocess.run(["make", "-s", "-C", str(sim)], check=True, stdout=subprocess.DEVNULL)
    base = tmp_path_factory.mktemp("cart")
    (base / "system.json").write_text(json.dumps(CART))
    out = base / "sim"
    p = subprocess.run([sys.executable, str(sim / "ros2sim.py"), "run", "--system", str(base / "system.json"), "--distro", "humble",
                        "--caret", "--duration", "1.5", "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    return out / "traces", base


@pytest.mark.lttng
def test_cart_shape(cart, report_page):
    import roscope
    from roscope.report.pairs import auto_pairs

    trace, base = cart
    g = ros_graph.read(trace)
    assert g.topic_messages()["/beforeSOMEIP"] > 10 and g.topic_messages()["/caret/status"] > 5
    html = report_page(trace).read_text(encoding="utf-8")
    got = check_pairs(html, trace)
    # The only candidate pair was a timer publishing /beforeSOMEIP, and CARET's /caret/status:
    # /beforeSOMEIP would be both source and sink, /caret/status is infrastructure: no pair.
    assert got.get("sources", set()) == set() and got.get("sinks", set()) == set()
    assert got["isolated"] == {"/beforeSOMEIP"}
    assert "/caret/status" in got["infra"]
    assert 'id="flows-0"' not in html and "no source and sink topics were found" in html
    db = roscope.open(str(trace))
    a = auto_pairs(db)
    assert (a.sources, a.sinks, a.isolated) == ([], [], ["/beforeSOMEIP"]) and "/caret/status" in a.infra
