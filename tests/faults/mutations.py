"""Damage generated from a seed, applied to a working copy of a base trace and undone.

A case damages one file (a stream file, or a metadata file) with a list of
operations: ``("write", offset, bytes)`` or ``("truncate", length)``; stream
cases may also hide the trace's ``index/`` directory, so that both ways of
finding packets after damage are exercised.
"""
from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass, field

from tests.faults.bases import (
    CONTENT_SIZE_AT,
    HEADER_BYTES,
    PACKET_SIZE_AT,
    TS_BEGIN_AT,
    TS_END_AT,
    UUID_AT,
    Base,
)

STREAM_KINDS = ("truncate", "bit_flip", "header_flip", "garbage", "zeros", "bad_size", "bad_uuid", "bad_timestamp")
META_KINDS = ("md_truncate", "md_flip", "md_header_flip", "md_garbage", "md_zeros", "md_bad_size", "md_bad_uuid", "md_text")
METADATA_MAGIC = 0x75D11D57
METADATA_HEADER = 37


@dataclass
class Case:
    id: int
    base: str
    kind: str
    file: str                       # damaged file, relative to the base's root
    ops: list = field(default_factory=list)
    no_index: bool = False
    lo: int = 0                     # first damaged byte
    hi: int = 0                     # end of the damage (exclusive)
    what: str = ""

    @property
    def metadata(self) -> bool:
        return self.kind.startswith("md_")

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["ops"] = [[op[0], op[1], op[2].hex()] if op[0] == "write" else list(op) for op in self.ops]
        return d

    @staticmethod
    def from_json(d: dict) -> Case:
        d = dict(d)
        d["ops"] = [("write", op[1], bytes.fromhex(op[2])) if op[0] == "write" else tuple(op) for op in d["ops"]]
        return Case(**d)


def _write(case: Case, off: int, data: bytes, what: str) -> Case:
    case.ops.append(("write", off, data))
    case.lo, case.hi, case.what = off, off + len(data), what
    return case


def _flip(rng: random.Random, case: Case, size: int, lo: int, hi: int, orig: bytes, what: str) -> Case:
    off = rng.randrange(lo, max(lo + 1, min(hi, size)))
    bit = rng.randrange(8)
    return _write(case, off, bytes([orig[off] ^ (1 << bit)]), f"{what}: bit {bit} of byte {off} flipped")


def _bad_u64(rng: random.Random, v: int) -> int:
    choice = rng.randrange(7)
    return [v ^ (1 << rng.randrange(3)), v ^ (1 << rng.randrange(3, 48)), 0, v * 2, v // 2, 2**64 - 1,
            rng.getrandbits(64)][choice] % 2**64


