"""What kind of ROS system a trace comes from, guessed from its event set.

ROS 2: ros2_tracing's `ros2:*` events; the distro from rcl_init's version
(tracetools' own version) and from which events and fields exist.
CARET: `ros2_caret:*` events; its `caret_init` names the distro
(`distribution = "humble"`), which is the strongest evidence of all, and
`ros2_caret:rcl_init` is CARET's copy of rcl_init, re-emitted when a recording
starts after the application (so a CARET trace may have no `ros2:rcl_init`).
ROS 1: Bosch ros1_tracetools' `roscpp:*` events, or roscope's own ROS 1 tracer.
Precedence for the distro: caret_init's distribution, then rcl_init's
tracetools version, then the event set.
"""
from __future__ import annotations

import json

# tracetools major version -> ROS 2 distro (release branches of ros2_tracing).
_TRACETOOLS_MAJOR = {
    0: "Eloquent",
    1: "Foxy",
    2: "Galactic",
    3: "Rolling (late 2021)",
    4: "Humble",
    5: "Rolling (2022)",
    6: "Iron",
    7: "Rolling (2023)",
    8: "Jazzy or later",
}
# Within major 8 the release branches differ by minor version: Jazzy's tracetools is 8.2.x and
# Kilted's 8.6.x (the pip wheels of `make setup`); Rolling moved on between and after them.
_TRACETOOLS_8_MINOR = {2: "Jazzy", 3: "Rolling (2024)", 4: "Rolling (2024)", 5: "Rolling (2025)", 6: "Kilted"}


def _distro_of_version(ver: str) -> str | None:
    """The distro of a tracetools version (rcl_init's `version`), if known."""
    parts = ver.split(".")
    major = int(parts[0])
    if major == 8 and len(parts) > 1 and parts[1].isdigit():
        minor = int(parts[1])
        return _TRACETOOLS_8_MINOR.get(minor, "Rolling (2025 on)" if minor > 6 else "Jazzy or later")
    return _TRACETOOLS_MAJOR.get(major)


# caret_init's `distribution` (the ROS_DISTRO CARET was built for) -> display name.
_DISTRO_NAMES = {d.lower(): d for d in ("Foxy", "Galactic", "Humble", "Iron", "Jazzy", "Kilted", "Rolling")}


def _first_payload(summary_trace: dict, name: str) -> dict | None:
    ev = summary_trace.get("first", {}).get(name)
    if isinstance(ev, str):
        try:
            ev = json.loads(ev)
        except ValueError:
            return None
    return ev.get("payload") if isinstance(ev, dict) else None


def _caret_distro(summary_trace: dict, names: set, evidence: list) -> str | None:
    """The distro that CARET's caret_init names, if any; notes CARET's rcl_init copy."""
    distro = None
    ci = _first_payload(summary_trace, "ros2_caret:caret_init")
    dist = ci.get("distribution") if ci else None
    if isinstance(dist, str) and dist.strip():
        evidence.append(f"caret_init distribution {dist.strip()!r}")
        distro = _DISTRO_NAMES.get(dist.strip().lower(), dist.strip())
    if "ros2_caret:rcl_init" in names:
        evidence.append("ros2_caret:rcl_init (CARET re-emitted the init events: recording started after the application)")
    return distro


def detect(summary_trace: dict) -> dict:
    """A description of one trace: {'flavour': ..., 'distro': ..., 'evidence': [...]}."""
    counts: dict = summary_trace.get("counts", {})
    names = set(counts)
    env = summary_trace.get("env", {})
    evidence: list[str] = []
    out: dict = {"flavour": "unknown", "distro": None, "caret": False, "evidence": evidence}
    if env.get("domain") == "kernel":
        out["flavour"] = "kernel"
        evidence.append("env.domain = kernel")
        return out
    ros2 = {n for n in names if n.startswith("ros2:")}
    caret = {n for n in names if n.startswith("ros2_caret:")}
    if caret:
        out["caret"] = True
        evidence.append("ros2_caret:* events (CARET)")
    if any(n.startswith("roscpp:") for n in names):
        out["flavour"] = "ROS 1"
        out["distro"] = "roscpp (ros1_tracetools)"
        evidence.append("roscpp:* events (Bosch ros1_tracetools)")
        return out
    if any(n.startswith("roscope_ros1:") for n in names):
        out["flavour"] = "ROS 1"
        out["distro"] = "roscpp (roscope tracer)"
        evidence.append("roscope_ros1:* events")
        return out
    if not ros2 and not caret:
        return out
    out["flavour"] = "ROS 2"
    distro = _caret_distro(summary_trace, names, evidence)
    init = _first_payload(summary_trace, "ros2:rcl_init")
    if init and isinstance(init.get("version"), str):
        ver = init["version"]
        evidence.append(f"rcl_init version {ver}")
        try:
            distro = distro or _distro_of_version(ver)
        except ValueError:
            pass
    # Event-set evidence, newest first.
    if "ros2:message_link_periodic_async" in names or "ros2:message_link_partial_sync" in names:
        evidence.append("message_link_* events (Rolling)")
        distro = distro or "Rolling"
    elif "ros2:rmw_client_init" in names:
        evidence.append("rmw_client_init (Kilted or later)")
        distro = distro or "Kilted or later"
    pub = _first_payload(summary_trace, "ros2:rmw_publish")
    if pub is not None:
        if "timestamp" in pub:
            evidence.append("rmw_publish has a timestamp (Jazzy or later)")
            distro = distro or "Jazzy or later"
    if any(n.startswith("ros2:rclcpp_ring_buffer") for n in names):
        evidence.append("intra-process ring buffer events (Iron or later)")
        distro = distro or "Iron or later"
    if "ros2:rclcpp_executor_execute" in names:
        evidence.append("executor events (Humble or later, or Rolling from 2021)")
    if distro is None:
        if "ros2:rclcpp_timer_link_node" in names or "ros2:rcl_publish" in names:
            distro = "Galactic or later"
        else:
            distro = "Foxy or later"
    out["distro"] = distro
    return out
