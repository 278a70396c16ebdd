"""roscope.manifest on its own, over directories made here: the manifest of a
recording is found at a trace path or up to three levels above it (a trace
directory inside `roscope record`'s output: OUT/ust/uid/1000/64-bit), and with
`below` inside a folder of several recordings; each file once; an unreadable one
is handed back as its exception, not skipped."""
from __future__ import annotations

import json
import os

from roscope import manifest


def _write(d, doc) -> str:
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, manifest.NAME)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_found_at_the_path_and_up_to_three_levels_above(tmp_path):
    top = _write(tmp_path / "rec", {"record_id": "r1"})
    deep = tmp_path / "rec" / "ust" / "uid" / "1000"
    os.makedirs(deep / "64-bit")
    for d, want in ((tmp_path / "rec", top), (tmp_path / "rec" / "ust", top), (deep, top)):
        assert list(manifest.find([str(d)])) == [(want, {"record_id": "r1"})], d
    # Four levels above: not this trace's.
    assert list(manifest.find([str(deep / "64-bit")])) == []


def test_the_nearest_one_wins_and_each_file_comes_once(tmp_path):
    outer = _write(tmp_path / "a", {"record_id": "outer"})
    inner = _write(tmp_path / "a" / "b", {"record_id": "inner"})
    got = list(manifest.find([str(tmp_path / "a" / "b" / "c"), str(tmp_path / "a" / "b")]))
    assert got == [(inner, {"record_id": "inner"})]
    assert list(manifest.find([str(tmp_path / "a")])) == [(outer, {"record_id": "outer"})]


def test_below_finds_every_recording_inside_a_folder(tmp_path):
    one = _write(tmp_path / "runs" / "one", {"record_id": "one"})
    two = _write(tmp_path / "runs" / "x" / "two", {"record_id": "two"})
    assert list(manifest.find([str(tmp_path / "runs")])) == []
    got = sorted(manifest.find([str(tmp_path / "runs")], below=True))
    assert got == sorted([(one, {"record_id": "one"}), (two, {"record_id": "two"})])


def test_an_unreadable_manifest_is_handed_back_as_its_error(tmp_path):
    bad = _write(tmp_path / "rec", "{not json")
    [(path, err)] = list(manifest.find([str(tmp_path / "rec")]))
    assert path == bad and isinstance(err, ValueError)
    missing = tmp_path / "nothing-here"
    assert list(manifest.find([str(missing)])) == []