def stream_case(rng: random.Random, cid: int, kind: str, base: Base, read) -> Case:
    files = [f for f in base.files.values() if f.packets]
    multi = [f for f in files if len(f.packets) > 1]
    f = rng.choice(multi if multi and rng.random() < 0.8 else files)
    orig = read(base, f.rel)
    k = rng.randrange(len(f.packets))
    p = f.packets[k]
    off = p["offset"]
    content_end = off + p["content_size"] // 8
    case = Case(cid, base.name, kind, f.rel, no_index=rng.random() < 0.4)
    if kind == "truncate":
        cut = rng.choice([rng.randrange(1, f.size), off + rng.randrange(1, HEADER_BYTES), (off + content_end) // 2 + 1,
                          content_end + rng.randrange(0, 2)])
        cut = max(1, min(cut, f.size - 1))
        case.ops.append(("truncate", cut))
        case.lo = case.hi = cut
        case.what = f"truncated to {cut} bytes"
        return case
    if kind == "bit_flip":
        return _flip(rng, case, f.size, off + HEADER_BYTES, content_end, orig, "event bytes")
    if kind == "header_flip":
        return _flip(rng, case, f.size, off, off + HEADER_BYTES, orig, "packet header/context")
    if kind in ("garbage", "zeros"):
        n = rng.choice([4, 16, 64, 256, 1024])
        at = rng.randrange(off, max(off + 1, content_end))
        n = min(n, f.size - at)
        data = bytes(n) if kind == "zeros" else rng.randbytes(n)
        return _write(case, at, data, f"{n} {'zero' if kind == 'zeros' else 'random'} bytes at {at}")
    if kind == "bad_size":
        name, at = rng.choice([("content_size", CONTENT_SIZE_AT), ("packet_size", PACKET_SIZE_AT)])
        v = _bad_u64(rng, struct.unpack_from("<Q", orig, off + at)[0])
        return _write(case, off + at, struct.pack("<Q", v), f"{name} of packet {k} set to {v}")
    if kind == "bad_uuid":
        if rng.random() < 0.5:
            i = rng.randrange(16)
            return _write(case, off + UUID_AT + i, bytes([orig[off + UUID_AT + i] ^ rng.randrange(1, 256)]), f"uuid byte {i} of packet {k}")
        return _write(case, off + UUID_AT, rng.randbytes(16), f"random uuid in packet {k}")
    if kind == "bad_timestamp":
        choice = rng.randrange(4)
        if choice < 2:
            name, at = [("timestamp_begin", TS_BEGIN_AT), ("timestamp_end", TS_END_AT)][choice]
            v = struct.unpack_from("<Q", orig, off + at)[0]
            v = v ^ (1 << rng.randrange(64)) if rng.random() < 0.7 else rng.getrandbits(64)
            return _write(case, off + at, struct.pack("<Q", v), f"{name} of packet {k} set to {v}")
        if choice == 2:
            v = struct.unpack_from("<Q", orig, off + TS_BEGIN_AT)[0] - rng.randrange(1, 10**9)
            return _write(case, off + TS_BEGIN_AT, struct.pack("<Q", max(v, 0)), f"timestamp_begin of packet {k} moved back")
        return _flip(rng, case, f.size, off + HEADER_BYTES, min(content_end, off + HEADER_BYTES + 8), orig, "first event header")
    raise ValueError(kind)


