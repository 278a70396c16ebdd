#!/usr/bin/env python3
"""Generate the C glue of roscope's ROS 2 tracer library from a ros2_tracing install's headers.

The pip wheels of ROS 2 (ros-jazzy-tracetools, ros-kilted-tracetools) ship a libtracetools.so
linked against a bundled LTTng-UST of the 2.8 era, which cannot reach an LTTng 2.13 session
daemon. This script reads the wheel's own headers, so that the library built from its output
has exactly the distro's tracepoints and functions:

* ``tracetools/tp_call.h``: the tracepoint definitions (provider ``ros2``), compiled as they are
  against the system's LTTng-UST (its compatibility API);
* ``tracetools/tracetools.h``: the ``_DECLARE_TRACEPOINT(name, args...)`` declarations, from
  which the three functions of each tracepoint are written: ``ros_trace_NAME(args)``,
  ``ros_trace_enabled_NAME()`` and ``ros_trace_do_NAME(args)``. Each function hands the
  tracepoint the parameters its ``TP_ARGS`` in tp_call.h name (``X_arg`` takes parameter
  ``X``; the ones whose names differ, e.g. ``namespace_arg`` for ``node_namespace``, take the
  remaining parameters in order); parameters the tracepoint does not record (such as
  ``rclcpp_publish``'s publisher handle since Humble) are not passed.

Nothing of ros2_tracing's sources is copied: the functions are generated from the declarations,
and the tracepoints come from the installed header at build time.

usage: gen_tracetools.py INCLUDE_DIR OUT.c      (INCLUDE_DIR holds tracetools/tracetools.h)
Prints the distro's tracepoint names, one per line, on stdout.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

TP_EVENT = re.compile(r"TRACEPOINT_EVENT\(\s*TRACEPOINT_PROVIDER\s*,\s*(\w+)\s*,\s*TP_ARGS\((.*?)\)\s*,\s*TP_FIELDS", re.S)
DECL = re.compile(r"_DECLARE_TRACEPOINT\s*\((.*?)\)\s*(?=\n|$)", re.S)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declarations(header: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(event name, [(C parameter declaration, parameter name)])] in the header's order."""
    text = strip_comments(header)
    # Only the declarations after the macro definitions (those are inside #define lines).
    out = []
    for m in DECL.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if text[start:m.start()].strip().startswith("#"):
            continue  # part of a #define
        parts = [" ".join(p.split()) for p in m.group(1).split(",")]
        if not parts or not IDENT.fullmatch(parts[0]) or "__VA_ARGS__" in m.group(1):
            continue
        params = []
        for p in parts[1:]:
            names = IDENT.findall(p)
            if len(names) < 2:
                raise ValueError(f"cannot read the parameter '{p}' of tracepoint {parts[0]}")
            params.append((p, names[-1]))
        out.append((parts[0], params))
    return out


def tp_args(tp_header: str) -> dict[str, list[str]]:
    """{event name: the names of its TP_ARGS, without their ``_arg`` suffix}, from tp_call.h."""
    out = {}
    for m in TP_EVENT.finditer(strip_comments(tp_header)):
        parts = [a.strip() for a in m.group(2).split(",") if a.strip()]
        names = [parts[i] for i in range(1, len(parts), 2)]
        out[m.group(1)] = [n[:-4] if n.endswith("_arg") else n for n in names]
    return out


def call_args(name: str, params: list[str], targs: list[str]) -> list[str]:
    """The parameters a function passes to its tracepoint, in the tracepoint's order."""
    left = [p for p in params if p not in targs]
    unmatched = [a for a in targs if a not in params]
    if unmatched and len(unmatched) != len(left):
        raise ValueError(f"tracepoint {name}: cannot match its TP_ARGS {targs} to the parameters {params}")
    by_pos = dict(zip(unmatched, left))
    return [a if a in params else by_pos[a] for a in targs]


#: The init events: kept by the library for its state dump (roscope_ros2.c), and always
#: "enabled" for the code that asks first (rclcpp names a callback only if its event is on).
INIT_EVENT = re.compile(r"(_init|_callback_added|_callback_register|_link_node|_to_ipb|_to_subscription"
                        r"|_construct_ring_buffer)$")


#: Events whose function first hands its parameters to roscope_ros2_seen_<event> (roscope_ros2.c):
#: the services rcl made, so that a copy of one that rclcpp gives a callback is named
#: (roscope_ros2:service_copy, docs/ros2-pypi.md).
SEEN = ("rcl_service_init", "rclcpp_service_callback_added")


def field_of(decl: str, name: str) -> tuple[str, str]:
    """(the C declaration of a record's copy of parameter `decl`, the statement that fills it
    from the parameter into `r`): strings are duplicated, GIDs copied, the rest kept by value."""
    if "char" in decl and "*" in decl:
        return f"char *{name};", f"r->{name} = strdup({name} ? {name} : \"\");"
    if "uint8_t" in decl and "*" in decl:
        return (f"uint8_t {name}[TRACETOOLS_GID_STORAGE_SIZE];",
                f"if ({name}) memcpy(r->{name}, {name}, TRACETOOLS_GID_STORAGE_SIZE);")
    ctype = decl[: decl.rfind(name)].strip()
    ctype = ctype[len("const "):] if ctype.startswith("const ") and "*" not in ctype else ctype
    return f"{ctype} {name};", f"r->{name} = {name};"


