"""Infrastructure: the callbacks and topics that ROS and the tools give every node, which
the user never wrote (docs/ci.md, "Infrastructure"). A budget's regular expression leaves
them out of what it selects unless the budget says `infrastructure: keep` (or the check runs
with `--infrastructure keep`, or the pytest API is asked with `infrastructure="keep"`):

- topics: /rosout, /rosout_agg, /parameter_events, /clock and CARET's /caret/*, the topics
  the report leaves out of its node graph as infrastructure (roscope.report.pairs.INFRA;
  tests/test_check_infrastructure.py keeps the two the same);
- callbacks: subscriptions to those topics (rclcpp's TimeSource on /parameter_events, the
  ROS 1 rosout node's on /rosout), and each node's own services and their clients: the
  parameter services (get_parameters, get_parameter_types, set_parameters,
  set_parameters_atomically, describe_parameters, list_parameters: six per rclcpp and rclpy
  node), get_type_description (Jazzy on), the logger services (get_logger_levels,
  set_logger_levels; ROS 1's get_loggers, set_logger_level), named `<node>/<service>`.
"""
from __future__ import annotations

import re

#: The one vocabulary of the option: a budget's `infrastructure:`, `roscope check
#: --infrastructure`, the pytest API's `infrastructure=`.
KEEP, DROP = "keep", "drop"
CHOICES = (DROP, KEEP)
DEFAULT = DROP

#: Topics of ROS and of the tools (as roscope.report.pairs.INFRA).
TOPICS = re.compile(r"^/(rosout|rosout_agg|parameter_events|clock)$|^/caret/")
#: The services every node of a ROS client library has, under its own name.
NODE_SERVICES = frozenset({
    "get_parameters", "get_parameter_types", "set_parameters", "set_parameters_atomically", "describe_parameters",
    "list_parameters", "get_type_description", "get_logger_levels", "set_logger_levels", "get_loggers",
    "set_logger_level"})


def topic(name: str | None) -> bool:
    """Whether the topic `name` is infrastructure."""
    return bool(name) and bool(TOPICS.search(name))


def callback(kind: str | None, name: str | None, node: str | None) -> bool:
    """Whether a callback (its kind, the topic or service it serves, its node) is
    infrastructure: a subscription to an infrastructure topic, or a node's own parameter,
    type-description or logger service (or a client of one)."""
    if not name:
        return False
    if kind == "subscription":
        return topic(name)
    if kind in ("service", "client"):
        prefix, _, last = name.rpartition("/")
        return last in NODE_SERVICES and (not node or kind == "client" or prefix == node.rstrip("/"))
    return False
