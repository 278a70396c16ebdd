#!/usr/bin/env python3
"""Builds the seed corpora from the real traces (run once; the minimized
corpora are committed under corpus/).

  python3 crates/ctf/fuzz/make_seeds.py [TRACES (default: ../shared/traces beside the checkout)] [OUTDIR]

metadata/: each real metadata file (packetized, as recorded), its TSDL text as
babeltrace2 prints it, and its first packet alone.
stream/: one selector byte (0 = ros2-pingpong, 1 = ros1-kernel, 2 = ros1-ust
metadata, as in fuzz_targets/stream.rs) followed by the first packet of each
stream file of that trace, whole and cut at its content size.
"""
import os, struct, subprocess, sys, hashlib

traces = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "shared", "traces")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")

TRACES = [
    (0, "ros2/pingpong-rolling-2021/ust/uid/1000/64-bit"),
    (1, "ros1/nodes-pipeline-melodic/kernel"),
    (2, "ros1/nodes-pipeline-melodic/ust/uid/1000/64-bit"),
]

def put(kind, data):
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)

for root, dirs, files in os.walk(traces):
    if "metadata" in files:
        md = open(os.path.join(root, "metadata"), "rb").read()
        put("metadata", md)
        # first metadata packet alone: content_size (bits) at offset 24
        if md[:4] == struct.pack("<I", 0x75D11D57):
            psize = struct.unpack_from("<I", md, 28)[0] // 8
            put("metadata", md[:psize])
        text = subprocess.run(["babeltrace2", "--output-format=ctf-metadata", root],
                              capture_output=True, check=True).stdout
        put("metadata", text)

for sel, rel in TRACES:
    d = os.path.join(traces, rel)
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if name == "metadata" or not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        # packet header (LTTng): magic u32, uuid[16], stream_id u32,
        # stream_instance_id u64 -> packet context at 32: ts_begin, ts_end,
        # content_size, packet_size (u64 each, little endian).
        content, packet = struct.unpack_from("<QQ", data, 48)
        put("stream", bytes([sel]) + data[:packet // 8])
        put("stream", bytes([sel]) + data[:(content + 7) // 8])