def metadata_packets(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, content bytes, packet bytes) of each packet of a packetized metadata file."""
    out, off = [], 0
    while off + METADATA_HEADER <= len(data) and struct.unpack_from("<I", data, off)[0] == METADATA_MAGIC:
        content, psize = struct.unpack_from("<II", data, off + 24)
        out.append((off, content // 8, psize // 8))
        if psize == 0:
            break
        off += psize // 8
    return out


def metadata_case(rng: random.Random, cid: int, kind: str, base: Base, read) -> Case:
    rel = rng.choice(base.metadata)
    orig = read(base, rel)
    pkts = metadata_packets(orig)
    header = METADATA_HEADER if pkts else 0     # plain-text metadata: one "packet" without header
    off, content, _ = rng.choice(pkts or [(0, len(orig), len(orig))])
    text_lo, text_hi = off + header, min(off + content, len(orig))
    case = Case(cid, base.name, kind, rel)
    if kind == "md_truncate":
        cut = rng.randrange(1, len(orig))
        case.ops.append(("truncate", cut))
        case.lo = case.hi = cut
        case.what = f"metadata truncated to {cut} bytes"
        return case
    if kind == "md_flip":
        return _flip(rng, case, len(orig), text_lo, text_hi, orig, "metadata text")
    if kind == "md_header_flip":
        return _flip(rng, case, len(orig), off, off + METADATA_HEADER, orig, "metadata packet header")
    if kind in ("md_garbage", "md_zeros"):
        n = rng.choice([1, 8, 64, 512])
        at = rng.randrange(text_lo, max(text_lo + 1, text_hi))
        n = min(n, len(orig) - at)
        data = bytes(n) if kind == "md_zeros" else rng.randbytes(n)
        return _write(case, at, data, f"{n} {'zero' if kind == 'md_zeros' else 'random'} metadata bytes at {at}")
    if kind == "md_bad_size":
        at = off + rng.choice([24, 28])
        v = struct.unpack_from("<I", orig, at)[0]
        v = [0, v ^ (1 << rng.randrange(3)), v ^ (1 << rng.randrange(3, 31)), 0xFFFFFFFF, v * 2 % 2**32, v // 2][rng.randrange(6)]
        return _write(case, at, struct.pack("<I", v), f"metadata packet {'content' if at - off == 24 else 'packet'} size set to {v}")
    if kind == "md_bad_uuid":
        if rng.random() < 0.5:
            i = rng.randrange(16)
            return _write(case, off + 4 + i, bytes([orig[off + 4 + i] ^ rng.randrange(1, 256)]), f"metadata packet uuid byte {i}")
        i = orig.find(b'uuid = "', text_lo, text_hi)
        if i < 0:
            return _write(case, off + 4, rng.randbytes(16), "random metadata packet uuid")
        j = i + 8 + rng.randrange(36)
        c = rng.choice([x for x in b"0123456789abcdef-" if x != orig[j]])
        return _write(case, j, bytes([c]), f"a character of a uuid in the metadata text at byte {j}")
    if kind == "md_text":
        return _text_edit(rng, case, orig, text_lo, text_hi)
    raise ValueError(kind)


def _text_edit(rng: random.Random, case: Case, orig: bytes, lo: int, hi: int) -> Case:
    """One same-length edit of a TSDL token: a digit, a brace, a semicolon, a letter."""
    what = rng.choice(["digit", ";", "}", "{", "letter", "="])
    if what == "digit":
        cands = [i for i in range(lo, hi) if 48 <= orig[i] <= 57]
        repl = lambda b: rng.choice([x for x in b"0123456789" if x != b])  # noqa: E731
    elif what == "letter":
        cands = [i for i in range(lo, hi) if 97 <= orig[i] <= 122]
        repl = lambda b: rng.choice([x for x in b"abcdefghijklmnopqrstuvwxyz_" if x != b])  # noqa: E731
    else:
        cands = [i for i in range(lo, hi) if orig[i] == ord(what)]
        repl = lambda b: ord(" ")  # noqa: E731
    if not cands:
        return _flip(rng, case, len(orig), lo, hi, orig, "metadata text")
    i = rng.choice(cands)
    return _write(case, i, bytes([repl(orig[i])]), f"metadata text: {what} at byte {i} changed")


def generate(bases: list[Base], seed: int, n_stream: int, n_meta: int, read) -> list[Case]:
    """`n_stream` stream cases and `n_meta` metadata cases, every kind in turn,
    bases in turn. `read(base, rel)` gives a file's original bytes."""
    rng = random.Random(seed)
    cases = []
    for i in range(n_stream):
        cases.append(stream_case(rng, len(cases), STREAM_KINDS[i % len(STREAM_KINDS)], bases[i % len(bases)], read))
    for i in range(n_meta):
        cases.append(metadata_case(rng, len(cases), META_KINDS[i % len(META_KINDS)], bases[(i // len(META_KINDS)) % len(bases)], read))
    return cases


class Applied:
    """Applies a case to a working copy (`root`) and undoes it on exit."""

    def __init__(self, root: str, case: Case, original: bytes):
        self.root, self.case, self.original = root, case, original
        self.path = os.path.join(root, case.file)
        self.index = os.path.join(os.path.dirname(self.path), "index")

    def __enter__(self) -> str:
        data = bytearray(self.original)
        for op in self.case.ops:
            if op[0] == "truncate":
                del data[op[1]:]
            else:
                _, off, b = op
                data[off:off + len(b)] = b[:max(0, len(data) - off)]
        with open(self.path, "wb") as f:
            f.write(data)
        if self.case.no_index and os.path.isdir(self.index):
            os.rename(self.index, self.index + ".hidden")
        return self.path

    def __exit__(self, *exc):
        with open(self.path, "wb") as f:
            f.write(self.original)
        if os.path.isdir(self.index + ".hidden"):
            os.rename(self.index + ".hidden", self.index)
