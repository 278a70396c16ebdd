"""roscope.selector's one label format, and the one `--window START:END` parser
(roscope.numbers.window, placed on a trace by window_in), with hand-computed and
babeltrace2 expectations (issue 40).

Quick tier: the shared pingpong trace (read by babeltrace2 and loaded in memory, about a
second), no recording."""
from __future__ import annotations

import os
from collections import Counter

import pytest
from roscope import cli, numbers, selector
from roscope.errors import InputError

from tests.support.oracle import Reading

SHARED = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                       "..", "shared", "traces"))
PINGPONG = os.path.join(SHARED, "ros2", "pingpong-rolling-2021")

pytestmark = pytest.mark.skipif(not os.path.isdir(PINGPONG), reason=f"the shared traces are not at {SHARED}")


def bt2_labels(trace: str) -> Counter:
    """Every registered callback's label, built by hand from babeltrace2's init events:
    `node topic-or-timer symbol`, the node `/name` (namespace `/`) or `ns/name`, the topic
    or service of a subscription or service, `timer P ms` for a timer (P: the period in ms,
    a double as printed: 3.0)."""
    nodes, subs, rclcpp_subs, services, timers, timer_node = {}, {}, {}, {}, {}, {}
    owner, symbol = {}, {}
    for ev in Reading(trace).events():
        p, pid, name = ev["payload"], ev["context"].get("vpid"), ev["name"]
        if name == "ros2:rcl_node_init":
            ns = p["namespace"]
            nodes[pid, p["node_handle"]] = ("/" + p["node_name"].lstrip("/") if ns in ("", "/")
                                            else ns.rstrip("/") + "/" + p["node_name"])
        elif name == "ros2:rcl_subscription_init":
            subs[pid, p["subscription_handle"]] = (p["node_handle"], p["topic_name"])
        elif name == "ros2:rclcpp_subscription_init":
            rclcpp_subs[pid, p["subscription"]] = p["subscription_handle"]
        elif name == "ros2:rclcpp_subscription_callback_added":
            owner[pid, p["callback"]] = ("subscription", rclcpp_subs[pid, p["subscription"]])
        elif name == "ros2:rcl_service_init":
            services[pid, p["service_handle"]] = (p["node_handle"], p["service_name"])
        elif name == "ros2:rclcpp_service_callback_added":
            owner[pid, p["callback"]] = ("service", p["service_handle"])
        elif name == "ros2:rcl_timer_init":
            timers[pid, p["timer_handle"]] = p["period"]
        elif name == "ros2:rclcpp_timer_link_node":
            timer_node[pid, p["timer_handle"]] = p["node_handle"]
        elif name == "ros2:rclcpp_timer_callback_added":
            owner[pid, p["callback"]] = ("timer", p["timer_handle"])
        elif name == "ros2:rclcpp_callback_register":
            symbol[pid, p["callback"]] = p["symbol"]
    out = Counter()
    for (pid, cb), (kind, handle) in owner.items():
        if kind == "timer":
            node, what = timer_node[pid, handle], f"timer {timers[pid, handle] / 1e6!r} ms"
        else:
            node, what = (subs if kind == "subscription" else services)[pid, handle]
        out[f"{nodes[pid, node]} {what} {symbol[pid, cb]}"] += 1
    return out


@pytest.fixture(scope="module")
def pp_db():
    import roscope

    db = roscope.open(PINGPONG)
    yield db
    db.close()


def test_callback_labels_are_node_topic_or_timer_symbol(pp_db):
    """Each callback's label, as babeltrace2's init events give it (13 per process here:
    parameter services, /parameter_events, the node's own subscription; ping's timer)."""
    labels = selector.callback_labels(pp_db)
    expected = bt2_labels(PINGPONG)
    assert sum(expected.values()) >= 4 and any(" timer 3.0 ms " in x for x in expected), expected
    assert Counter(labels.values()) == expected


def test_one_selection_means_one_thing(pp_db):
    """`^/ping ` is every callback of the node /ping; `/ping ` also pong's subscription to
    /ping (the topic is in the label); a symbol's text selects its callbacks."""
    labels = selector.callback_labels(pp_db)
    expected = bt2_labels(PINGPONG)
    node_ping = sum(n for x, n in expected.items() if x.startswith("/ping "))
    assert len(selector.callbacks(pp_db, "^/ping ")) == node_ping
    with_topic = sum(n for x, n in expected.items() if x.startswith("/ping ") or x.startswith("/pong /ping "))
    assert len(selector.callbacks(pp_db, "/ping ")) == with_topic
    assert [labels[i] for i in selector.callbacks(pp_db, "timer")] == [x for x in expected if " timer " in x]
    assert len(selector.callbacks(pp_db, r"PongNode::")) == 1


def test_a_selection_that_matches_nothing_names_the_option_and_lists_the_labels(pp_db):
    with pytest.raises(InputError) as e:
        selector.callbacks(pp_db, "^nothing$", "--callback")
    msg = str(e.value)
    assert msg.startswith("--callback: no callback matches '^nothing$' (callbacks: /ping ")
    assert "/pong /ping std::_Bind" in msg
    with pytest.raises(InputError, match=r"^--callback: bad regular expression '\(': unclosed group"):
        selector.Selector("callback", "(", "--callback")


