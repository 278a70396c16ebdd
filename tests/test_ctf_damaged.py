"""roscope on damaged copies of real traces.

Each test copies a real trace to a tmp dir, damages it (truncated stream file
mid-event or mid-packet-header, flipped packet magic, corrupted metadata text,
deleted metadata) and checks that ``roscope dump`` / ``roscope info``:
* do not crash (no Python traceback, no Rust panic, no signal),
* report the damage as an error or a warning naming the file (and, for stream
  damage, a byte offset inside the damaged packet),
* still output, unchanged, every event before the damage: all events with
  ts < timestamp_begin of the damaged packet (from LTTng's packet index) are
  there, and what is printed of each stream is a prefix of babeltrace2's
  decoding of the undamaged trace (nothing invented after the damage).
"""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from tests.support import oracle
from tests.support.dump_check import assert_clean_stderr

BASES = {
    "pingpong": "ros2/pingpong-rolling-2021/ust/uid/1000/64-bit",   # UST, large headers, 19 packets
    "kernel": "ros1/nodes-pipeline-melodic/kernel",                   # kernel, compact headers
}
STREAM_DAMAGES = ("truncate-mid-event", "truncate-mid-packet-header", "flip-packet-magic")

_oracle_cache: dict[str, list] = {}


def _undamaged_events(path: str) -> list[dict]:
    if path not in _oracle_cache:
        _oracle_cache[path] = list(oracle.Reading(path).events())
    return _oracle_cache[path]


def _copy(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):  # the shared originals are read-only
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return dst


def _pick_packet(trace: str) -> tuple[str, int, dict]:
    """The stream file with the most packets and the packet to damage: the
    second one if there are several (so a whole packet precedes it), else the
    first.  Returns (file name, packet index, index entry)."""
    best = None
    for f in sorted(os.listdir(os.path.join(trace, "index"))):
        entries = oracle.read_lttng_index(os.path.join(trace, "index", f))
        if best is None or len(entries) > len(best[1]):
            best = (f[:-len(".idx")], entries)
    name, entries = best
    k = 1 if len(entries) > 1 else 0
    return name, k, entries[k]


