"""`roscope deps`' analysis of C++ sources (docs/deps.md, "How it works").

1. Per translation unit (in worker processes), every function defined in the
   user's files gets a summary (`unit`, `function`): the accesses it makes
   itself, as paths rooted at ``this``, at a parameter, or at a variable, the
   publications it makes, and the calls it makes to other user functions with
   the paths bound to ``this`` and to each parameter. Calls into libraries
   (system headers) are decided on the spot from the callee's declaration.
2. Over all translation units together, summaries are closed transitively
   (`closure`), bound to each callback's object, and compared (`document`).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence

from roscope.deps.compiledb import CompileDatabase, tu_args
from roscope.deps.cxx import clear_caches
from roscope.deps.document import build
from roscope.deps.libclang import cindex, diagnostics, parse
from roscope.deps.unit import Unit, UnitData
from roscope.deps.workers import run_units
from roscope.errors import InputError


def analyze_one(source: str, args: list[str], how: str) -> tuple[UnitData, dict]:
    """Phase 1 of one translation unit (in a worker: `workers.run_units`)."""
    ci = cindex()
    t0 = time.perf_counter()
    tu = parse(ci, ci.Index.create(), source, args)
    errors = diagnostics(ci, tu, source)
    unit = Unit(tu)
    try:
        unit.run()
    finally:
        clear_caches()
    info = {"source": source, "flags_from": how, "errors": errors, "seconds": round(time.perf_counter() - t0, 3)}
    return UnitData(unit), info


def analyze(sources: Sequence[str], build_dir: str | None = None, flags: Sequence[str] | None = None,
            progress=None, jobs: int | None = None, ignore_state: Sequence[str] = (),
            keep_state: Sequence[str] = ()) -> dict:
    """The dependency document of the C++ `sources` (see docs/deps.md).

    Flags come from `build_dir`/compile_commands.json (a source without an entry,
    e.g. a header, takes the flags of the nearest file the build compiles), and/or
    from `flags` (added to every source). Sources are parsed in `jobs` worker
    processes (default: one per CPU; `workers`). Edges leave out bookkeeping state
    (`bookkeeping`: a counter every publishing callback of a node increments) but
    what `keep_state` names, and the state `ignore_state` names (displayed names, as
    in the document: `g_msg_seq`, `Node::log_`; a name covers its parts). Raises InputError on a missing file, a bad
    compilation database or a source that does not parse."""
    cindex()
    if not sources:
        raise InputError("no source file given")
    for s in sources:
        if os.path.isdir(s):
            raise InputError(f"{s}: is a directory; give the C++ sources in it (e.g. {os.path.join(s, '*.cpp')}) and "
                             "their flags with -p BUILD_DIR or --flags")
        if not os.path.isfile(s):
            raise InputError(f"{s}: no such file")
    db = CompileDatabase(build_dir) if build_dir is not None else None
    work = [(s, *tu_args(s, db, flags)) for s in sources]
    jobs = max(1, min(len(work), jobs if jobs is not None else (os.cpu_count() or 1)))
    t_all = time.perf_counter()
    results: dict[str, tuple[UnitData, dict]] = {}

    def done(source: str, result: tuple[UnitData, dict]) -> None:
        results[source] = result
        if progress is not None:
            progress(source, result[1]["seconds"], result[1]["errors"])

    run_units(analyze_one, work, jobs, done)
    units = [results[s][0] for s, _a, _h in work]
    doc = build(units, ignore_state, keep_state)
    doc["inputs"] = {"sources": list(sources), "build_dir": build_dir, "flags": list(flags or []),
                     "ignore_state": list(ignore_state), "keep_state": list(keep_state),
                     "translation_units": [results[s][1] for s, _a, _h in work],
                     "seconds": round(time.perf_counter() - t_all, 3)}
    return doc
