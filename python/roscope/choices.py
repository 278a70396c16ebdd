"""The vocabulary of each option that takes one of a few words, defined once: `roscope flow`'s
argparse choices, a budget's path keys (roscope.check.budgets), `FlowRequest`'s checks and
`roscope.response_time` all read them from here (no module spells a list of its own).

- `IMPLICIT_MODES`, `FALLBACK_RULES`: the data-flow search's intra-node dependency modes
  and fallback rules, the core's own lists (`roscope_flow::Implicit::NAMES`,
  `FallbackRule::NAMES`, exported as `_core.IMPLICIT_MODES`, `_core.FALLBACK_RULES`);
- `UNCERTAIN_MODES`: what is done with the flows a race makes uncertain;
- `DEFINITIONS`, `ENDS`, `CASES`: a path's response-time definitions, where each may end
  (the first is its default) and CARET's cases (`roscope.response_time`);
- `one_of(value, allowed, what)`: the one check and message of a word outside its list.

Base layer: imports nothing above `_core` (which `roscope.version` loads anyway), so a
command's parser takes its choices from here without importing the analyses.
"""
from __future__ import annotations

from roscope import _core
from roscope.errors import InputError

#: Intra-node dependency modes (`--implicit`, a budget's `implicit`, `FlowRequest.implicit`).
IMPLICIT_MODES: tuple[str, ...] = tuple(_core.IMPLICIT_MODES)
IMPLICIT_DEFAULT = "auto"
#: Which callback pairs of an undescribed node get a fallback edge under 'auto' (`--fallback`).
FALLBACK_RULES: tuple[str, ...] = tuple(_core.FALLBACK_RULES)
#: The default rule: two pipelines apart, chosen by the precision and recall measured in
#: bench/flow_truth.py (docs/analyses.md).
FALLBACK_RULE = "pipelines"
#: What is done with the flows a race makes uncertain (`--uncertain`).
UNCERTAIN_MODES = ("keep", "drop")
#: Response-time definitions (`--definition`), and where a path may end under each (`--end`;
#: the first is the default).
DEFINITIONS = ("dataflow", "caret")
ENDS = {"dataflow": ("publish",), "caret": ("callback_start", "callback_end")}
#: The ends a user may choose (`--end`, a budget's `end`): those of the caret definition.
CHOSEN_ENDS = ENDS["caret"]
#: CARET's response-time cases (a budget's `case`; every one in `roscope flow --definition`'s output).
CASES = ("best", "worst", "all", "worst_with_external")
CASE_DEFAULT = "best"


def one_of(value, allowed, what: str):
    """`value` if it is one of `allowed`, else InputError "unknown WHAT 'v' (one of a, b)"."""
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r} (one of {', '.join(allowed)})")
    return value