def test_pick_keeps_the_order_and_skips_missing_labels():
    sel = selector.Selector("topic", "^/a")
    assert sel.pick({3: "/ab", 1: None, 2: "/b", 0: "/a"}) == [3, 0]
    assert sel.matches("/a") and not sel.matches(None) and not sel.matches("x/a")
    ex = selector.Selector("executor", "^/fusion$")
    assert ex.matches_any(selector.executor_names({"procname": "fusion_node", "nodes": ["/fusion", "/x"]}))
    assert not ex.matches_any(selector.executor_names({"procname": "/fusion_x", "nodes": []}))


@pytest.mark.parametrize("text, expected", [
    ("callback:^/a ", ("callback", "^/a ", None)),
    ("topic:/x", ("topic", "/x", None)),
    ("path:^/a$->^/b$", ("path", "^/a$", "^/b$")),
])
def test_parse(text, expected):
    assert selector.parse(text) == expected


@pytest.mark.parametrize("text, message", [
    ("callbacks:x", r"^'callbacks:x': give callback:REGEX"),
    ("callback:", r"^'callback:': give callback:REGEX"),
    ("path:a", r"^'path:a': a path is path:FROM_REGEX->TO_REGEX"),
    ("topic:(", r"^'topic:\(': bad regular expression '\(': unclosed group"),
    ("path:a->(?=b)", r"^'path:a->\(\?=b\)': bad regular expression .*look-around"),
])
def test_parse_refuses(text, message):
    with pytest.raises(InputError, match=message):
        selector.parse(text)


# ---------------------------------------------------------------- --window START:END

S = 1_000_000_000


@pytest.mark.parametrize("text, expected", [
    ("1.5:2", (1_500_000_000, 2 * S)),
    (":", (0, None)),
    ("0:", (0, None)),
    (":0.25", (0, 250_000_000)),
    ("0.000000001:0.000000002", (1, 2)),      # exact to the ns
    ("0.1:0.3", (100_000_000, 300_000_000)),  # 0.1 + 0.2 never read as a float
    (" 2 : 3 ", (2 * S, 3 * S)),
    ("1e-3:2e0", (1_000_000, 2 * S)),
    ("0:1e9", (0, 10**18)),
])
def test_window_reads_seconds_exactly(text, expected):
    assert numbers.window(text) == expected


@pytest.mark.parametrize("text, reason", [
    ("2:1", "the window must end after its start"),
    ("1:1", "the window must end after its start"),
    ("abc", "give START:END"),
    ("1:2:3", "give START:END"),
    ("nan:1", "'nan' is not a number"),
    ("0:inf", "'inf' is not a number"),
    ("-1:2", "'-1' is out of range"),
    ("0:1e10", "'1e10' is out of range"),
    ("0x10:", "'0x10' is not a number"),
])
def test_window_refuses_naming_the_value(text, reason):
    with pytest.raises(numbers.NumberError) as e:
        numbers.window(text)
    assert str(e.value).startswith(repr(text)) and reason in str(e.value), str(e.value)


@pytest.mark.parametrize("verb", ["stats", "flow", "report"])
def test_every_window_option_is_the_one_parser(verb, capsys):
    """`stats`, `flow` and `report` share the declaration and the parser: exit 2 naming
    the option and the value."""
    parser = cli.build_parser([verb])
    extra = {"flow": ["--from", ".", "--to", "."], "report": ["-o", "x.html"]}.get(verb, [])
    args = parser.parse_args([verb, PINGPONG, *extra, "--window", "1.5:2"])
    assert args.window == (1_500_000_000, 2 * S)
    with pytest.raises(SystemExit) as e:
        parser.parse_args([verb, PINGPONG, *extra, "--window", "2:1"])
    assert e.value.code == 2
    assert "argument --window: '2:1': the window must end after its start" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args([verb, "--help"])
    assert "--window START:END" in capsys.readouterr().out


def test_window_in_places_it_on_the_trace():
    first, last = 10, 5 * S + 10
    assert numbers.window_in((S, None), first, last) == (S + 10, 5 * S + 11)       # past the last event
    assert numbers.window_in((S, 9 * S), first, last) == (S + 10, 9 * S + 10)      # beyond the end: kept
    assert numbers.window_in((S, None), first, last, within=True) == (S + 10, 5 * S + 10)
    assert numbers.window_in((S, 9 * S), first, last, within=True) == (S + 10, 5 * S + 10)  # cut at the end
    assert numbers.window_in((6 * S, None), first, last) == (6 * S + 10, 5 * S + 11)       # empty, not an error
    with pytest.raises(numbers.NumberError, match=r"^--window: the window starts at 6 s, after the trace's end "
                                                  r"\(5\.000 s long\)"):
        numbers.window_in((6 * S, None), first, last, within=True)
