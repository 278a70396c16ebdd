"""The undamaged traces damage is made from, and babeltrace2's reading of them.

For every stream file of a base trace: its packets (LTTng's index file:
offset, sizes, times) and the events babeltrace2 (bt2) decodes from each
packet, in the dump format (docs/dump-format.md, see tests/support/oracle.py). Nothing
here uses roscope.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from tests.support import oracle

#: Small real traces of every layout the shared set has: ROS 2 UST with large
#: event headers (pingpong), CARET (two), ROS 1 UST and kernel with compact
#: event headers (nodes-pipeline).
BASES = {
    "pingpong": "ros2/pingpong-rolling-2021",
    "caret-e2e": "ros2/caret-end-to-end-cyclonedds",
    "caret-talker": "ros2/caret-talker-listener-galactic",
    "ros1": "ros1/nodes-pipeline-melodic",
}

#: Bases cut from a large trace: its metadata and the first packets of a few
#: stream files (whole packets, with their index entries), so that streams of
#: many packets are damaged too while every case stays quick to check.
CUTS = {
    "autoware-cut": ("ros2/autoware-carla-galactic/ust/uid/1000/64-bit", ("ros2_0", "ros2_5", "ros2_18"), 10),
}

#: Bytes of an LTTng 2.10-2.13 packet header (magic, uuid, stream_id,
#: stream_instance_id) and context (timestamp_begin, timestamp_end,
#: content_size, packet_size, packet_seq_num, events_discarded, cpu_id), in
#: both domains; the first event starts there. Offsets of the fields:
HEADER_BYTES = 84
UUID_AT, TS_BEGIN_AT, TS_END_AT, CONTENT_SIZE_AT, PACKET_SIZE_AT = 4, 32, 40, 48, 56


@dataclass
class StreamFile:
    rel: str                     # path relative to the base's root
    size: int
    packets: list[dict]          # index entries (oracle.read_lttng_index)
    key: tuple = ()              # (trace, stream) of its events in the dump format
    events: list[list[dict]] = field(default_factory=list)  # per packet, bt2's events

    def packet_at(self, off: int) -> int:
        """Index of the packet holding byte `off` (the last one for offsets past the end)."""
        k = 0
        for i, p in enumerate(self.packets):
            if p["offset"] <= off:
                k = i
        return k

    def packet_end(self, k: int) -> int:
        p = self.packets[k]
        return p["offset"] + p["packet_size"] // 8


@dataclass
class Base:
    name: str
    src: str
    files: dict[str, StreamFile]
    metadata: list[str]          # metadata files, relative to the root
    n_events: int = 0

    def by_key(self) -> dict[tuple, str]:
        return {f.key: rel for rel, f in self.files.items()}


def _stream_files(root: str) -> tuple[dict[str, StreamFile], list[str]]:
    files, metas = {}, []
    for tdir in oracle.find_traces(root):
        metas.append(os.path.relpath(os.path.join(tdir, "metadata"), root))
        for name in sorted(os.listdir(tdir)):
            path = os.path.join(tdir, name)
            if name == "metadata" or name.startswith(".") or not os.path.isfile(path) or os.path.getsize(path) == 0:
                continue
            idx = os.path.join(tdir, "index", name + ".idx")
            packets = oracle.read_lttng_index(idx) if os.path.isfile(idx) else []
            rel = os.path.relpath(path, root)
            files[rel] = StreamFile(rel, os.path.getsize(path), packets)
    return files, metas


def _read_bt2(root: str, files: dict[str, StreamFile]) -> int:
    """Fills each file's per-packet events with bt2's decoding; returns the count."""
    import bt2

    it = bt2.TraceCollectionMessageIterator(root)
    state: dict[int, list] = {}   # stream addr -> [file, trace dir, ns (num, den), keys]
    n = 0
    for msg in it:
        t = type(msg)
        if t is bt2._EventMessageConst:
            ev = msg.event
            f, tdir, (num, den), _ = state[ev.stream.addr]
            cycles = msg.default_clock_snapshot.value
            ctx = {}
            for part in (ev.common_context_field, ev.specific_context_field):
                if part is not None:
                    ctx.update(oracle._conv_struct(part))
            payload = oracle._conv_struct(ev.payload_field) if ev.payload_field is not None else {}
            f.events[-1].append({"ts": cycles * num // den, "name": ev.cls.name, "trace": tdir, "stream": f.key[1],
                                 "context": ctx, "payload": payload})
            n += 1
        elif t is bt2._PacketBeginningMessageConst:
            f, tdir, _, keys = state[msg.packet.stream.addr]
            sd = {"id": msg.packet.stream.cls.id}
            pc = msg.packet.context_field
            if pc is not None:
                sd.update({k: oracle.convert(pc[k]) for k in pc if k not in oracle.BOOKKEEPING})
            f.key = (tdir, sd)
            keys.add(json.dumps(sd, sort_keys=True))
            f.events.append([])
        elif t is bt2._StreamBeginningMessageConst:
            st = msg.stream
            rel = os.path.relpath(os.path.abspath(st.name), root)
            tdir = os.path.dirname(rel) or "."
            freq = st.cls.default_clock_class.frequency
            state[st.addr] = [files[rel], tdir, (10**9, freq), set()]
    for f, _tdir, _ns, keys in state.values():
        if len(keys) != 1:
            raise RuntimeError(f"{f.rel}: packets of several stream keys {sorted(keys)}: events cannot be told by file")
    return n


def _cut(shared: str, name: str, workdir: str) -> str:
    rel, names, npackets = CUTS[name]
    src = os.path.join(shared, rel)
    dst = os.path.join(workdir, name)
    if os.path.isdir(dst):
        return dst
    os.makedirs(os.path.join(dst, "index"))
    shutil.copyfile(os.path.join(src, "metadata"), os.path.join(dst, "metadata"))
    for n in names:
        with open(os.path.join(src, "index", n + ".idx"), "rb") as f:
            idx = f.read()
        entry_len = int.from_bytes(idx[12:16], "big")
        entries = oracle.read_lttng_index(os.path.join(src, "index", n + ".idx"))[:npackets]
        end = entries[-1]["offset"] + entries[-1]["packet_size"] // 8
        with open(os.path.join(src, n), "rb") as f:
            data = f.read(end)
        with open(os.path.join(dst, n), "wb") as f:
            f.write(data)
        with open(os.path.join(dst, "index", n + ".idx"), "wb") as f:
            f.write(idx[:16 + entry_len * len(entries)])
    return dst


def load(shared: str, name: str, workdir: str) -> Base:
    """Reads base `name` (of BASES or CUTS; cuts are made under `workdir`)."""
    src = _cut(shared, name, workdir) if name in CUTS else os.path.join(shared, BASES[name])
    files, metas = _stream_files(src)
    n = _read_bt2(src, files)
    for f in files.values():
        f.key = (f.key[0], json.dumps(f.key[1], sort_keys=True)) if f.key else ()
        if f.packets and len(f.packets) != len(f.events):
            raise RuntimeError(f"{f.rel}: {len(f.packets)} packets in the index, bt2 read {len(f.events)}")
    keys = [f.key for f in files.values()]
    if len(set(keys)) != len(keys):
        raise RuntimeError(f"{name}: two stream files share a stream key")
    return Base(name, src, files, metas, n)


def working_copy(base: Base, dst: str) -> str:
    """A writable copy of the base trace (the shared originals are read-only)."""
    shutil.copytree(base.src, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs:
            os.chmod(os.path.join(root, n), 0o755)
        for n in files:
            os.chmod(os.path.join(root, n), 0o644)
    return dst
