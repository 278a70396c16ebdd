"""`roscope deps [-p BUILD_DIR] [-o FILE] SOURCES... [--flags FLAG...]`: intra-node
dependencies from C++ node sources (roscope.deps, docs/deps.md).

The analysis is roscope.deps.analyze (library); this module parses the arguments,
writes the dependency file and shows a summary.
"""
from __future__ import annotations

import argparse
import os
import sys

from roscope import files
from roscope.commands import _common as C
from roscope.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "deps",
        help="intra-node dependencies from C++ node sources (libclang)",
        description="Finds each node's callbacks (roscpp and rclcpp subscriptions, timers, services) in C++ "
        "sources, the state each one reads and writes (member fields, statics and globals, variables lambdas "
        "capture), transitively through the functions it calls, and the publishers it publishes on; callback B "
        "depends on callback A when A writes state that B reads before it publishes. Writes a dependency file "
        "(JSON, docs/deps.md) for `roscope flow --deps`.",
        epilog="Flags come from BUILD_DIR/compile_commands.json (CMake: -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; catkin "
        "and colcon builds pass it on), or from --flags, which comes after roscope's own options: everything after "
        "it is a compiler flag (-I, -D, -std ...) or a source file (an existing .cpp/.hpp ... file that is no "
        "flag's argument); an optional `--` ends the flags. E.g. roscope deps -o deps.json --flags -I include "
        "-std=c++17 src/node.cpp",
    )
    p.add_argument("sources", nargs="*", metavar="SOURCE", help="C++ sources (or headers) of the nodes")
    p.add_argument("-p", "--build-dir", metavar="BUILD_DIR", help="directory holding compile_commands.json")
    p.add_argument("-o", "--output", metavar="FILE", help="write the dependency file (JSON) here (never over an "
                   "existing file without --force)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists (only a regular file)")
    p.add_argument("-j", "--jobs", type=C.int_range(1, 256), default=None, metavar="N",
                   help="parse N sources at a time (default: one per CPU)")
    p.add_argument("--ignore-state", action="append", default=[], metavar="NAME",
                   help="leave the state NAME (as the output names it: g_log, Node::count_; its parts too) out of the "
                        "edges, as bookkeeping; repeatable")
    p.add_argument("--keep-state", action="append", default=[], metavar="NAME",
                   help="count the bookkeeping state NAME that roscope found (a counter every publishing callback of a "
                        "node increments) in the edges after all; repeatable")
    p.add_argument("--flags", nargs=argparse.REMAINDER, default=None, metavar="FLAG",
                   help="compiler flags for every source (last option; see below)")
    C.add_json(p)
    p.set_defaults(func=run)


#: Compiler flags followed by a separate argument.
_FLAG_ARGS = {"-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-D", "-U", "-x", "-Xclang",
              "-MF", "-MT", "-MQ", "-o", "-target", "--sysroot", "-isysroot", "-arch", "-std"}


def _split(args) -> tuple[list[str], list[str] | None]:
    """Sources and compiler flags: after --flags, a `--` ends the flags; without it, a
    word that is not an option's argument and names an existing C/C++ file is a source."""
    from roscope.deps import SOURCE_EXT

    sources = list(args.sources)
    flags = args.flags
    if flags is not None and "--" in flags:
        k = flags.index("--")
        sources += flags[k + 1:]
        flags = flags[:k]
    elif flags:
        kept = []
        for i, f in enumerate(flags):
            prev = flags[i - 1] if i else ""
            if not f.startswith("-") and prev not in _FLAG_ARGS and f.endswith(SOURCE_EXT) and os.path.isfile(f):
                sources.append(f)
            else:
                kept.append(f)
        flags = kept
    if flags is not None and not flags:
        raise InputError("--flags needs at least one compiler flag after it")
    for own in ("-o", "--output", "-p", "--build-dir", "--json", "-j", "--jobs", "--ignore-state", "--keep-state"):
        if flags is not None and any(f == own or f.startswith(own + "=") for f in flags):
            raise InputError(f"{own} is after --flags, so it would be taken as a compiler flag: put roscope's own "
                             "options (-o, -p, -j, --json, --ignore-state, --keep-state) before --flags")
    if not sources:
        raise InputError("no source file given (roscope deps [-p BUILD_DIR] SOURCE... [--flags FLAG...])")
    return sources, flags


