"""The flight recorder (`roscope record --flight-recorder`, issue 32): an LTTng snapshot-mode
session whose ring buffers keep the last seconds in memory, written to disk only when a
snapshot is asked for (``snapshot``: `roscope record snapshot`, SIGUSR1 to the recorder, or
any caller, e.g. a deadline watcher).

Two sessions per recording (docs/flight-recorder.md):

* ``NAME`` (runtime, snapshot mode): every default event except the init events, in per-CPU
  overwrite-mode rings sized from ``--keep`` and the expected event rate;
* ``NAME-init`` (a normal session, written to ``DIR/.lttng/NAME-init``): only the init events
  (and the tracers' state dumps). Each snapshot rotates it, and the snapshot holds every chunk
  it has archived, so a snapshot names every object however long the recorder ran and however
  many snapshots came before. (A snapshot-mode ring cannot keep them: each `lttng snapshot
  record` switches to a new sub-buffer, so after as many snapshots as the ring has
  sub-buffers the init events were overwritten by empty packets: issue 43.)

A snapshot is ``DIR/snapshots/LABEL/`` holding ``init/`` (the init session's chunks) and
``runtime/`` (the rings), loaded together as one recording, and ``roscope-snapshot.json``: the
trigger, the time, the window it covers, and what the rings' wrap overwrote (not a loss: the
flight recorder keeps only the last seconds by design). It is made under a temporary name in
``DIR/.lttng`` and renamed into place whole: a failed snapshot leaves no LABEL behind.
Snapshots of one recording are made one at a time (a lock in ``DIR/.lttng``)."""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from pathlib import Path

from roscope.files import exclusive, link_tree, private_dir, release_private_dir, remove_private_dir, rename_new
from roscope.processes import group
from roscope.record import claims
from roscope.record.lttng import lttng
from roscope.record.manifest import write_json
from roscope.record.options import DEFAULT_CHANNEL, DEFAULT_CONTEXTS, RecordError, RecordOptions

#: The init events of the tracers roscope knows (ros2_tracing's, roscope's ROS 1 and ROS 2
#: tracers'), kept in the init session; the runtime session leaves them out.
INIT_EVENTS = {
    "roscope_ros1": ["process_init", "node_init", "publisher_init", "subscription_init", "timer_init",
                     "service_init", "callback_register", "link_tx_init", "link_rx_init",
                     "message_link_periodic_async", "message_link_partial_sync", "state_dump_begin",
                     "state_dump_end"],
    "roscope_ros2": ["process_init", "client_callback_added", "service_copy", "state_dump_begin", "state_dump_end"],
    "ros2": ["rcl_init", "rcl_node_init", "rmw_publisher_init", "rcl_publisher_init", "rmw_subscription_init",
             "rcl_subscription_init", "rclcpp_subscription_init", "rclcpp_subscription_callback_added",
             "rcl_service_init", "rclcpp_service_callback_added", "rmw_client_init", "rcl_client_init",
             "rcl_timer_init", "rclcpp_timer_callback_added", "rclcpp_timer_link_node",
             "rclcpp_callback_register", "rcl_lifecycle_state_machine_init", "rclcpp_construct_ring_buffer",
             "rclcpp_buffer_to_ipb", "rclcpp_ipb_to_subscription"],
}
INIT_SUFFIX = "-init"
#: Bytes per event assumed when sizing the rings (the examples' events: 40-120 bytes with
#: their contexts), and the margin over keep x rate.
EVENT_BYTES = 96
MARGIN = 2.0
SUBBUF = 262144
INIT_SUBBUF, INIT_NUM_SUBBUF = 262144, 4
#: The init channel's monitor timer (us): a rotation completes within about this much (LTTng's
#: default, 1 s, made each snapshot take ~0.7 s).
INIT_MONITOR_US = 50_000
SNAPSHOT_MANIFEST = "roscope-snapshot.json"
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def ring_size(keep_s: float, rate: float, cpus: int | None = None) -> tuple[int, int]:
    """(sub-buffer size, sub-buffers) per CPU for `keep_s` seconds at `rate` events/s (all CPUs)."""
    cpus = cpus or os.cpu_count() or 1
    need = keep_s * rate * EVENT_BYTES * MARGIN / cpus
    return SUBBUF, max(4, 2 ** math.ceil(math.log2(max(1.0, need / SUBBUF))))


