#!/usr/bin/env python3
"""Writes the hand-made reproducers in this directory (fuzz-found ones are
copied from crates/ctf/fuzz/artifacts/ as they are). Run from anywhere:

  python3 crates/ctf/tests/data/make_data.py

stream-*.bin use the stream fuzz target's format: one selector byte (1 =
the ros1 kernel metadata in crates/ctf/fuzz/metadata/) then the stream file.
"""
import os, struct

here = os.path.dirname(os.path.abspath(__file__))
KUUID = bytes.fromhex("d11b4f63b37516409d7be26579da00da")


def kernel_packet(events, seq=0, packet_bytes=None, content_bits=None):
    """A packet of the ros1 kernel trace, stream class 0 (lttng_logger = id 0)."""
    ctx_len = 84
    content = ctx_len + len(events)
    psize = packet_bytes or content
    cbits = content * 8 if content_bits is None else content_bits
    p = struct.pack("<I", 0xC1FC1FC1) + KUUID + struct.pack("<IQ", 0, 7)
    p += struct.pack("<QQQQQQI", 1000, 2000, cbits, psize * 8 if content_bits is None else cbits, seq, 0, 3)
    p += events
    return p + bytes(max(0, psize - len(p)))


def logger(ts27, msg_len, msg):
    """lttng_logger: compact header (5-bit id 0, 27-bit timestamp), u64 length, text."""
    return struct.pack("<I", 0 | ts27 << 5) + struct.pack("<Q", msg_len) + msg


def write(name, data):
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)


# 1. A text sequence whose length (0x1FFF_FFFF_FFFF_FFF0 bytes) makes
#    position + length overflow 64 bits: the first event is fine, the second
#    must be reported (file offset 84 + 14 = 98), not read.
evs = logger(5, 2, b"hi") + logger(6, 0x1FFF_FFFF_FFFF_FFF0, b"abcdefgh")
write("stream-text-length-overflow.bin", b"\x01" + kernel_packet(evs))

# 2. A second packet declaring a content/packet size near 2^64 bits: the
#    first packet's event is read, the second packet's event too (the packet
#    is cut short by the end of the file, like a truncated one).
p0 = kernel_packet(logger(5, 2, b"hi"), seq=0)
p1 = kernel_packet(logger(9, 3, b"abc"), seq=1, content_bits=0xFFFF_FFFF_FFFF_FF00)
write("stream-packet-size-overflow.bin", b"\x01" + p0 + p1)
print("first packet", len(p0), "bytes")

# 3. Metadata whose events occupy no bits at all: no packet header, no
#    event header, empty payload. Reading must stop, not loop forever.
write("zero-size-event.metadata", b"""/* CTF 1.8 */
trace { major = 1; minor = 8; byte_order = le; };
event { name = "nothing"; id = 0; fields := struct { }; };
""")

# 4. Nested arrays of empty structures: 10^7 x 10^7 iterations per event if
#    nothing bounds the work (one byte of event header per event).
write("empty-struct-arrays.metadata", b"""/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
trace { major = 1; minor = 8; byte_order = le; };
stream { event.header := struct { uint8_t id; }; };
event { name = "e"; id = 0; fields := struct { struct { } a[10000000][10000000]; }; };
""")

# 5. Exponential type: each alias holds two copies of the previous one
#    (2^60 integers after 60 lines, 3 KB of text).
lines = [b"/* CTF 1.8 */", b"typealias integer { size = 8; align = 8; signed = false; } := t0;"]
for i in range(1, 61):
    lines.append(b"typealias struct { t%d a; t%d b; } := t%d;" % (i - 1, i - 1, i))
lines.append(b"trace { major = 1; minor = 8; byte_order = le; };")
lines.append(b'event { name = "e"; id = 0; fields := struct { t60 x; }; };')
write("exponential-alias.metadata", b"\n".join(lines) + b"\n")

# 6. Enumeration value at the top of the 128-bit range, then an implicit one.
write("enum-implicit-overflow.metadata", b"""/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
trace { major = 1; minor = 8; byte_order = le; };
event { name = "e"; id = 0; fields := struct {
    enum : uint8_t { A = 170141183460469231731687303715884105727, B } x; }; };
""")

# 7. Deep nesting: 5000 nested structures, and 100000 array dimensions.
n = 5000
write("deep-structs.metadata", b"/* CTF 1.8 */\ntypealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
      b"trace { major = 1; minor = 8; byte_order = le; };\n"
      b'event { name = "e"; id = 0; fields := ' + b"struct{" * n + b"uint8_t x;" + b"}a;" * (n - 1) + b"}; };\n")
write("deep-arrays.metadata", b"/* CTF 1.8 */\ntypealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
      b"trace { major = 1; minor = 8; byte_order = le; };\n"
      b'event { name = "e"; id = 0; fields := struct { uint8_t x' + b"[1]" * n + b"; }; };\n")

# 8. Event declarations (appended to the tests' standard metadata): nested
#    small arrays, which the program compiler unrolled into 32^7 operations
#    (a 6 GiB allocation, then abort), and a small one decoded normally.
write("nested-small-arrays.tsdl", b"""
event { id = 0; name = "small"; stream_id = 0; fields := struct { uint8_t x[2][3][4]; }; };
event { id = 1; name = "big"; stream_id = 0; fields := struct { uint8_t x[32][32][32][32][32][32][32]; }; };
""")
