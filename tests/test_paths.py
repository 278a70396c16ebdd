"""Named paths (issue 30): a roscope paths file and CARET's architecture file for CARET's
end-to-end sample give the same path and the same numbers as `flow --from/--to`; the
architecture file's message contexts replace the fallback edges on their nodes; the real
architecture file CARET wrote for its intra-process sample reads; wrong files are exit 1.

The flows' numbers themselves are checked against CARET and babeltrace2 elsewhere
(tests/test_flow*.py); the oracle of the contexts is the file itself (its topics), and
babeltrace2's subscription and publisher names for the sample's nodes.
"""
from __future__ import annotations

import json
import os

import pytest

from tests.support.cli import roscope
from tests.support.shared import TRACES

E2E = os.path.join(TRACES, "ros2", "caret-end-to-end-cyclonedds")
INTRA = os.path.join(TRACES, "ros2", "caret-intra-process-galactic")
HERE = os.path.dirname(os.path.abspath(__file__))
PATHS = os.path.join(HERE, "fixtures", "paths", "caret-end-to-end.paths.yaml")
ARCH = os.path.join(HERE, "fixtures", "paths", "caret-end-to-end.architecture.yaml")
pytestmark = pytest.mark.skipif(not os.path.isdir(E2E), reason="no shared traces")


def flow_json(*args: str) -> dict:
    p = roscope("flow", E2E, "--json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def plain() -> dict:
    return flow_json("--from", "^/topic1$", "--to", "^/topic4$")


def test_a_paths_file_gives_the_path_and_numbers_of_from_to(plain):
    d = flow_json("--paths", PATHS)
    (n,) = d["named_paths"]
    assert n["name"] == "sensor_to_actuator" and n["topics"] == ["/topic1", "/topic2", "/topic3", "/topic4"]
    assert len(plain["paths"]) == 1 and n["paths"] == plain["paths"] and n["other_paths"] == 0
    assert n["summary"]["flows"] == plain["summary"]["flows"] > 30


def test_caret_architecture_file_gives_the_same_path_and_numbers_without_fallback(plain):
    d = flow_json("--paths", ARCH)
    (n,) = d["named_paths"]
    assert d["format"] == "caret" and n["name"] == "target_path"
    (p,) = n["paths"]
    (q,) = plain["paths"]
    assert p["path"] == q["path"] and p["flows"] == q["flows"]
    for k in ("latency", "communication", "idle", "computation"):
        assert p[k] == q[k], k
    # the two message contexts are intra-node edges: the path rests on no fallback edge
    assert q["fallback_edges"] == 2 and p["fallback_edges"] == 0


def test_a_named_path_keeps_only_the_paths_through_its_topics(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("paths:\n  - name: via_drive\n    topics: [/topic1, /drive, /topic4]\n"
                 "  - name: direct\n    topics: [/topic1, /topic4]\n")
    d = flow_json("--paths", f, "--path-name", "via_drive")
    (n,) = d["named_paths"]
    assert n["paths"] == [] and n["other_paths"] == 1  # /drive is a node's input, not on the path from /topic1
    d = flow_json("--paths", f, "--path-name", "direct")
    assert len(d["named_paths"][0]["paths"]) == 1
    p = roscope("flow", E2E, "--paths", f, "--path-name", "nope")
    assert p.returncode == 1 and "no path named 'nope' (paths: via_drive, direct)" in p.stderr


def test_wrong_files_are_exit_1_naming_the_file(tmp_path):
    for text, what in (("paths: [", "not YAML"), ("- 1\n", "not a paths file"),
                       ("paths:\n  - name: x\n    topics: [/a]\n", "at least two topic names"),
                       ("paths:\n  - name: x\n    topics: [/a, /b]\n    callbacks: ['(']\n", "bad regular expression")):
        f = tmp_path / "bad.yaml"
        f.write_text(text)
        p = roscope("flow", E2E, "--paths", f)
        assert p.returncode == 1 and p.stderr.startswith(f"roscope: error: {f}: ") and what in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    assert roscope("flow", E2E, "--paths", PATHS, "--from", "x").returncode == 1


@pytest.mark.skipif(not os.path.isfile(os.path.join(INTRA, "caret-architecture.yaml")), reason="no CARET file")
def test_the_architecture_file_caret_wrote_reads(tmp_path):
    """CARET's own file for its intra-process sample (an older form: each callback's
    topic and the topics it publishes): its contexts, with a named path added."""
    from roscope import paths

    src = open(os.path.join(INTRA, "caret-architecture.yaml")).read()
    f = tmp_path / "arch.yaml"
    f.write_text(src + "named_paths:\n- path_name: loop\n  node_chain:\n  - node_name: /pipe1\n"
                 "    subscribe_topic_name: /topic1\n    publish_topic_name: /topic2\n")
    pf = paths.load(str(f))
    assert pf.format == "caret" and pf.paths[0].topics == ("/topic1", "/topic2")
    assert {(c.node, c.subscribe, c.publish) for c in pf.contexts} == {("/pipe1", "/topic1", "/topic2"),
                                                                        ("/pipe2", "/topic2", "/topic1")}


def test_report_takes_a_paths_file(tmp_path):
    out = tmp_path / "r.html"
    p = roscope("report", E2E, "--paths", ARCH, "-o", out)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "/topic4" in html and "/timer_driven_node timer" in html