def create(name: str, out: Path, opts: RecordOptions, made: list[str]) -> None:
    """Creates and starts the two sessions, adding each to `made` once it exists (the caller
    destroys those if this fails)."""
    init = name + INIT_SUFFIX
    subbuf, num = ring_size(opts.keep, opts.rate)
    ctx = [a for c in DEFAULT_CONTEXTS for a in ("-t", c)]
    # the init session written as it goes (rotated at each snapshot), the runtime one in memory
    for sess, where, sb, n, mode in ((init, [f"--output={init_dir(out, name)}"], INIT_SUBBUF, INIT_NUM_SUBBUF,
                                       f"--monitor-timer={INIT_MONITOR_US}"),
                                      (name, ["--snapshot", f"--output={out / '.lttng' / name}"], subbuf, num, "--overwrite")):
        lttng("create", sess, *where)
        made.append(sess)
        lttng("enable-channel", "--userspace", DEFAULT_CHANNEL, f"--subbuf-size={sb}", f"--num-subbuf={n}", mode,
              f"--session={sess}")
        lttng("add-context", "--userspace", f"--channel={DEFAULT_CHANNEL}", f"--session={sess}", *ctx)
    for provider, names in INIT_EVENTS.items():
        lttng("enable-event", "--userspace", ",".join(f"{provider}:{n}" for n in names),
              f"--channel={DEFAULT_CHANNEL}", f"--session={init}")
    for ev in opts.events:
        provider = ev.split(":", 1)[0]
        excl = INIT_EVENTS.get(provider) if ev == f"{provider}:*" else None
        args = [f"--exclude={','.join(f'{provider}:{n}' for n in excl)}"] if excl else []
        lttng("enable-event", "--userspace", ev, *args, f"--channel={DEFAULT_CHANNEL}", f"--session={name}")
    opts.subbuf_size, opts.num_subbuf = str(subbuf), num
    lttng("start", init)
    lttng("start", name)


def init_dir(out: Path, name: str) -> Path:
    """Where the init session of flight recording `name` writes (its chunks in archives/)."""
    return out / ".lttng" / (name + INIT_SUFFIX)


def sessions(name: str) -> list[str]:
    return [name + INIT_SUFFIX, name]


def snapshot(recording: str | dict, label: str | None = None, trigger: str = "api", note: str | None = None) -> Path:
    """Writes a snapshot of flight recording `recording` (its name, or its state/manifest dict
    with "name"/"session" and "output"/"trace_dir"): DIR/snapshots/LABEL/{init,runtime} and its
    manifest, complete or not at all. Returns the snapshot's directory. A RecordError if it is
    not a running flight recording, LABEL is taken, or LTTng fails (nothing is left then)."""
    name, out = _locate(recording)
    label = label or time.strftime("%Y%m%d-%H%M%S") + f"-{time.monotonic_ns() % 1000000:06d}"
    if not _LABEL.fullmatch(label):
        raise RecordError(f"snapshot name {label!r}: use letters, digits, '.', '_', '-' (up to 100)")
    dest = out / "snapshots" / label
    with _one_at_a_time(out):
        if os.path.lexists(dest):
            raise RecordError(f"{dest}: a snapshot of that name exists (a snapshot is never overwritten)")
        asked = time.time_ns()
        t0 = time.monotonic()
        tmp = Path(private_dir(str(out / ".lttng"), f"snapshot-{label}-"))
        try:
            # the rings first (the moment asked for), then every init event up to now
            lttng("snapshot", "record", f"--session={name}", f"file://{tmp / 'runtime'}")
            written = time.monotonic() - t0
            lttng("rotate", name + INIT_SUFFIX)
            _copy_init(init_dir(out, name), tmp / "init")
            whole = time.monotonic() - t0
            info = {"format": "roscope-snapshot", "version": 2, "recording": name, "trigger": trigger,
                    "note": note, "time_ns": asked,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(asked / 1e9)) + "Z",
                    "trigger_to_disk_s": round(written, 4), "snapshot_s": round(whole, 4), **window(tmp / "runtime", tmp / "init")}
            write_json(tmp / SNAPSHOT_MANIFEST, info)
            dest.parent.mkdir(exist_ok=True)
            os.chmod(tmp, 0o755)   # a private directory is 0700: a snapshot is as readable as the recording
            rename_new(tmp, dest)
            release_private_dir(str(tmp))
        except BaseException:
            remove_private_dir(str(tmp))
            raise
    unnamed = info.get("processes_without_init") or []
    if unnamed or info.get("window_error"):
        why = (f"{len(unnamed)} of its {info['processes']} processes (PIDs {', '.join(map(str, unnamed[:10]))}) have no "
               "init event in it: their objects are unnamed" if unnamed else f"babeltrace2: {info['window_error']}")
        print(f"roscope: warning: snapshot {dest}: {why}", file=sys.stderr)
    return dest


