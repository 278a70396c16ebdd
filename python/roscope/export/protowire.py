"""Protocol-buffers wire format, written column by column with numpy.

Perfetto traces are one `Trace` message: a repeated field 1 of `TracePacket`s.
A trace of millions of callback runs must not build one Python object per
packet, so packets of one shape are encoded together: each field of a packet is
a *piece*, a uint8 matrix with one row per packet whose valid bytes are a
prefix of the row (their count in `lens`). `concat` joins pieces row by row,
`message` wraps a row as a length-delimited field, and `flatten` gives the
bytes of all rows one after the other.

The scalar helpers (`field_varint`, `field_bytes`, ...) encode the few
messages written one at a time (track descriptors, interned names).

Wire format: a field is a key varint ``(number << 3) | wire type`` and a value:
varint (type 0), 8 little-endian bytes (type 1), or a length varint and the
bytes (type 2). Varints are little-endian groups of 7 bits, the high bit set on
every byte but the last.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

VARINT, I64, LEN = 0, 1, 2

Piece = tuple[np.ndarray, np.ndarray]  # (uint8 matrix [rows, width], int64 valid bytes per row)


# ---------------------------------------------------------------- one message at a time

def varint_bytes(v: int) -> bytes:
    if v < 0:
        v += 1 << 64  # int64 as two's complement, ten bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint_bytes(number << 3 | wire_type)


def field_varint(number: int, v: int) -> bytes:
    return key(number, VARINT) + varint_bytes(int(v))


def field_bytes(number: int, b: bytes) -> bytes:
    return key(number, LEN) + varint_bytes(len(b)) + b


def field_str(number: int, s: str) -> bytes:
    return field_bytes(number, s.encode("utf-8", "replace"))


# ---------------------------------------------------------------- many rows at once

def varints(v: np.ndarray) -> Piece:
    """The varint encodings of an integer array (negative int64 as ten bytes)."""
    x = np.asarray(v).astype(np.int64).view(np.uint64)
    n = len(x)
    out = np.zeros((n, 10), np.uint8)
    lens = np.ones(n, np.int64)
    width = 1
    for i in range(10):
        low = (x & np.uint64(0x7F)).astype(np.uint8)
        x = x >> np.uint64(7)
        more = x != 0
        out[:, i] = low | (more.astype(np.uint8) << 7)
        if not more.any():
            width = i + 1
            break
        lens += more
    return out[:, :width], lens


def const(b: bytes, n: int, present: np.ndarray | None = None) -> Piece:
    """The same bytes on every row (or only where `present`)."""
    mat = np.broadcast_to(np.frombuffer(b, np.uint8), (n, len(b)))
    lens = np.full(n, len(b), np.int64)
    if present is not None:
        lens = np.where(present, lens, 0)
    return mat, lens


def concat(pieces: Sequence[Piece]) -> Piece:
    """Row by row concatenation of pieces, left aligned."""
    n = len(pieces[0][1])
    if n == 0:
        return np.zeros((0, 0), np.uint8), np.zeros(0, np.int64)
    width = sum(p[0].shape[1] for p in pieces)
    out = np.zeros((n, width), np.uint8)
    flat = out.reshape(-1)
    row_start = np.arange(n, dtype=np.int64) * width
    off = np.zeros(n, np.int64)
    for mat, lens in pieces:
        w = mat.shape[1]
        if w == 0:
            continue
        if (lens == w).all() and (off == off[0]).all():
            o = int(off[0])
            out[:, o:o + w] = mat
        else:
            rows = np.nonzero(lens)[0]  # repeated fields are empty on most rows
            sub, sub_lens = mat[rows], lens[rows]
            w = int(sub_lens.max()) if len(rows) else 0
            valid = np.arange(w)[None, :] < sub_lens[:, None]
            dest = (row_start[rows] + off[rows])[:, None] + np.arange(w)[None, :]
            flat[dest[valid]] = sub[:, :w][valid]
        off = off + lens
    return out[:, :int(off.max())], off


def field_varints(number: int, v: np.ndarray, present: np.ndarray | None = None) -> Piece:
    """`number: v` as varint fields (left out where not `present`)."""
    k = np.frombuffer(key(number, VARINT), np.uint8)
    vm, vl = varints(v)
    mat = np.empty((len(vl), len(k) + vm.shape[1]), np.uint8)
    mat[:, :len(k)] = k
    mat[:, len(k):] = vm
    lens = vl + len(k)
    if present is not None:
        lens = np.where(present, lens, 0)
    return mat, lens


def repeated_fixed64(number: int, counts: np.ndarray, values: np.ndarray) -> Piece:
    """A repeated fixed64 field: row i holds the next `counts[i]` of `values`
    (values grouped by row, rows in order)."""
    n = len(counts)
    k = np.frombuffer(key(number, I64), np.uint8)
    item = len(k) + 8
    most = int(counts.max()) if n else 0
    out = np.zeros((n, item * most), np.uint8)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
    vals = np.ascontiguousarray(np.asarray(values, np.uint64)).view(np.uint8).reshape(-1, 8)
    for s in range(most):
        idx = np.nonzero(counts > s)[0]
        out[idx, s * item:s * item + len(k)] = k
        out[idx, s * item + len(k):(s + 1) * item] = vals[start[idx] + s]
    return out, counts.astype(np.int64) * item


def message(number: int, content: Piece) -> Piece:
    """`content` as a length-delimited field `number`."""
    return concat(message_pieces(number, [content]))


def message_pieces(number: int, pieces: Sequence[Piece]) -> list[Piece]:
    """The pieces of a length-delimited field `number` whose content is `pieces`
    (key, length, then the pieces themselves): concatenate them once, at the end."""
    n = len(pieces[0][1])
    total = np.zeros(n, np.int64)
    for _m, lens in pieces:
        total += lens
    return [const(key(number, LEN), n), varints(total), *pieces]


def flatten(piece: Piece) -> bytes:
    mat, lens = piece
    if mat.shape[1] == 0:
        return b""
    mask = np.arange(mat.shape[1])[None, :] < lens[:, None]
    return mat[mask].tobytes()
