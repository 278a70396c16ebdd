"""CARET's own architecture files, as its tools wrote them (issue 41): every one that
caret_analyze's samples have held loads, and on its end-to-end sample the named path of
CARET's `architecture_modified.yaml` (a `path_name_aliases` callback chain, with the
nodes' `variable_passings`) is found with no fallback edge and gives CARET's
response-time numbers.

Where CARET comes from: a clone of tier4/caret_analyze with its history (the samples
were removed from its tree in 2021-12), found at $ROSCOPE_CARET_ANALYZE or else
~/.cache/roscope/caret_analyze.git (`git clone --mirror <caret_analyze> ~/.cache/roscope/caret_analyze.git`);
nothing of CARET is copied into this repository, and without the clone these tests skip
saying so. The shared traces are the samples recorded at caret_analyze 49050db9
(../shared/traces/PROVENANCE.md): the files of that commit describe them.

The oracle of the numbers is independent of roscope: CARET's response time computed from
babeltrace2's events alone by `test_response_time._caret_073` (CARET 0.7.3's rules:
from the input's publication to the start of the actuator's callback that took the
output; an input that reached no output is delayed to the next one; the first output
left out), the same function that checks `flow --from --to --definition caret`. caret_analyze
itself is not on PyPI (`pip index versions caret-analyze`: no distribution) and needs a
ROS 2 workspace (tracetools_analysis), so it is not run here.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess

import pytest
import yaml

from tests.support.shared import TRACES as SHARED_TRACES

E2E = os.path.join(SHARED_TRACES, "ros2", "caret-end-to-end-cyclonedds")
#: caret_analyze's commit whose samples the shared traces are (PROVENANCE.md).
SAMPLES_COMMIT = "49050db90b9846f411972bee4354b35ec9593522"
MODIFIED = "sample/lttng_samples/end_to_end_sample/architecture_modified.yaml"


def _caret_git() -> str:
    d = os.environ.get("ROSCOPE_CARET_ANALYZE") or os.path.expanduser("~/.cache/roscope/caret_analyze.git")
    if not os.path.isdir(d):
        pytest.skip(f"no clone of tier4/caret_analyze at {d} (set ROSCOPE_CARET_ANALYZE, or "
                    "git clone --mirror it to ~/.cache/roscope/caret_analyze.git)")
    return d


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", _caret_git(), *args], capture_output=True, text=True, check=True, timeout=120).stdout


def _architecture_files() -> dict[str, tuple[str, str]]:
    """Every version of every architecture file caret_analyze's history holds:
    blob -> (commit, path)."""
    out: dict[str, tuple[str, str]] = {}
    commit = None
    for line in _git("log", "--all", "--format=commit %H", "--name-only", "--diff-filter=AM", "--",
                     "*architecture*.yaml").splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.strip():
            blob = _git("rev-parse", f"{commit}:{line}").strip()
            out.setdefault(blob, (commit, line))
    return out


def _write(tmp_path, commit: str, path: str):
    f = tmp_path / f"{commit[:8]}-{path.replace('/', '_')}"
    f.write_text(_git("show", f"{commit}:{path}"))
    return f


def test_every_architecture_file_in_caret_analyzes_samples_loads(tmp_path):
    from roscope import paths

    files = _architecture_files()
    # 2021-08 to 2021-10: path_name_alias(es), publish(es), callback_dependencies, variable_passings
    assert len(files) >= 18, files
    forms = collections.Counter()
    for commit, path in sorted(files.values(), key=lambda cp: cp[1]):
        f = _write(tmp_path, commit, path)
        doc = yaml.safe_load(f.read_text())
        forms.update(k for k in doc if doc[k])
        forms.update(k for n in doc["nodes"] for k in n if n[k])
        pf = paths.load(str(f), require_paths=False)
        assert pf.format == "caret", path
        # what the file says, read here from the YAML by hand
        aliases = (doc.get("path_name_aliases") or []) + (doc.get("path_name_alias") or [])
        assert [p.name for p in pf.paths] == [a["path_name"] for a in aliases], path
        passings = {(n["node_name"], v.get("callback_name_write", v.get("callback_name_from")),
                     v.get("callback_name_read", v.get("callback_name_to")))
                    for n in doc["nodes"] for v in (n.get("variable_passings") or []) + (n.get("callback_dependencies") or [])}
        passings = {p for p in passings if "UNDEFINED" not in p}
        assert {(p.write.node, p.write.name, p.read.name) for p in pf.passings} == passings, path
        if not aliases:
            with pytest.raises(Exception, match="names no path"):
                paths.load(str(f))
    for form in ("path_name_alias", "path_name_aliases", "publish", "publishes", "callback_dependencies", "variable_passings"):
        assert forms[form], form


def test_the_end_to_end_path_of_caret_analyzes_own_file(tmp_path):
    """The alias names callbacks; the path's topics, callbacks and end are those of the
    chain (sensor timer -> /topic1 -> filter -> /topic2 -> message_driven (variable
    passing to its /drive callback) -> /topic3 -> timer_driven (to its timer) -> /topic4
    -> the actuator's subscription, where the path ends)."""
    from roscope import paths

    pf = paths.load(str(_write(tmp_path, SAMPLES_COMMIT, MODIFIED)))
    (p,) = pf.paths
    assert (p.name, p.topics, p.end) == ("end_to_end", ("/topic1", "/topic2", "/topic3", "/topic4"),
                                         ("/actuator_dummy_node", "/topic4"))
    assert {(x.write.node, x.write.kind, x.write.topic, x.read.kind, x.read.topic, x.read.period_ns) for x in pf.passings} == {
        ("/message_driven_node", "subscription", "/topic2", "subscription", "/drive", None),
        ("/timer_driven_node", "subscription", "/topic3", "timer", None, 100_000_000)}


@pytest.fixture(scope="module")
def modified(tmp_path_factory):
    if not os.path.isdir(E2E):
        pytest.skip(f"{E2E} is missing")
    return _write(tmp_path_factory.mktemp("caret"), SAMPLES_COMMIT, MODIFIED)


def test_caret_file_on_its_sample_gives_carets_response_times_with_no_fallback_edge(modified, run_roscope):
    from tests.support.caret_paths import _caret_073, _outputs

    p = run_roscope("flow", E2E, "--paths", modified, "--definition", "caret", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    (n,) = d["named_paths"]
    assert (d["format"], n["name"], n["end"], n["other_paths"]) == ("caret", "end_to_end", ["/actuator_dummy_node", "/topic4"], 0)
    (path,) = n["paths"]
    assert path["fallback_edges"] == 0 and path["flows"] > 30
    assert "/message_driven_node subscription(/topic2) -> /message_driven_node subscription(/drive)" in path["path"]
    (r,) = n["response_times"]
    assert (r["definition"], r["end"], r["end_node"], r["end_topic"]) == ("caret", "callback_start", "/actuator_dummy_node", "/topic4")
    expected = _caret_073(*_outputs(E2E, "/topic1"))
    for case, values in expected.items():
        st = r["cases"][case]
        assert (st["count"], st["min_ns"], st["max_ns"]) == (len(values), values[0], values[-1]), case
        assert st["mean_ns"] == pytest.approx(sum(values) / len(values), abs=1e-3), case
    # CARET's figures for this recording (docs/analyses.md): best 35, worst 35, all 70
    assert {c: len(v) for c, v in expected.items()} == {"best": 35, "worst": 35, "all": 70}


def test_without_its_variable_passings_the_path_rests_on_fallback_edges(modified, tmp_path, run_roscope):
    """The file's variable passings are what replaces the fallback: without them, the
    same path rests on two fallback edges (message_driven's and timer_driven's)."""
    doc = yaml.safe_load(modified.read_text())
    for node in doc["nodes"]:
        node.pop("variable_passings", None)
    f = tmp_path / "no-passings.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = run_roscope("flow", E2E, "--paths", f, "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    (path,) = json.loads(p.stdout)["named_paths"][0]["paths"]
    assert path["fallback_edges"] == 2


def _modern(doc: dict) -> dict:
    """The same system in the form CARET writes since 0.2 (`Architecture.export`):
    named_paths with a node_chain, callback_type, publishes with callback_names,
    subscribes, callback_groups, executors, and message contexts (callback_chain
    through the variable passings), built here from the older file."""
    nodes = []
    for n in doc["nodes"]:
        cbs = [{"callback_name": c["callback_name"], "callback_type": c["type"], "symbol": c["symbol"],
                **({"topic_name": c["topic_name"]} if "topic_name" in c else {"period_ns": c["period_ns"]})}
               for c in n["callbacks"]]
        node = {"node_name": n["node_name"],
                "callback_groups": [{"callback_group_type": "mutually_exclusive", "callback_group_name": n["node_name"] + "/group_0",
                                     "callback_names": [c["callback_name"] for c in cbs]}],
                "callbacks": cbs,
                "variable_passings": n.get("variable_passings") or [{"callback_name_write": "UNDEFINED", "callback_name_read": "UNDEFINED"}],
                "publishes": [{"topic_name": p["topic_name"], "callback_names": [p["callback_name"]]} for p in n.get("publishes") or []],
                "subscribes": [{"topic_name": c["topic_name"], "callback_name": c["callback_name"]} for c in cbs if "topic_name" in c]}
        if n.get("variable_passings"):
            (v,) = n["variable_passings"]
            sub = next(c["topic_name"] for c in cbs if c["callback_name"] == v["callback_name_write"])
            node["message_contexts"] = [{"context_type": "callback_chain", "subscription_topic_name": sub,
                                         "publisher_topic_name": n["publishes"][0]["topic_name"]}]
        nodes.append(node)
    chain = [("/sensor_dummy_node", "UNDEFINED", "/topic1"), ("/filter_node", "/topic1", "/topic2"),
             ("/message_driven_node", "/topic2", "/topic3"), ("/timer_driven_node", "/topic3", "/topic4"),
             ("/actuator_dummy_node", "/topic4", "UNDEFINED")]
    return {"named_paths": [{"path_name": "end_to_end", "node_chain": [
                {"node_name": a, "subscribe_topic_name": s, "publish_topic_name": p} for a, s, p in chain]}],
            "executors": [{"executor_type": "single_threaded_executor", "executor_name": "executor_0",
                           "callback_group_names": [n["node_name"] + "/group_0" for n in nodes]}],
            "nodes": nodes}


def test_the_form_caret_writes_now_gives_the_same_path_and_numbers(modified, tmp_path, run_roscope):
    from roscope import paths

    f = tmp_path / "modern.yaml"
    f.write_text(yaml.safe_dump(_modern(yaml.safe_load(modified.read_text())), sort_keys=False))
    pf = paths.load(str(f))
    assert [(e["name"], len(e["callback_groups"])) for e in pf.executors] == [("executor_0", 6)]
    assert len(pf.callback_groups) == 6 and len(pf.passings) == 2 and pf.contexts == [
        paths.Context("/filter_node", "/topic1", "/topic2"), paths.Context("/message_driven_node", "/drive", "/topic3")]
    runs = [run_roscope("flow", E2E, "--paths", x, "--definition", "caret", "--json", timeout=300) for x in (modified, f)]
    assert all(p.returncode == 0 for p in runs), [p.stderr for p in runs]
    old, new = (json.loads(p.stdout)["named_paths"][0] for p in runs)
    assert new["topics"] == old["topics"] and new["paths"] == old["paths"] and new["paths"][0]["fallback_edges"] == 0
    # the node_chain names no end callback: every receiver of /topic4 ends it (here the actuator alone)
    assert new["response_times"] == old["response_times"]


@pytest.mark.parametrize("edit, where", [
    (lambda d: d.update(named_pathz=[]), "named_pathz: unknown key"),
    (lambda d: d["nodes"][2].update(variable_passing=[]), "nodes[2] (/message_driven_node).variable_passing: unknown key"),
    (lambda d: d["nodes"][2]["variable_passings"][0].update(callback_name_read="subscription_callback_9"),
     "nodes[2] (/message_driven_node).variable_passings[0].callback_name_read: 'subscription_callback_9': no callback"),
    (lambda d: d["nodes"][0]["callbacks"][0].update(type="action_callback"),
     "nodes[0] (/actuator_dummy_node).callbacks[0].callback_type: 'action_callback': not one of"),
    (lambda d: d["nodes"][3]["callbacks"][1].update(period_ns="100ms"),
     "nodes[3] (/timer_driven_node).callbacks[1].period_ns: a positive whole number"),
    (lambda d: d["nodes"][2].update(message_contexts=[{"context_type": "latest", "subscription_topic_name": "/topic2",
                                                        "publisher_topic_name": "/topic3"}]),
     "nodes[2] (/message_driven_node).message_contexts[0].context_type: 'latest': not one of"),
    (lambda d: d["path_name_aliases"][0]["callbacks"].append("/nowhere/timer_callback_0"),
     "path_name_aliases[0].callbacks: '/nowhere/timer_callback_0': no callback"),
])
def test_wrong_content_is_exit_1_naming_the_file_and_the_key(modified, tmp_path, run_roscope, edit, where):
    doc = yaml.safe_load(modified.read_text())
    edit(doc)
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = run_roscope("flow", E2E, "--paths", f, timeout=120)
    assert p.returncode == 1 and p.stderr.startswith(f"roscope: error: {f}: {where}"), p.stderr
    assert "Traceback" not in p.stderr
