"""commands/_common.py's typed `Inputs` and the one verb wrapper `session` (issue 40): what
opening reads from the arguments, and what a verb's failure after opening shows (the trace's
warnings, then the error). Quick tier: the shared pingpong trace, loaded in memory."""
from __future__ import annotations

import argparse
import os

import pytest
from roscope import cli
from roscope.commands import _common as C

SHARED = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                       "..", "shared", "traces"))
PINGPONG = os.path.join(SHARED, "ros2", "pingpong-rolling-2021")
#: pingpong's one load warning (its publishers' and subscriptions' init events predate the session).
WARNING = "8 objects are known only by their handles"

pytestmark = pytest.mark.skipif(not os.path.isdir(PINGPONG), reason=f"the shared traces are not at {SHARED}")


def test_inputs_of_the_arguments_of_every_verb():
    args = cli.build_parser(["why"]).parse_args(["why", PINGPONG, "--no-heuristics", "--memory", "512M"])
    assert C.Inputs.of(args) == C.Inputs(paths=(PINGPONG,), memory=512 << 20, heuristics=False)
    # a verb without --merge/--run/--no-sync (check) gets their defaults; changes replace fields
    bare = argparse.Namespace(inputs=["b.yaml", PINGPONG], run="r1", runs="a*", memory=None, no_heuristics=False,
                              no_sync=True)
    got = C.Inputs.of(bare, paths=[PINGPONG], runs=None)
    assert got == C.Inputs(paths=(PINGPONG,), run="r1", sync=False) and not got.merge


def test_a_failure_after_opening_reports_the_trace_then_raises(capsys):
    args = cli.build_parser(["why"]).parse_args(["why", PINGPONG, "--no-progress"])
    with pytest.raises(ZeroDivisionError):
        with C.session(args, "why") as s:
            db = s.open_inputs()
            assert s.db is db
            1 / 0  # noqa: B018
    assert WARNING in capsys.readouterr().err
    # on success the verb reports them itself, after its output: the session says nothing
    with C.session(args, "why") as s:
        s.open_inputs()
    assert capsys.readouterr().err == ""
    # a failure before anything is open reports nothing (no database)
    with pytest.raises(RuntimeError), C.session(args, "why"):
        raise RuntimeError("x")
    assert capsys.readouterr().err == ""
