"""Compiler flags for `roscope deps`: a build's compile_commands.json (CMake,
catkin, colcon), flags given on the command line, and the arguments libclang gets
for each source."""
from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence

from roscope.errors import InputError
from roscope.processes import group

#: Extensions of C/C++ headers and sources (what `roscope deps --flags` takes as a source).
HEADER_EXT = (".h", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".inl")
SOURCE_EXT = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C") + HEADER_EXT

_DROP_WITH_ARG = {"-o", "-MF", "-MT", "-MQ", "-Xclang"}
_DROP = {"-c", "-MD", "-MMD", "-M", "-MM", "-MP", "-pipe", "-S", "-E"}
_PATH_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-isysroot", "--sysroot")


def _clean_args(argv: list[str], directory: str, source: str | None) -> list[str]:
    """Compiler arguments for libclang: no compiler, output, dependency files or the
    source itself; relative include paths made absolute (against `directory`)."""
    out: list[str] = []
    i = 0
    src = os.path.realpath(os.path.join(directory, source)) if source else None
    while i < len(argv):
        a = argv[i]
        i += 1
        if a in _DROP_WITH_ARG:
            i += 1
            continue
        if a in _DROP or (len(a) > 3 and a[:3] in ("-MF", "-MT", "-MQ")):
            continue
        if src and not a.startswith("-") and os.path.realpath(os.path.join(directory, a)) == src:
            continue
        for flag in _PATH_FLAGS:
            if a == flag and i < len(argv):
                out += [a, os.path.normpath(os.path.join(directory, argv[i]))]
                i += 1
                break
            if a.startswith(flag) and len(a) > len(flag) and flag in ("-I", "-isystem", "-iquote", "-idirafter"):
                out.append(flag + os.path.normpath(os.path.join(directory, a[len(flag):])))
                break
        else:
            out.append(a)
    return out


_INTERNAL_INCLUDE: dict[str, str | None] = {}


def _compiler_include(compiler: str) -> str | None:
    """The compiler's own header directory (stddef.h, stdarg.h ...): the libclang
    wheel ships none, so it is added after the system directories."""
    if compiler not in _INTERNAL_INCLUDE:
        d = None
        try:
            p = group.output("compiler", [compiler, "-print-file-name=include"], timeout=20)
            cand = p.stdout.strip()
            if p.returncode == 0 and os.path.isfile(os.path.join(cand, "stddef.h")):
                d = cand
        except OSError:
            pass
        _INTERNAL_INCLUDE[compiler] = d
    return _INTERNAL_INCLUDE[compiler]


class CompileDatabase:
    """compile_commands.json of a build directory (CMake, catkin, colcon)."""

    def __init__(self, build_dir: str):
        path = os.path.join(build_dir, "compile_commands.json")
        if not os.path.isdir(build_dir):
            raise InputError(f"{build_dir}: not a directory (-p wants the build directory holding compile_commands.json)")
        paths = [path]
        if not os.path.isfile(path):
            # a colcon or catkin_tools workspace's build/: one database per package, in build/<package>/
            paths = sorted(os.path.join(build_dir, d, "compile_commands.json") for d in os.listdir(build_dir)
                           if os.path.isfile(os.path.join(build_dir, d, "compile_commands.json")))
        if not paths:
            raise InputError(f"{path}: not found; configure the build with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "
                             "(catkin: catkin config --cmake-args -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; colcon: "
                             "colcon build --cmake-args -DCMAKE_EXPORT_COMPILE_COMMANDS=ON), or give --flags")
        self.path = path
        self.entries: dict[str, tuple[str, list[str]]] = {}
        for p in paths:
            self._read(p)

    def _read(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as f:
                entries = json.load(f)
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # (json.JSONDecodeError is a ValueError)
            raise InputError(f"{path}: not a valid compilation database: {exc}") from None
        except RecursionError:
            raise InputError(f"{path}: not a valid compilation database: nested too deeply") from None
        if not isinstance(entries, list) or not entries:
            raise InputError(f"{path}: no compile commands in it")
        for k, e in enumerate(entries):
            directory, file, argv = _entry(path, k, e)
            file = os.path.realpath(os.path.join(directory, file))
            self.entries[file] = (directory, argv)

    def lookup(self, source: str) -> tuple[list[str], str, str] | None:
        """(arguments, compiler, how) for `source`: its own entry, else (a header, or a
        file the build does not compile) the entry of the nearest file in the tree."""
        real = os.path.realpath(source)
        hit = self.entries.get(real)
        how = "compile_commands.json"
        if hit is None:
            def shared(f: str) -> int:
                return len(os.path.commonpath([f, real]))
            near = max(self.entries, key=lambda f: (shared(f), -len(f)))
            hit = self.entries[near]
            how = f"compile_commands.json (flags of {near})"
            directory, argv = hit
            return _clean_args(argv[1:], directory, near), argv[0], how
        directory, argv = hit
        return _clean_args(argv[1:], directory, real), argv[0], how


def tu_args(source: str, compdb: CompileDatabase | None, flags: Sequence[str] | None) -> tuple[list[str], str]:
    compiler = "c++"
    how = "--flags"
    args: list[str] = []
    if compdb is not None:
        hit = compdb.lookup(source)
        args, compiler, how = hit
        if flags:
            how += " + --flags"
    if flags:
        args = args + _clean_args(list(flags), os.getcwd(), None)
    if source.endswith(HEADER_EXT) and "-x" not in args:
        args = ["-x", "c++"] + args
    if not any(a.startswith("-std=") for a in args):
        args.append("-std=c++17")
    inc = _compiler_include(compiler) or _compiler_include("c++")
    if inc:
        args += ["-idirafter", inc]
    return args, how


def _entry(path: str, k: int, e) -> tuple[str, str, list[str]]:
    """(directory, file, arguments) of entry `k` of the database `path`, checked: an
    InputError names the file, the entry and what is wrong."""
    where = f"{path}: entry {k}"
    if not isinstance(e, dict) or "file" not in e or "directory" not in e or not ("arguments" in e or "command" in e):
        raise InputError(f"{where} lacks 'file', 'directory' or 'command'/'arguments'")
    for key in ("directory", "file"):
        v = e[key]
        if not isinstance(v, str) or not v or "\0" in v:
            raise InputError(f"{where}: '{key}' must be a path (a non-empty string), not {_what(v)}")
    if "arguments" in e:
        argv = e["arguments"]
        if not isinstance(argv, list) or not all(isinstance(a, str) and "\0" not in a for a in argv):
            raise InputError(f"{where}: 'arguments' must be a list of strings, not {_what(argv)}")
    else:
        command = e["command"]
        if not isinstance(command, str) or "\0" in command:
            raise InputError(f"{where}: 'command' must be a string, not {_what(command)}")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InputError(f"{where}: 'command' cannot be split into words as a shell does ({exc})") from None
    if not argv:
        raise InputError(f"{where}: an empty command")
    return e["directory"], e["file"], argv


def _what(v) -> str:
    """A JSON value's kind, for a message (never the value: it may be anything)."""
    if isinstance(v, str):
        return "an empty string" if not v else "a string with a NUL character"
    if isinstance(v, list):
        bad = next((a for a in v if not isinstance(a, str) or "\0" in a), None)
        return f"a list holding {_what(bad)}" if v else "an empty list"
    return {dict: "an object", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}.get(
        type(v), type(v).__name__)