def run(args) -> int:
    from roscope import deps

    sources, flags = _split(args)
    inputs = [*sources, *([os.path.join(args.build_dir, "compile_commands.json")] if args.build_dir else [])]
    if args.output is not None:
        files.check(args.output, force=args.force, inputs=inputs, what="dependency file")  # before the analysis

    def progress(source, seconds, errors):
        for e in errors:
            C.warn(f"{e} (the analysis of {source} goes on, but may miss what this error hides)")

    doc = deps.analyze(sources, build_dir=args.build_dir, flags=flags, progress=progress, jobs=args.jobs,
                       ignore_state=args.ignore_state, keep_state=args.keep_state)
    if args.output is not None:
        deps.write(doc, args.output, force=args.force, inputs=inputs)
    for u in doc["undecided"]:
        C.warn(f"{u['at']}: {u['callback']}: {u['state'] or 'callback'}: undecided: {u['why']}")
    for u in doc.get("unseen") or []:
        C.warn(f"{u['at']}: {u['callback']}: publications not seen: {u['why']} (flow --deps keeps the trace's "
               "edges of this callback)")
    C.show(args, doc, lambda d: render(d, args.output, C.TextOut(sys.stdout)))
    return 0


def render(doc: dict, output: str | None, out) -> None:
    w = out.write
    tus = doc["inputs"]["translation_units"]
    w(f"{len(tus)} source file(s) analysed in {doc['inputs']['seconds']:.1f} s\n")
    for node in doc["nodes"]:
        rn = f" ({node['ros_name']})" if node["ros_name"] else ""
        w(f"\n{node['kind']} {node['name']}{rn}\n")
        for cb in node["callbacks"]:
            what = cb["topic"] or cb["topic_expr"] or "?"
            if cb["kind"] == "timer":
                what = C.ms(cb["period_ns"]) + " ms" if cb["period_ns"] is not None else (cb["period_expr"] or "?")
            pubs = sorted({p["topic"] or p["publisher"] or "?" for p in cb["publishes"]})
            many = " (registered in a loop)" if cb["instances"] == "many" else ""
            w(f"  {cb['id']}: {cb['kind']} {what}{many}" + (f" -> publishes {', '.join(pubs)}" if pubs else "") + "\n")
            if cb["reads"]:
                w(f"    reads  {_some(r['state'] for r in cb['reads'])}\n")
            if cb["writes"]:
                w(f"    writes {_some(r['state'] for r in cb['writes'])}\n")
    w(f"\n{len(doc['edges'])} dependency edge(s) (B depends on A: A writes state that B reads before it publishes)\n")
    for e in doc["edges"]:
        flag = "" if e["certain"] else " (rests on an undecided access)"
        w(f"  {e['from']} -> {e['to']}: {_some(e['state'])}{flag}\n")
    books = doc["bookkeeping"]
    if books:
        w(f"\n{len(books)} bookkeeping state(s), left out of the edges (--keep-state NAME counts one):\n")
        for b in books:
            kept = "" if b["left_out"] else " (kept: --keep-state)"
            w(f"  {b['state']}{kept}: {b['why']}\n")
    ignored = doc["inputs"]["ignore_state"]
    if ignored:
        w(f"\nleft out of the edges (--ignore-state): {', '.join(ignored)}\n")
    left = doc["edges_left_out"]
    if left:
        w(f"{len(left)} edge(s) rest on that state alone and are left out, e.g.\n")
        for e in left[:5]:
            w(f"  {e['from']} -> {e['to']}: {_some(e['state'])}\n")
    und = doc["undecided"]
    w(f"\n{len(und)} undecided access(es)\n" if und else "\nno undecided access\n")
    for u in und:
        w(f"  {u['at']}: {u['callback']}: {u['state'] or 'callback'}: {u['why']}\n")
    unseen = doc.get("unseen") or []
    ids = sorted({u["callback"] for u in unseen})
    w(f"\n{len(ids)} callback(s) publish nowhere the analysis can see, but may publish where it cannot "
      "(flow --deps keeps the trace's edges of these)\n" if ids else "\nevery callback's publications are seen\n")
    for u in unseen:
        w(f"  {u['at']}: {u['callback']}: {u['why']}\n")
    for n in doc["notes"]:
        w(f"note: {n}\n")
    if output:
        w(f"\ndependency file written to {output}\n")


def _some(items, n: int = 8) -> str:
    """At most `n` items, then how many more (the JSON has them all)."""
    items = list(items)
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return ", ".join(items[:n]) + more
