"""What a data-flow analysis is asked for: one `FlowRequest`, built once (by the
CLI from its arguments, by the report per pair of topics, by the experiment from
a metric, by `roscope trend` from a path metric) and used as it is by every step,
down to the core's search options. Also the defaults it starts from.
"""
from __future__ import annotations

from dataclasses import dataclass

from roscope.choices import DEFINITIONS, FALLBACK_RULE, FALLBACK_RULES, IMPLICIT_DEFAULT, IMPLICIT_MODES, UNCERTAIN_MODES, one_of
from roscope.errors import InputError

# The vocabularies (implicit-dependency modes, fallback rules: which callback pairs of an
# undescribed node get a fallback edge under 'auto', docs/analyses.md; uncertain modes;
# response-time definitions) are roscope.choices', re-exported here for FlowRequest's users.
__all__ = ["FALLBACK_RULE", "FALLBACK_RULES", "IMPLICIT_MODES", "UNCERTAIN_MODES", "FlowRequest"]
#: The default caps (None: no cap). A cap that is reached is said in the summary
#: (`outputs_capped`, `stopped_at`) and in its warnings.
MAX_FLOWS_PER_OUTPUT = 10_000
MAX_FLOWS = 10_000_000
#: A database with more publications than this has its data-flow search run over
#: slices of the model, this many publications each (docs/analyses.md, "Slices"):
#: about a quarter of a million events of trace (bench/scale.py measures the memory it
#: leads to; bench/README.md has the sizes tried).
SLICE_PUBLICATIONS = 25_000
#: How far before (and after) its outputs a slice reaches at first (ns); doubled
#: whenever an output's flows reach further.
SLICE_REACH_NS = 200_000_000
#: DuckDB's budget for `roscope flow` (bytes; `--memory`): with slices, DuckDB's
#: buffers for the result tables are most of what the flow holds, and the per-path
#: statistics fill them. 104 MiB: lower than 128 MiB in the same time, with exact
#: percentiles by `quantile_cont` still (below 100 MiB DuckDB computes them by
#: selection, the same values at more CPU), so that the whole of `roscope flow
#: --from . --to .` stays under 300 MiB (bench/flow_phases.py; figures in bench/README.md).
FLOW_MEMORY = 104 << 20
#: DuckDB's budget during the data-flow search (bytes; at most `--memory`): its
#: queries are small (a slice of the model, lookups), and what DuckDB keeps up to its
#: limit meanwhile is a cache of blocks of the model and of the result tables
#: (nearly all of a 128 MiB budget at the search's peak: bench/flow_phases.py, bench/README.md).
SEARCH_MEMORY = 48 << 20


@dataclass(frozen=True)
class FlowRequest:
    """One data-flow analysis: from topics matching `from_re` to topics matching
    `to_re` (regexes, searched anywhere in the topic name).

    - `implicit`: intra-node dependencies: 'auto' (annotations where a node has
      them, fallback edges elsewhere), 'all' (every pair of callbacks of a node,
      the data-flow paper's fallback), 'annotations' (only annotated links), or
      'none'; `fallback`: which pairs get a fallback edge under 'auto'
      (`FALLBACK_RULES`); `deps`: a dependency file of `roscope deps` (path or
      parsed dict) or a list of (callback_id, callback_id), whose edges replace the
      fallback on the nodes it describes (annotations still win);
    - `uncertain`: 'keep' (flagged in `data_flows.uncertain`, counted in the
      summary) or 'drop' the flows through an intra-node dependency that a race
      makes uncertain (`roscope.overlaps`: a run of the callback depended on
      overlapped, on another thread, the run that depends on it);
    - `exact_links=False` ignores transport links and takes the newest publication
      on the topic (the paper's D_cp); `all_paths` keeps every path of an (input,
      output) message pair, not one flow per pair; `all_steps` keeps the steps of
      every flow, not only of each path's first;
    - `exclude`: regexes of topics and callbacks (roscope.selector's label) no flow may
      pass through;
    - caps (None: no cap): `max_flows_per_output` candidates per output message,
      `max_flows` in all;
    - `slice_publications` (None: the whole model at once) and `reach_ns`: the
      search over slices of the model (docs/analyses.md, "Slices");
    - `store`: store the results in the database (it must be writable);
    - `definition` (with `end` for 'caret'): also each path's response time
      (`roscope.response_time`);
    - `memory`: DuckDB's budget for the database the analysis runs on (bytes;
      None: the opener's default), for whoever opens it.

    Checked when made: a wrong value raises InputError.
    """

    from_re: str
    to_re: str
    implicit: str = IMPLICIT_DEFAULT
    fallback: str = FALLBACK_RULE
    deps: object = None
    uncertain: str = "keep"
    exact_links: bool = True
    all_paths: bool = False
    all_steps: bool = False
    exclude: tuple[str, ...] = ()
    max_flows_per_output: int | None = MAX_FLOWS_PER_OUTPUT
    max_flows: int | None = MAX_FLOWS
    slice_publications: int | None = SLICE_PUBLICATIONS
    reach_ns: int = SLICE_REACH_NS
    store: bool = False
    definition: str | None = None
    end: str | None = None
    memory: int | None = None

    def __post_init__(self):
        if self.exclude is None:
            object.__setattr__(self, "exclude", ())
        elif isinstance(self.exclude, str):
            object.__setattr__(self, "exclude", (self.exclude,))
        else:
            object.__setattr__(self, "exclude", tuple(self.exclude))
        if isinstance(self.deps, list):
            object.__setattr__(self, "deps", tuple(self.deps))
        one_of(self.implicit, IMPLICIT_MODES, "implicit-dependency mode")
        one_of(self.fallback, FALLBACK_RULES, "fallback rule")
        one_of(self.uncertain, UNCERTAIN_MODES, "mode for uncertain flows")
        if self.definition is not None:
            one_of(self.definition, DEFINITIONS, "response-time definition")
        for name in ("max_flows_per_output", "max_flows"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InputError(f"{name} must be a whole number >= 0 (or None for no cap), not {value!r}")
        if self.end and self.definition != "caret":
            raise InputError("--end chooses where a path ends under --definition caret")