def _damage_stream(trace: str, kind: str) -> tuple[str, int, int, int]:
    """Damage one stream file; returns (file, lo, hi, t_cut): the byte range of
    the damaged packet and its timestamp_begin."""
    name, k, ent = _pick_packet(trace)
    path = os.path.join(trace, name)
    off = ent["offset"]
    size = ent["packet_size"] // 8
    content = ent["content_size"] // 8
    if kind == "truncate-mid-event":
        cut = off + content // 2 + 1
        assert cut < os.path.getsize(path)
        os.truncate(path, cut)
    elif kind == "truncate-mid-packet-header":
        os.truncate(path, off + 10)
    elif kind == "flip-packet-magic":
        with open(path, "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0xFF]))
    else:
        raise ValueError(kind)
    return name, off, off + size, ent["timestamp_begin"]


def _numbers(text: str) -> set[int]:
    out = {int(m, 16) for m in re.findall(r"0x[0-9a-fA-F]+", text)}
    out |= {int(m) for m in re.findall(r"(?<![0-9a-fA-Fx])[0-9]+(?![0-9a-fA-Fx])", text)}
    return out


def _check_prefix_output(undamaged: list[dict], actual: list[dict], t_cut: int) -> None:
    exp = oracle.group_by(undamaged, oracle.stream_key)
    act = oracle.group_by(actual, oracle.stream_key)
    unknown = set(act) - set(exp)
    assert not unknown, f"roscope printed events of streams babeltrace2 does not have: {sorted(unknown)[:3]}"
    for key, evs in exp.items():
        got = act.get(key, [])
        n = oracle.compare(evs, got, prefix=True, what=f"roscope dump (stream {key})")
        need = sum(1 for e in evs if e["ts"] < t_cut)
        assert n >= need, (f"stream {key}: roscope printed {n} events but the {need} events before the "
                           f"damage (ts < {t_cut}) should all be there")


@pytest.fixture(scope="module")
def bases(shared_traces):
    out = {}
    for k, rel in BASES.items():
        p = os.path.join(shared_traces, rel)
        if not os.path.isfile(os.path.join(p, "metadata")):
            pytest.skip(f"real trace {p} missing")
        out[k] = p
    return out


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("kind", STREAM_DAMAGES)
def test_dump_damaged_stream(kind, base, bases, tmp_path, run_roscope):
    trace = _copy(bases[base], str(tmp_path / "trace"))
    fname, lo, hi, t_cut = _damage_stream(trace, kind)
    p = run_roscope("dump", trace, timeout=120)
    assert p.returncode >= 0, f"roscope dump killed by signal {-p.returncode}"
    assert_clean_stderr(p.stderr, "roscope dump")
    assert fname in p.stderr, f"the error/warning does not name the damaged file {fname}:\n{p.stderr[-2000:]}"
    assert any(lo <= n <= hi for n in _numbers(p.stderr)), \
        f"no byte offset within the damaged packet [{lo}, {hi}] in:\n{p.stderr[-2000:]}"
    try:
        actual = list(oracle.read_dump_lines(p.stdout.splitlines()))
        _check_prefix_output(_undamaged_events(bases[base]), actual, t_cut)
    except oracle.Mismatch as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.mark.parametrize("kind", STREAM_DAMAGES)
def test_info_damaged_stream(kind, bases, tmp_path, run_roscope):
    trace = _copy(bases["pingpong"], str(tmp_path / "trace"))
    fname, lo, hi, t_cut = _damage_stream(trace, kind)
    p = run_roscope("info", "--json", trace, timeout=120)
    assert p.returncode >= 0, f"roscope info killed by signal {-p.returncode}"
    assert_clean_stderr(p.stderr, "roscope info")
    said = p.stderr + p.stdout
    assert fname in said, f"roscope info does not name the damaged file {fname}:\n{said[-2000:]}"
    if p.returncode == 0:
        js = json.loads(p.stdout)
        undamaged = _undamaged_events(bases["pingpong"])
        need = sum(1 for e in undamaged if e["ts"] < t_cut)
        if "events" in js:
            assert need <= js["events"] <= len(undamaged), \
                f"info counts {js['events']} events; {need} precede the damage, {len(undamaged)} in all"


def _corrupt_metadata(trace: str) -> None:
    path = os.path.join(trace, "metadata")
    data = bytearray(open(path, "rb").read())
    i = data.find(b"typealias")
    assert i > 0
    data[i + 6] = ord("@")  # "typeal@as": a lexical error in the TSDL text
    open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("cmd", ["dump", "info"])
def test_corrupted_metadata(cmd, bases, tmp_path, run_roscope):
    trace = _copy(bases["pingpong"], str(tmp_path / "trace"))
    _corrupt_metadata(trace)
    args = ["info", "--json", trace] if cmd == "info" else ["dump", trace]
    p = run_roscope(*args, timeout=120)
    assert p.returncode > 0, f"roscope {cmd} succeeded on a trace whose metadata cannot be parsed"
    assert_clean_stderr(p.stderr, f"roscope {cmd}")
    assert "metadata" in p.stderr, f"the error does not name the metadata file:\n{p.stderr[-2000:]}"
    if cmd == "dump":
        assert not p.stdout.strip(), "events printed although the metadata is unreadable"


@pytest.mark.parametrize("cmd", ["dump", "info"])
def test_deleted_metadata(cmd, bases, tmp_path, run_roscope):
    trace = _copy(bases["pingpong"], str(tmp_path / "trace"))
    os.remove(os.path.join(trace, "metadata"))
    args = ["info", "--json", trace] if cmd == "info" else ["dump", trace]
    p = run_roscope(*args, timeout=120)
    assert p.returncode > 0, f"roscope {cmd} succeeded on a directory without metadata"
    assert_clean_stderr(p.stderr, f"roscope {cmd}")
    assert "metadata" in p.stderr.lower() or trace in p.stderr, \
        f"the error says neither 'metadata' nor the path:\n{p.stderr[-2000:]}"
    if cmd == "dump":
        assert not p.stdout.strip()


def test_one_damaged_trace_among_several(shared_traces, tmp_path, run_roscope):
    """ROS 1 folder (kernel + ust) with the UST metadata corrupted: either a
    clear error, or a warning naming it and the kernel trace's events intact."""
    src = os.path.join(shared_traces, "ros1/nodes-pipeline-melodic")
    if not os.path.isdir(src):
        pytest.skip("no ROS 1 trace")
    folder = _copy(src, str(tmp_path / "ros1"))
    ust = oracle.find_traces(os.path.join(folder, "ust"))[0]
    _corrupt_metadata(ust)
    p = run_roscope("dump", folder, timeout=120)
    assert p.returncode >= 0
    assert_clean_stderr(p.stderr, "roscope dump")
    assert os.path.relpath(ust, folder) in p.stderr or ust in p.stderr or "metadata" in p.stderr, \
        f"the damaged trace is not named:\n{p.stderr[-2000:]}"
    if p.returncode == 0:
        kernel = os.path.join(src, "kernel")
        exp = [dict(e, trace="kernel") for e in oracle.Reading(kernel).events()]
        try:
            oracle.compare(exp, oracle.read_dump_lines(p.stdout.splitlines()))
        except oracle.Mismatch as exc:
            pytest.fail(f"kernel events not intact: {exc}", pytrace=False)