def _one_at_a_time(out: Path):
    """The recording's snapshot lock (DIR/.lttng/snapshot.lock, roscope.files.exclusive)."""
    (out / ".lttng").mkdir(exist_ok=True)
    return exclusive(out / ".lttng" / "snapshot.lock")


def _copy_init(src: Path, dest: Path) -> None:
    """Every archived chunk of the init session into `dest` (hard links where possible: the
    chunks never change once archived); a chunk without events' streams is left out."""
    dest.mkdir()
    chunks = sorted(p for p in (src / "archives").iterdir() if p.is_dir()) if (src / "archives").is_dir() else []
    for c in chunks:
        if any(f.is_file() and f.name != "metadata" and f.stat().st_size > 0 for f in c.rglob("*")):
            link_tree(c, dest / c.name)
    if not any(dest.iterdir()):
        raise RecordError(f"{src}: the init session archived no events yet (no process of the recording has "
                          "started a tracer): a snapshot would name no object")


def _locate(recording: str | dict) -> tuple[str, Path]:
    if isinstance(recording, dict):
        name = recording.get("name") or recording.get("session")
        out = recording.get("output") or recording.get("trace_dir")
        if not name or not out:
            raise RecordError("snapshot: not a recording's state (no name and output)")
        return str(name), Path(out)
    state = claims.read_state(claims.state_path(recording)) if "/" not in recording else None
    if not state or not state.get("flight"):
        raise RecordError(f"no running flight recording named {recording}")
    return state["name"], Path(state["output"])


_WINDOW = r"""
import json, sys
import bt2


def vpid(m):
    ctx = m.event.common_context_field
    return int(ctx["vpid"]) if ctx is not None and "vpid" in ctx else None


first, last, per, end = None, None, {}, {}
lost = 0
running = set()
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    t = type(m)
    if t is bt2._EventMessageConst:
        ts = m.default_clock_snapshot.value
        s = m.event.packet.stream.id if m.event.packet else 0
        key = (m.event.packet.stream.trace.name if m.event.packet else "", s,
               m.event.packet.context_field.get("cpu_id") if m.event.packet and m.event.packet.context_field else None)
        per.setdefault(str(key), ts)
        end[str(key)] = ts
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
        running.add(vpid(m))
    elif t is bt2._DiscardedPacketsMessageConst:
        lost += m.count or 0
named, init_events = set(), 0
if len(sys.argv) > 2:
    for m in bt2.TraceCollectionMessageIterator(sys.argv[2]):
        if type(m) is bt2._EventMessageConst:
            init_events += 1
            named.add(vpid(m))
running.discard(None)
print(json.dumps({"first_ns": first, "last_ns": last, "complete_from_ns": max(per.values()) if per else None,
                  "complete_until_ns": min(end.values()) if end else None,
                  "packets_overwritten_between": lost, "init_events": init_events,
                  "processes": len(running), "processes_without_init": sorted(running - named)}))
"""


def window(trace: Path, init: Path | None = None) -> dict:
    """The window a snapshot's runtime trace covers (monotonic ns): its first and last event,
    and the span in which every CPU's ring holds all its events (`complete_from_ns`: before it,
    some rings had already wrapped; `complete_until_ns`: after it, some ring's last events were
    not yet in a sub-buffer the snapshot could take); with `init`, the snapshot's init events
    and the processes (vpids) of the runtime trace that have none there
    (`processes_without_init`: their objects are unnamed); babeltrace2 reads it."""
    argv = [str(trace)] + ([str(init)] if init is not None else [])
    p = group.output("babeltrace2-window", ["/usr/bin/python3", "-c", _WINDOW, *argv])
    if p.returncode != 0:
        return {"window_error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    w = json.loads(p.stdout.strip().splitlines()[-1])
    if w["first_ns"] is not None:
        w["window_s"] = round((w["complete_until_ns"] - w["complete_from_ns"]) / 1e9, 3)
    return w