def init_event(name: str, params: list[tuple[str, str]], args: list[str], proto: str) -> list[str]:
    """The three functions of an init event, which also keep a copy of its parameters."""
    fields = [field_of(d, n) for d, n in params]
    strs = [n for d, n in params if "char" in d and "*" in d]
    # The record's key: its handle, and for an event that ties two objects (a callback added
    # to a service, an rclpy subscription to an rcl one) the second too: a service's two
    # callbacks (an action's goal and execute callbacks) are two records.
    key = f"(uint64_t)(uintptr_t){params[0][1]}" if params else "0"
    if len(params) >= 2 and "void" in params[1][0] and "*" in params[1][0]:
        key += f" ^ ((uint64_t)(uintptr_t){params[1][1]} * 0x9E3779B97F4A7C15ull)"
    targs = "".join(", r->" + a for a in args)
    seen = f"roscope_ros2_seen_{name}({', '.join(n for _, n in params)}); " if name in SEEN else ""
    return [
        f"struct rs_{name} {{ struct roscope_ros2_rec h; {' '.join(f for f, _ in fields)} }};",
        f"static void rs_emit_{name}(const struct roscope_ros2_rec *h) {{",
        f"  const struct rs_{name} *r = (const struct rs_{name} *)h; tracepoint(ros2, {name}{targs}); }}",
        f"static void rs_free_{name}(struct roscope_ros2_rec *h) {{",
        f"  struct rs_{name} *r = (struct rs_{name} *)h; {' '.join(f'free(r->{n});' for n in strs)} (void)r; free(h); }}",
        f"static void rs_keep_{name}({proto}) {{",
        f"  struct rs_{name} *r = calloc(1, sizeof *r); if (!r) return;",
        "  " + " ".join(f for _, f in fields),
        f"  roscope_ros2_remember(&r->h, \"{name}\", {key}, rs_emit_{name}, rs_free_{name}); }}",
        *([f"void roscope_ros2_seen_{name}({proto});"] if seen else []),
        f"void ros_trace_{name}({proto}) {{ {seen}tracepoint(ros2, {name}{''.join(', ' + a for a in args)}); "
        f"rs_keep_{name}({', '.join(n for _, n in params)}); }}",
        f"bool ros_trace_enabled_{name}(void) {{ return true; }}",
        f"void ros_trace_do_{name}({proto}) {{ {seen}do_tracepoint(ros2, {name}{''.join(', ' + a for a in args)}); "
        f"rs_keep_{name}({', '.join(n for _, n in params)}); }}",
    ]


def generate(decls, targs: dict[str, list[str]]) -> str:
    lines = [
        "/* Generated by instrument/ros2/gen_tracetools.py from the installed tracetools headers. */",
        "#define TRACEPOINT_CREATE_PROBES",
        "#define TRACEPOINT_DEFINE",
        '#include "tracetools/tp_call.h"',
        "#include <stdbool.h>",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        '#include "tracetools/tracetools.h"',
        '#include "roscope_ros2_dump.h"',
        "",
        "bool ros_trace_compile_status(void) { return true; }",
        "",
    ]
    for name, params in decls:
        if name not in targs:
            raise ValueError(f"tracetools.h declares {name}, which tp_call.h does not define")
        proto = ", ".join(p for p, _ in params) or "void"
        order = call_args(name, [n for _, n in params], targs[name])
        args = "".join(", " + n for n in order)
        if INIT_EVENT.search(name):
            lines += init_event(name, params, order, proto)
            continue
        lines += [
            f"void ros_trace_{name}({proto}) {{ roscope_ros2_check_dump(); tracepoint(ros2, {name}{args}); }}",
            f"bool ros_trace_enabled_{name}(void) {{ return tracepoint_enabled(ros2, {name}); }}",
            f"void ros_trace_do_{name}({proto}) {{ do_tracepoint(ros2, {name}{args}); }}",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    inc, out = Path(argv[1]), Path(argv[2])
    header = inc / "tracetools" / "tracetools.h"
    try:
        decls = declarations(header.read_text())
        header = inc / "tracetools" / "tp_call.h"
        targs = tp_args(header.read_text())
        text = generate(decls, targs)
    except OSError as e:
        print(f"gen_tracetools: {header}: {e.strerror}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"gen_tracetools: {header}: {e}", file=sys.stderr)
        return 1
    if not decls:
        print(f"gen_tracetools: {header}: no _DECLARE_TRACEPOINT declarations found", file=sys.stderr)
        return 1
    out.write_text(text)
    for name, _ in decls:
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
