"""libclang for `roscope deps`: loading it (an optional dependency: a clear error
when it is missing), the few C functions its Python bindings do not wrap, parsing
a translation unit, and demangling C++ names as libstdc++ does."""
from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence

from roscope.errors import InputError, UserError
from roscope.extras import install_hint

#: clang.cindex once `cindex()` loaded it (the other modules of the package read it as `libclang.CI`).
CI = None


def cindex():
    """clang.cindex with the few C functions its Python bindings do not wrap."""
    global CI
    if CI is not None:
        return CI
    try:
        import clang.cindex as ci
    except ImportError:
        raise UserError(f"roscope deps needs libclang's Python package: install it with "
                        f"`{install_hint('clang')}` (scripts/setup.sh does)") from None
    try:
        lib = ci.conf.lib
    except Exception as exc:  # LibclangError: the shared library cannot be loaded
        raise UserError(f"roscope deps: libclang cannot be loaded: {exc}") from None
    spelling = [ci.Cursor]
    for name, args, res in (
        ("clang_getCursorBinaryOperatorKind", spelling, ctypes.c_int),
        ("clang_getCursorUnaryOperatorKind", spelling, ctypes.c_int),
        ("clang_getBinaryOperatorKindSpelling", [ctypes.c_int], ci._CXString),
        ("clang_getUnaryOperatorKindSpelling", [ctypes.c_int], ci._CXString),
        ("clang_Cursor_hasVarDeclGlobalStorage", spelling, ctypes.c_int),
        ("clang_getOverriddenCursors", [ci.Cursor, ctypes.POINTER(ctypes.POINTER(ci.Cursor)),
                                        ctypes.POINTER(ctypes.c_uint)], None),
        ("clang_disposeOverriddenCursors", [ctypes.POINTER(ci.Cursor)], None),
    ):
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res
        if res is ci._CXString:
            fn.errcheck = ci._CXString.from_result
    CI = ci
    return ci


def binop(c) -> str:
    lib = CI.conf.lib
    return lib.clang_getBinaryOperatorKindSpelling(lib.clang_getCursorBinaryOperatorKind(c))


def unop(c) -> str:
    lib = CI.conf.lib
    return lib.clang_getUnaryOperatorKindSpelling(lib.clang_getCursorUnaryOperatorKind(c))


def overridden(c) -> list:
    ci = CI
    arr = ctypes.POINTER(ci.Cursor)()
    n = ctypes.c_uint(0)
    ci.conf.lib.clang_getOverriddenCursors(c, ctypes.byref(arr), ctypes.byref(n))
    out = [ci.Cursor.from_buffer_copy(arr[i]) for i in range(n.value)]
    if n.value:
        ci.conf.lib.clang_disposeOverriddenCursors(arr)
    return out



def global_storage(c) -> int:
    """1 when the variable `c` has global storage (a global, a static), 0 when not, -1 when not a variable."""
    return CI.conf.lib.clang_Cursor_hasVarDeclGlobalStorage(c)


def specialized_template(c):
    """The template a specialization or instantiation `c` comes from, or None."""
    return CI.conf.lib.clang_getSpecializedCursorTemplate(c)


def overloaded_decls(ov) -> list:
    """The candidates of an overloaded declaration reference (a call in a template)."""
    lib = CI.conf.lib
    return [lib.clang_getOverloadedDecl(ov, i) for i in range(lib.clang_getNumOverloadedDecls(ov))]


_DEMANGLE = None


def demangle(names: Sequence[str]) -> list[str]:
    """Itanium C++ names demangled as libstdc++'s abi::__cxa_demangle does (the
    form roscope's ROS 1 tracer and ros2_tracing record); a name that does not
    demangle is returned as it is."""
    global _DEMANGLE
    if _DEMANGLE is None:
        path = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
        try:
            lib = ctypes.CDLL(path)
            fn = lib.__cxa_demangle
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            fn.restype = ctypes.c_void_p
            free = ctypes.CDLL(None).free
            free.argtypes = [ctypes.c_void_p]
            _DEMANGLE = (fn, free)
        except (OSError, AttributeError):
            _DEMANGLE = False
    out = []
    for name in names:
        if not _DEMANGLE or not name:
            out.append(name)
            continue
        fn, free = _DEMANGLE
        status = ctypes.c_int(0)
        p = fn(name.encode(), None, None, ctypes.byref(status))
        if status.value != 0 or not p:
            out.append(name)
            continue
        out.append(ctypes.string_at(p).decode("utf-8", "replace"))
        free(p)
    return out


def parse(ci, index, source: str, args: list[str]):
    try:
        return index.parse(source, args=args)
    except ci.TranslationUnitLoadError as exc:
        raise InputError(f"{source}: libclang could not parse it ({exc})") from None


def diagnostics(ci, tu, source: str) -> list[str]:
    out = []
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error:
            f = d.location.file.name if d.location.file else source
            out.append(f"{f}:{d.location.line}:{d.location.column}: {d.spelling}")
            if d.severity == ci.Diagnostic.Fatal:
                raise InputError(f"{out[-1]} (while parsing {source}: give the build directory with -p or the "
                                 "include paths and defines with --flags)")
    return out
