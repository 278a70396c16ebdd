"""Intra-node dependencies from C++ node sources (`roscope deps`, docs/deps.md).

`analyze(sources, build_dir=None, flags=None)` parses C++ ROS 1 (roscpp) and ROS 2
(rclcpp) node sources with libclang (the ``libclang`` Python package), finds every
callback a node registers (subscriptions, timers, services), the state each one
reads and writes -- member fields, static and global variables, variables that
lambdas capture by reference, and what a pointer captured or passed by value points
to -- transitively through the functions it calls, and the publishers it publishes
on. Callback B depends on callback A when A writes state that B reads before B
publishes (or before B writes state that a publishing callback reads). The result
is a JSON document (`write` writes it atomically; its format is in docs/deps.md).

`trace_edges(db, deps)` matches the document's callbacks to a trace's callbacks
(by demangled symbol, else by node and topic or period) and returns the
dependency edges as pairs of `callbacks.callback_id`, with a report of the match.

How it works, in two phases:

1. Per translation unit, every function defined in the user's files (not in a
   system header) gets a summary: the accesses it makes itself, as paths rooted
   at ``this``, at a parameter, or at a variable (global, static, captured), the
   publications it makes, and the calls it makes to other user functions with
   the paths bound to ``this`` and to each parameter. Calls into libraries
   (system headers: the C++ standard library, Boost, ROS) are decided on the
   spot from the callee's declaration: a const method reads its object, a
   container mutation or another non-const method writes it, element accessors
   (``operator[]``, ``at``, ``front``, ``->``, ``*`` ...) give the element to
   the expression around them, a non-const reference or pointer parameter is a
   write and a value or const reference parameter a read.
2. Over all translation units together, summaries are closed transitively
   (a call to a function defined in another analysed file is resolved there; a
   function defined nowhere is decided from its declaration), bound to each
   callback's object, and compared.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterable, Sequence

from roscope.errors import InputError, UserError
from roscope.files import atomic_write

FORMAT = "roscope-deps"
FORMAT_VERSION = 1

_HEADER_EXT = (".h", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".inl")
_SOURCE_EXT = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C") + _HEADER_EXT

# ---------------------------------------------------------------- libclang

_CI = None


def _cindex():
    """clang.cindex with the few C functions its Python bindings do not wrap."""
    global _CI
    if _CI is not None:
        return _CI
    try:
        import clang.cindex as ci
    except ImportError:
        raise UserError("roscope deps needs libclang's Python package: install it with "
                        "`pip install libclang` (scripts/setup.sh does)") from None
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
    _CI = ci
    return ci


def _binop(c) -> str:
    lib = _CI.conf.lib
    return lib.clang_getBinaryOperatorKindSpelling(lib.clang_getCursorBinaryOperatorKind(c))


def _unop(c) -> str:
    lib = _CI.conf.lib
    return lib.clang_getUnaryOperatorKindSpelling(lib.clang_getCursorUnaryOperatorKind(c))


def _overridden(c) -> list:
    ci = _CI
    arr = ctypes.POINTER(ci.Cursor)()
    n = ctypes.c_uint(0)
    ci.conf.lib.clang_getOverriddenCursors(c, ctypes.byref(arr), ctypes.byref(n))
    out = [ci.Cursor.from_buffer_copy(arr[i]) for i in range(n.value)]
    if n.value:
        ci.conf.lib.clang_disposeOverriddenCursors(arr)
    return out


# ---------------------------------------------------------------- demangling

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


# ---------------------------------------------------------------- compile flags

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
            p = subprocess.run([compiler, "-print-file-name=include"], capture_output=True, text=True, timeout=20)
            cand = p.stdout.strip()
            if p.returncode == 0 and os.path.isfile(os.path.join(cand, "stddef.h")):
                d = cand
        except (OSError, subprocess.SubprocessError):
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
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not a valid compilation database: {exc}") from None
        if not isinstance(entries, list) or not entries:
            raise InputError(f"{path}: no compile commands in it")
        for k, e in enumerate(entries):
            if not isinstance(e, dict) or "file" not in e or "directory" not in e or not (
                    "arguments" in e or "command" in e):
                raise InputError(f"{path}: entry {k} lacks 'file', 'directory' or 'command'/'arguments'")
            argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
            directory = e["directory"]
            file = os.path.realpath(os.path.join(directory, e["file"]))
            self.entries[file] = (directory, [str(a) for a in argv])

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


# ---------------------------------------------------------------- classification of types and names

# Objects that are not data: ROS handles, locks, streams (their "writes" are I/O or
# synchronisation, never a value another callback reads).
_NOT_STATE = {
    "ros::NodeHandle", "ros::Publisher", "ros::Subscriber", "ros::Timer", "ros::WallTimer", "ros::SteadyTimer",
    "ros::ServiceServer", "ros::ServiceClient", "ros::CallbackQueue", "ros::AsyncSpinner", "ros::MultiThreadedSpinner",
    "rclcpp::Node", "rclcpp::Publisher", "rclcpp::PublisherBase", "rclcpp::Subscription", "rclcpp::SubscriptionBase",
    "rclcpp::TimerBase", "rclcpp::WallTimer", "rclcpp::GenericTimer", "rclcpp::Service", "rclcpp::ServiceBase",
    "rclcpp::Client", "rclcpp::ClientBase", "rclcpp::CallbackGroup", "rclcpp::Clock", "rclcpp::Logger",
    "rclcpp::Executor", "rclcpp_lifecycle::LifecycleNode", "rclcpp_lifecycle::LifecyclePublisher",
    "std::mutex", "std::recursive_mutex", "std::timed_mutex", "std::recursive_timed_mutex", "std::shared_mutex",
    "std::shared_timed_mutex", "std::condition_variable", "std::condition_variable_any", "std::lock_guard",
    "std::unique_lock", "std::scoped_lock", "std::shared_lock", "std::once_flag",
    "boost::mutex", "boost::recursive_mutex", "boost::shared_mutex", "boost::timed_mutex", "boost::condition_variable",
    "boost::lock_guard", "boost::unique_lock", "boost::shared_lock", "boost::detail::spinlock",
    "std::basic_ostream", "std::basic_istream", "std::basic_iostream", "std::basic_ofstream", "std::basic_ifstream",
    "std::basic_fstream", "std::basic_ostringstream", "std::basic_stringstream", "std::basic_ios", "std::ios_base",
    "std::basic_streambuf", "_IO_FILE", "FILE",
}
_NOT_STATE_NS = ("ros::console::", "rclcpp::node_interfaces::", "rclcpp::executors::", "rcutils_", "rcl_")
_NOT_STATE_VARS = re.compile(r"^(__rosconsole|__rcutils|__rclcpp|rosconsole_)")
_SMART = {"std::shared_ptr", "std::unique_ptr", "std::weak_ptr", "std::optional", "std::auto_ptr",
          "boost::shared_ptr", "boost::scoped_ptr", "boost::weak_ptr", "boost::intrusive_ptr", "boost::optional",
          "std::reference_wrapper", "boost::reference_wrapper"}
_MAPS = {"std::map", "std::unordered_map", "std::multimap", "boost::unordered_map", "boost::container::flat_map"}
#: Methods that give an element (or the pointee) without changing the object.
_ELEMENT = {"operator[]", "at", "front", "back", "data", "begin", "end", "rbegin", "rend", "cbegin", "cend",
            "find", "lower_bound", "upper_bound", "equal_range", "top"}
_DEREF = {"operator*", "operator->", "get", "value", "lock"}
#: Non-const methods that read the object as well as change it.
_READ_WRITE = {"operator++", "operator--", "operator+=", "operator-=", "operator*=", "operator/=", "operator%=",
               "operator|=", "operator&=", "operator^=", "operator<<=", "operator>>=", "fetch_add", "fetch_sub",
               "fetch_and", "fetch_or", "fetch_xor", "exchange", "compare_exchange_weak", "compare_exchange_strong",
               "pop", "pop_front", "pop_back", "swap", "splice", "merge", "sort", "unique", "reverse", "remove",
               "remove_if", "extract", "append", "increment", "decrement"}
#: Names of methods known not to change their object (for calls on dependent types in templates).
_READ_ONLY = {"size", "empty", "length", "c_str", "count", "contains", "capacity", "max_size", "load",
              "operator==", "operator!=", "operator<", "operator>", "operator<=", "operator>=", "operator bool",
              "operator!", "toSec", "toNSec", "seconds", "nanoseconds", "getTopic", "getNamespace", "get_name",
              "get_logger", "now", "use_count", "has_value", "str", "substr", "compare", "key", "second", "first"}
_MUTATORS = {"push_back", "push_front", "emplace_back", "emplace_front", "emplace", "insert", "erase", "clear",
             "resize", "reserve", "assign", "reset", "store", "operator=", "set", "fill", "shrink_to_fit",
             "emplace_hint", "try_emplace", "insert_or_assign", "push"}
_PASS_THROUGH = {"std::move", "std::forward", "std::ref", "std::cref", "std::as_const", "boost::ref",
                 "boost::cref", "std::addressof", "std::move_if_noexcept"}
_BIND = {"std::bind", "boost::bind", "std::bind_front"}
#: Library functions that give (a part of) their argument: std::get<1>(t) is t's element, not a write of t.
_PART_OF = {"std::get", "std::get_if", "boost::get", "std::begin", "std::end", "std::cbegin", "std::cend",
            "std::rbegin", "std::rend", "std::data"}
#: Algorithms that only read through the iterators they are given (others, e.g. std::sort, write through them).
_READ_ONLY_ALGOS = {f"std::{n}" for n in (
    "find", "find_if", "find_if_not", "find_end", "find_first_of", "count", "count_if", "accumulate", "reduce",
    "all_of", "any_of", "none_of", "min_element", "max_element", "minmax_element", "equal", "mismatch", "distance",
    "lower_bound", "upper_bound", "binary_search", "equal_range", "search", "search_n", "adjacent_find", "is_sorted",
    "is_sorted_until", "includes", "inner_product", "lexicographical_compare", "next", "prev", "is_permutation",
    "transform_reduce", "partial_sum", "adjacent_difference")}

# (class or namespace, name) -> (kind, argument index of the topic, service name or period)
_ROS1_API = {"subscribe": ("subscription", 0), "createTimer": ("timer", 0), "createWallTimer": ("timer", 0),
             "createSteadyTimer": ("timer", 0), "advertiseService": ("service", 0), "advertise": ("publisher", 0)}
_ROS2_API = {"create_subscription": ("subscription", 0), "create_wall_timer": ("timer", 0),
             "create_timer": ("timer", 0), "create_service": ("service", 0), "create_publisher": ("publisher", 0),
             "create_generic_subscription": ("subscription", 0), "create_generic_publisher": ("publisher", 0)}
# rclcpp's free functions take the node first.
_ROS2_FREE = {"create_subscription": ("subscription", 1), "create_timer": ("timer", 2),
              "create_wall_timer": ("timer", 0), "create_publisher": ("publisher", 1), "create_service": ("service", 2)}
_ROS2_CLASSES = ("rclcpp::Node", "rclcpp_lifecycle::LifecycleNode")

_SYSTEM_DIRS = ("/usr/include/", "/usr/lib/", "/opt/ros/", "/usr/local/include/")


def _system_path(path: str) -> bool:
    return path.startswith(_SYSTEM_DIRS)


_QUAL: dict = {}
_TYPES: dict = {}
_FWD: dict = {}


def _qualname(c) -> str:
    """'ns::Class::name' of a declaration (inline namespaces like std::__cxx11 left out)."""
    try:
        return _QUAL[c]
    except KeyError:
        pass
    q = _QUAL[c] = _qualname_uncached(c)
    return q


def _qualname_uncached(c) -> str:
    ci = _CI
    parts = []
    while c is not None and c.kind != ci.CursorKind.TRANSLATION_UNIT:
        name = c.spelling
        if c.kind == ci.CursorKind.NAMESPACE and (name.startswith("__") or not name):
            pass
        elif name:
            parts.append(name)
        c = c.semantic_parent
    return "::".join(reversed(parts))


def _strip_ref(t):
    ci = _CI
    while t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        t = t.get_pointee()
    return t


def _type_qual(t) -> str:
    """Qualified name of a (class) type's declaration, or the canonical spelling."""
    ci = _CI
    t = _strip_ref(t).get_canonical()
    d = t.get_declaration()
    if d is not None and d.kind != ci.CursorKind.NO_DECL_FOUND:
        return _qualname(d)
    return t.spelling.replace("const ", "").replace("volatile ", "").strip()


def _not_state_name(q: str) -> bool:
    return q in _NOT_STATE or q.startswith(_NOT_STATE_NS)


def _unwrap(t, depth: int = 0):
    """The type under references, pointers, arrays and smart pointers."""
    ci = _CI
    t = _strip_ref(t).get_canonical()
    if depth > 4:
        return t
    if t.kind == ci.TypeKind.POINTER:
        return _unwrap(t.get_pointee(), depth + 1)
    if t.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        return _unwrap(t.element_type, depth + 1)
    if _type_qual(t) in _SMART and t.get_num_template_arguments() > 0:
        return _unwrap(t.get_template_argument_type(0), depth + 1)
    return t


def _not_state_type(t) -> bool:
    if t is None:
        return False
    key = ("ns", t.get_canonical().spelling)
    hit = _TYPES.get(key)
    if hit is None:
        try:
            hit = _not_state_name(_type_qual(_unwrap(t)))
        except Exception:
            hit = False
        _TYPES[key] = hit
    return hit


def _smart_qual(q: str) -> bool:
    """A smart pointer class, or one of libstdc++'s bases of one."""
    return q in _SMART or q.startswith(("std::__shared_ptr", "std::__weak_ptr", "std::__uniq_ptr", "std::_Optional",
                                        "boost::optional_detail"))


def _pointer_like(t) -> bool:
    ci = _CI
    t = _strip_ref(t).get_canonical()
    if t.kind == ci.TypeKind.POINTER:
        return True
    q = _type_qual(t)
    return _smart_qual(q) or "iterator" in q.rsplit("::", 1)[-1].lower()


# ---------------------------------------------------------------- paths
#
# A path is a tuple: (root, step, step, ...). Roots: ("this",), ("param", i),
# ("var", usr) (a global, static or captured variable), ("obj", class) (a
# callback's object, after binding). Steps: (".", field), ("[", index), ("*",)
# (what a pointer or smart pointer points to), ("^", base class). Index: None
# (unknown), ("k", constant), ("p", parameter), ("c", capture usr: one value per
# registration of a lambda).
#
# A reference ("ref") is (path, addr, cd): addr says the expression's value is
# the address of path (a pointer to it); cd ("copy depth") says the expression
# is a copy of the object at path[:cd]: only accesses through a "*" after cd
# reach shared state.

_STAR = ("*",)
_ELEM = ("[", None)


def _ok(path, cd) -> bool:
    return cd is None or _STAR in path[cd:]


class _Unit:
    """One translation unit: summaries of the user's functions, registrations,
    publisher creations, names."""

    def __init__(self, tu, sources: dict[str, bytes] | None = None):
        self.tu = tu
        self.summaries: dict[str, dict] = {}
        self.building: set[str] = set()
        self.regs: list[dict] = []
        self.pubs: list[dict] = []
        self.names: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.overrides: dict[str, list[str]] = {}
        self.inits: dict[str, str] = {}  # "class|member" or var usr -> first string literal of its initializer
        self.texts: dict[str, bytes] = sources if sources is not None else {}
        self.user_cache: dict[str, bool] = {}

    # -- files
    def is_user(self, c) -> bool:
        loc = c.location
        f = loc.file
        if f is None:
            return False
        name = f.name
        hit = self.user_cache.get(name)
        if hit is None:
            hit = not loc.is_in_system_header and not _system_path(os.path.realpath(name))
            self.user_cache[name] = hit
        return hit

    def text(self, c) -> str:
        ext = c.extent
        f = ext.start.file
        if f is None:
            return ""
        data = self.texts.get(f.name)
        if data is None:
            try:
                with open(f.name, "rb") as fh:
                    data = fh.read()
            except OSError:
                data = b""
            self.texts[f.name] = data
        return re.sub(r"\s+", " ", data[ext.start.offset:ext.end.offset].decode("utf-8", "replace")).strip()

    @staticmethod
    def loc(c) -> str:
        loc = c.location
        return f"{loc.file.name if loc.file else '?'}:{loc.line}:{loc.column}"

    def name_var(self, c) -> None:
        usr = c.get_usr()
        if usr in self.names:
            return
        ci = _CI
        parent = c.semantic_parent
        if parent is not None and parent.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
                                                  ci.CursorKind.CONSTRUCTOR, ci.CursorKind.FUNCTION_TEMPLATE,
                                                  ci.CursorKind.DESTRUCTOR):
            self.names[usr] = f"{_qualname(parent)}()::{c.spelling}"
        else:
            self.names[usr] = _qualname(c) or c.spelling
        storage = _CI.conf.lib.clang_Cursor_hasVarDeclGlobalStorage(c) if c.kind == ci.CursorKind.VAR_DECL else 0
        if storage == 1:
            self.kinds[usr] = "static" if parent is not None and parent.kind not in (
                ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE) else "global"
        else:
            self.kinds[usr] = "captured"

    # -- walking declarations
    def run(self) -> None:
        ci = _CI
        K = ci.CursorKind
        funcs = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.FUNCTION_TEMPLATE,
                 K.CONVERSION_FUNCTION}
        scopes = {K.NAMESPACE, K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE, K.LINKAGE_SPEC, K.UNION_DECL,
                  K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.UNEXPOSED_DECL}
        stack = [c for c in self.tu.cursor.get_children()]
        todo = []
        while stack:
            c = stack.pop()
            if not self.is_user(c):
                continue
            if c.kind in scopes:
                stack.extend(c.get_children())
            elif c.kind in funcs:
                if c.kind == K.CXX_METHOD and c.is_virtual_method():
                    for o in _overridden(c):
                        self.overrides.setdefault(o.get_usr(), []).append(c.get_usr())
                if c.is_definition():
                    todo.append(c)
        todo.sort(key=lambda c: (c.location.file.name, c.location.offset))
        for c in todo:
            self.summary(c)

    def summary(self, c) -> dict | None:
        usr = c.get_usr()
        if usr in self.summaries:
            return self.summaries[usr]
        if usr in self.building:
            return None
        self.building.add(usr)
        try:
            fn = _Fn(self, c)
            fn.run()
            s = fn.result()
        finally:
            self.building.discard(usr)
        self.summaries[usr] = s
        return s

    def lambda_summary(self, lam, outer: _Fn) -> dict:
        usr = self.lambda_usr(lam)
        if usr not in self.summaries:
            fn = _Fn(self, lam, outer=outer)
            fn.run()
            self.summaries[usr] = fn.result()
        return self.summaries[usr]

    def declaration(self, ref):
        """A function the user declares (not a library's) whose definition is not in this unit."""
        if ref is None:
            return None
        tmpl = _CI.conf.lib.clang_getSpecializedCursorTemplate(ref)
        cand = tmpl if tmpl is not None else ref
        if not self.is_user(cand):
            return None
        parent = cand.semantic_parent
        if parent is not None and parent.location.file is not None and cand.location.file is not None and (
                parent.location.offset == cand.location.offset):
            return None  # implicit (copy constructor, assignment ...): as a library's
        return cand

    @staticmethod
    def lambda_usr(lam) -> str:
        loc = lam.location
        return f"lambda:{loc.file.name if loc.file else '?'}:{loc.offset}"

    def definition(self, ref):
        """The user definition (template pattern) behind a called declaration, or None."""
        if ref is None:
            return None
        tmpl = _CI.conf.lib.clang_getSpecializedCursorTemplate(ref)
        cand = tmpl if tmpl is not None else ref
        d = cand.get_definition()
        if d is None:
            return cand if self.is_user(cand) and _has_body(cand) else None
        return d if self.is_user(d) and _has_body(d) else None


# ---------------------------------------------------------------- one function


class _Fn:
    """Walks one function body (or a lambda's) and records its summary."""

    def __init__(self, unit: _Unit, cursor, outer: _Fn | None = None):
        ci = _CI
        self.u = unit
        self.c = cursor
        self.K = ci.CursorKind
        self.is_lambda = cursor.kind == ci.CursorKind.LAMBDA_EXPR
        self.usr = unit.lambda_usr(cursor) if self.is_lambda else cursor.get_usr()
        self.events: list[tuple] = []
        self.calls: list[dict] = []
        self.returns: list[tuple] = []
        self.alias: dict[str, list[tuple]] = {}
        self.n = 0
        self.loops: list[str] = []
        self.dest: list[list[tuple]] = []
        self.params: dict[str, int] = {}
        self.byval: set[int] = set()
        self.param_names: list[str] = []
        self.param_usrs: list[str] = []
        self.caps: dict[str, str] = {}
        self.cap_default = None
        self.outer = outer
        params = [ch for ch in cursor.get_children() if ch.kind == ci.CursorKind.PARM_DECL]
        for i, p in enumerate(params):
            self.params[self._pkey(p)] = i
            self.param_names.append(p.spelling)
            self.param_usrs.append(p.get_usr() or f"{self.usr}#param{i}")
            if _strip_ref(p.type).kind == p.type.kind and p.type.kind not in (
                    ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
                self.byval.add(i)
        if self.is_lambda:
            self._captures()
            self.has_this = outer is not None and outer.has_this and (self.cap_this or self.cap_default is not None)
            self.cls = outer.cls if outer is not None else None
            self.ret_ref = False
        else:
            k = cursor.kind
            self.has_this = k in (ci.CursorKind.CXX_METHOD, ci.CursorKind.CONSTRUCTOR, ci.CursorKind.DESTRUCTOR,
                                  ci.CursorKind.CONVERSION_FUNCTION) and not (
                k == ci.CursorKind.CXX_METHOD and cursor.is_static_method())
            if k == ci.CursorKind.FUNCTION_TEMPLATE:
                parent = cursor.semantic_parent
                self.has_this = parent is not None and parent.kind in (
                    ci.CursorKind.CLASS_DECL, ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_TEMPLATE) and not (
                    cursor.is_static_method())
            parent = cursor.semantic_parent
            self.cls = _qualname(parent) if parent is not None and parent.kind in (
                ci.CursorKind.CLASS_DECL, ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_TEMPLATE,
                ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION) else None
            rt = cursor.result_type
            self.ret_ref = rt.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE,
                                       ci.TypeKind.POINTER)

    @staticmethod
    def _pkey(p) -> str:
        return f"{p.location.offset}:{p.spelling}"

    # -- lambdas
    def _captures(self) -> None:
        toks = [t.spelling for t in self.c.get_tokens()]
        self.cap_this = False
        ext = self.c.extent
        self.lam_range = (ext.start.offset, ext.end.offset)
        if not toks or toks[0] != "[":
            return
        depth, items, cur = 0, [], []
        for t in toks[1:]:
            if t in ("(", "[", "{", "<"):
                depth += 1
            elif t in (")", "]", "}", ">"):
                if depth == 0 and t == "]":
                    break
                depth -= 1
            if t == "," and depth == 0:
                items.append(cur)
                cur = []
            else:
                cur.append(t)
        if cur:
            items.append(cur)
        for it in items:
            if it == ["&"]:
                self.cap_default = "&"
            elif it == ["="]:
                self.cap_default = "="
            elif it in (["this"], ["*", "this"]):
                self.cap_this = True
            elif it and it[0] == "&" and len(it) > 1:
                self.caps[it[1]] = "&"
            elif it:
                self.caps[it[0]] = "=" if len(it) == 1 or it[1] != "=" else "init"

    def _outside(self, decl) -> bool:
        """A variable declared outside this lambda (so captured)."""
        if not self.is_lambda:
            return False
        f = decl.location.file
        mine = self.c.location.file
        if f is None or mine is None or f.name != mine.name:
            return True
        off = decl.location.offset
        return not self.lam_range[0] <= off < self.lam_range[1]

    def _in_captures(self, decl) -> bool:
        """An init-capture ([id = expr]): declared inside the capture list."""
        if not self.is_lambda:
            return False
        off = decl.location.offset
        body_start = next((ch.extent.start.offset for ch in self.c.get_children()
                           if ch.kind == self.K.COMPOUND_STMT), self.lam_range[1])
        first_param = next((ch.extent.start.offset for ch in self.c.get_children()
                            if ch.kind == self.K.PARM_DECL), body_start)
        return self.lam_range[0] <= off < min(body_start, first_param)

    # -- results
    def result(self) -> dict:
        return {"usr": self.usr, "name": self._name(), "loc": self.u.loc(self.c), "events": self.events,
                "calls": self.calls, "returns": self.returns, "params": self.param_names,
                "param_usrs": self.param_usrs, "byval": sorted(self.byval), "cls": self.cls}

    def _name(self) -> str:
        if self.is_lambda:
            outer = self.outer._name() if self.outer is not None else "?"
            return f"{outer}::lambda@{self.c.location.line}"
        return _qualname(self.c)

    def tick(self) -> tuple:
        self.n += 1
        return (self.n,)

    def record(self, kind: str, refs: Iterable[tuple], c, ctype=None, why: str | None = None) -> None:
        """Accesses `kind` ('r', 'w', 'rw') of the objects `refs` designate."""
        if ctype is not None and _not_state_type(ctype):
            return
        loc = self.u.loc(c)
        for path, addr, cd in refs:
            if addr or not _ok(path, cd):
                continue
            for k in ("r", "w") if kind == "rw" else (kind,):
                self.events.append((k, path, loc, self.tick(), tuple(self.loops), why))

    def run(self) -> None:
        K = self.K
        kids = list(self.c.get_children())
        if self.c.kind == K.CONSTRUCTOR:
            self._ctor_inits(kids)
        for ch in kids:
            if ch.kind == K.COMPOUND_STMT:
                self.stmt(ch)
            elif ch.kind == K.CXX_TRY_STMT:
                self.stmt(ch)

    def _ctor_inits(self, kids) -> None:
        """Member and base initializers: publisher creations and node names."""
        K = self.K
        for i, ch in enumerate(kids):
            if ch.kind not in (K.MEMBER_REF, K.TYPE_REF, K.TEMPLATE_REF) or i + 1 >= len(kids):
                continue
            init = kids[i + 1]
            if not init.kind.is_expression():
                continue
            if ch.kind == K.MEMBER_REF:
                key = f"{self.cls}|{ch.spelling}"
                self.dest.append([((("this",), (".", ch.spelling)), False, None)])
                self.value(init)
                self.dest.pop()
            else:
                key = f"{self.cls}|base"
                self.value(init)
            lit = self._first_literal(init)
            if lit is not None:
                self.u.inits.setdefault(key, lit)

    def _first_literal(self, c) -> str | None:
        if c.kind == self.K.STRING_LITERAL:
            return _string_literal(c.spelling)
        for ch in c.get_children():
            s = self._first_literal(ch)
            if s is not None:
                return s
        return None

    # -- statements
    def stmt(self, c) -> None:
        K = self.K
        k = c.kind
        if k == K.COMPOUND_STMT:
            for ch in c.get_children():
                self.stmt(ch)
        elif k == K.DECL_STMT:
            for ch in c.get_children():
                if ch.kind == K.VAR_DECL:
                    self.vardecl(ch)
                elif ch.kind == K.UNEXPOSED_DECL and self._bindings(ch):
                    self.decomposition(ch)
        elif k == K.CXX_FOR_RANGE_STMT:
            self.loop(c, self._range_for)
        elif k in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT):
            self.loop(c, self._control)
        elif k in (K.IF_STMT, K.SWITCH_STMT, K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT, K.CXX_TRY_STMT,
                   K.CXX_CATCH_STMT, K.ASM_STMT, K.MS_ASM_STMT):
            self._control(c)
        elif k == K.RETURN_STMT:
            for ch in c.get_children():
                r = self.refs(ch)
                if self.ret_ref:
                    self.returns.extend(self.ptr_value(r, ch) if ch.type.get_canonical().kind == _CI.TypeKind.POINTER
                                        else r)
                else:
                    self.record("r", r, ch, ch.type)
        elif k.is_expression():
            self.refs(c)
        else:
            for ch in c.get_children():
                if ch.kind.is_statement() or ch.kind.is_expression():
                    self.stmt(ch)

    def _control(self, c) -> None:
        for ch in c.get_children():
            if ch.kind.is_expression():
                self.value(ch)
            elif ch.kind == self.K.VAR_DECL:
                self.vardecl(ch)
            else:
                self.stmt(ch)

    def loop(self, c, body) -> None:
        self.loops.append(f"{self.usr}@{c.location.offset}")
        try:
            body(c)
        finally:
            self.loops.pop()

    def _range_for(self, c) -> None:
        kids = list(c.get_children())
        var = next((ch for ch in kids if ch.kind in (self.K.VAR_DECL, self.K.UNEXPOSED_DECL)), None)
        rng = next((ch for ch in kids if ch.kind.is_expression()), None)
        rrefs = self.refs(rng) if rng is not None else []
        elems = []
        for p, a, cd in rrefs:
            if a:
                elems.append((p, False, cd))
            else:
                elems.append((p + (_ELEM,), False, cd))
        if var is not None:
            t = var.type.get_canonical()
            names = self._bindings(var) or [self._vkey(var)]
            if t.kind in (_CI.TypeKind.LVALUEREFERENCE, _CI.TypeKind.RVALUEREFERENCE):
                for n in names:
                    self.alias[n] = elems
            else:
                self.record("r", elems, var, var.type)
                if _pointer_like(var.type):
                    for n in names:
                        self.alias[n] = [(p, a, len(p)) for p, a, cd in elems]
        body = kids[-1] if len(kids) >= 3 else None  # (the loop variable, the range, the body)
        if body is not None and body is not rng:
            self.stmt(body)

    def _bindings(self, c) -> list[str]:
        """The names bound by a structured binding declaration (auto& [a, b] = ...)."""
        if c.kind != self.K.UNEXPOSED_DECL:
            return []
        return [self._vkey(ch) for ch in c.get_children() if ch.kind == self.K.UNEXPOSED_DECL]

    @staticmethod
    def _vkey(c) -> str:
        return c.get_usr() or f"{c.location.offset}:{c.spelling}"

    def decomposition(self, c) -> None:
        """auto& [a, b] = x: a and b stand for (parts of) x; by value, x is read."""
        init = None
        for ch in c.get_children():
            if ch.kind.is_expression():
                init = ch
        if init is None:
            return
        t = c.type.get_canonical()
        if t.kind in (_CI.TypeKind.LVALUEREFERENCE, _CI.TypeKind.RVALUEREFERENCE):
            r = self.refs(init)
            for n in self._bindings(c):
                self.alias[n] = r
        else:
            self.value(init)

    def vardecl(self, c) -> None:
        ci = _CI
        init = None
        for ch in c.get_children():
            if ch.kind.is_expression():
                init = ch
        usr = c.get_usr()
        if init is None:
            return
        if c.storage_class == ci.StorageClass.STATIC:
            self.value(init)  # runs once: reads, but no write of the static
            return
        t = c.type.get_canonical()
        if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
            self.alias[usr] = self.refs(init)
        elif t.kind == ci.TypeKind.POINTER:
            self.alias[usr] = self.ptr_value(self.refs(init), init)
        elif _pointer_like(t):
            self.dest.append([((("var", usr),), False, None)])
            try:
                r = self.refs(init)
            finally:
                self.dest.pop()
            self.record("r", r, init, init.type)
            self.alias[usr] = [(p, a, cd if cd is not None else (None if a else len(p))) for p, a, cd in r]
        else:
            self.dest.append([((("var", usr),), False, None)])
            try:
                self.value(init)
            finally:
                self.dest.pop()

    # -- expressions
    def value(self, c) -> list[tuple]:
        """Evaluates `c` and reads the object it designates (an rvalue use)."""
        r = self.refs(c)
        inner = _strip_parens(c)
        if inner.kind in (self.K.BINARY_OPERATOR, self.K.COMPOUND_ASSIGNMENT_OPERATOR) and _binop(inner).endswith("="):
            if _binop(inner) not in ("==", "!=", "<=", ">="):
                return r
        if inner.kind == self.K.UNARY_OPERATOR and _unop(inner) in ("++", "--"):
            return r
        self.record("r", r, c, c.type)
        return r

    def ptr_value(self, refs, c) -> list[tuple]:
        """The pointer value of an expression designating a pointer object (or an array)."""
        out = []
        is_array = c is not None and c.type.get_canonical().kind in (_CI.TypeKind.CONSTANTARRAY,
                                                                     _CI.TypeKind.INCOMPLETEARRAY)
        for p, a, cd in refs:
            if a:
                out.append((p, True, cd))
            elif is_array:
                out.append((p + (_ELEM,), True, cd))
            else:
                if c is not None:
                    self.record("r", [(p, False, cd)], c, c.type)
                out.append((p + (_STAR,), True, cd))
        return out

    def pointee(self, refs, c) -> list[tuple]:
        return [(p, False, cd) for p, a, cd in self.ptr_value(refs, c)]

    def this_refs(self) -> list[tuple]:
        return [((("this",),), False, None)] if self.has_this else []

    def refs(self, c) -> list[tuple]:
        """What the expression `c` designates (as refs), recording the accesses of its
        sub-expressions; the consumer records the access to the object itself."""
        if c is None:
            return []
        K = self.K
        k = c.kind
        if k in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR, K.CXX_CONST_CAST_EXPR,
                 K.CXX_REINTERPRET_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR):
            kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
            if len(kids) == 1:
                return self.refs(kids[0])
            if kids and k == K.CXX_FUNCTIONAL_CAST_EXPR:
                for ch in kids:
                    self.value(ch)
                return []
            out = []
            for ch in kids:
                out += self.refs(ch)
            return out
        if k == K.DECL_REF_EXPR:
            return self.declref(c)
        if k == K.MEMBER_REF_EXPR:
            return self.member(c)
        if k == K.CXX_THIS_EXPR:
            return [((("this",),), True, None)] if self.has_this else []
        if k == K.CALL_EXPR:
            return self.call(c)
        if k == K.ARRAY_SUBSCRIPT_EXPR:
            return self.subscript(c)
        if k == K.UNARY_OPERATOR:
            return self.unary(c)
        if k in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
            return self.binary(c)
        if k == K.CONDITIONAL_OPERATOR:
            kids = list(c.get_children())
            if len(kids) == 3:
                self.value(kids[0])
                return self.refs(kids[1]) + self.refs(kids[2])
        if k == K.LAMBDA_EXPR:
            self.inline_lambda(c)
            return []
        if k == K.INIT_LIST_EXPR:
            return self.init_list(c)
        if k == K.CXX_DELETE_EXPR:
            for ch in c.get_children():
                self.record("w", self.pointee(self.refs(ch), ch), ch)
            return []
        if k in (K.STRING_LITERAL, K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.CHARACTER_LITERAL, K.CXX_BOOL_LITERAL_EXPR,
                 K.CXX_NULL_PTR_LITERAL_EXPR):
            return []
        for ch in c.get_children():
            if ch.kind.is_expression():
                self.value(ch)
            elif ch.kind.is_statement():
                self.stmt(ch)
        return []

    def declref(self, c) -> list[tuple]:
        K = self.K
        ref = c.referenced
        if ref is None:
            return []
        if ref.kind == K.VAR_DECL:
            usr = ref.get_usr()
            if usr in self.alias:
                return list(self.alias[usr])
            if _CI.conf.lib.clang_Cursor_hasVarDeclGlobalStorage(ref) == 1:
                if not self.u.is_user(ref) or _NOT_STATE_VARS.match(ref.spelling) or _not_state_type(ref.type):
                    return []
                self.u.name_var(ref)
                return [((("var", usr),), False, None)]
            if self.is_lambda and self._outside(ref):
                return self._captured(ref)
            return []
        if ref.kind == K.PARM_DECL:
            usr = ref.get_usr()
            if usr and usr in self.alias:
                return list(self.alias[usr])
            i = self.params.get(self._pkey(ref))
            if i is None:
                return self._captured(ref) if self.is_lambda else []
            return [((("param", i),), False, 1 if i in self.byval else None)]
        if ref.kind == K.UNEXPOSED_DECL:  # a structured binding
            return list(self.alias.get(self._vkey(ref), []))
        if ref.kind == K.FIELD_DECL:  # a member named inside a lambda without this-> (clang shows MEMBER_REF_EXPR)
            return [(r[0] + ((".", ref.spelling),), False, None) for r in self.this_refs()]
        return []

    def _captured(self, ref) -> list[tuple]:
        name = ref.spelling
        mode = self.caps.get(name, self.cap_default)
        if mode is None:
            mode = "&"
        usr = ref.get_usr() or f"{self.usr}#{name}"
        self.u.name_var(ref)
        return [((("var", usr),), False, None if mode == "&" else 1)]

    def member(self, c) -> list[tuple]:
        K = self.K
        ref = c.referenced
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        base = kids[0] if kids else None
        if ref is not None and ref.kind == K.VAR_DECL:  # static data member
            if base is not None:
                self.refs(base)
            if not self.u.is_user(ref) or _not_state_type(ref.type):
                return []
            self.u.name_var(ref)
            return [((("var", ref.get_usr()),), False, None)]
        if ref is not None and ref.kind in (K.CXX_METHOD, K.CONVERSION_FUNCTION, K.FUNCTION_TEMPLATE):
            return self.refs(base) if base is not None else self.this_refs()
        name = ref.spelling if ref is not None else None
        arrow = False
        if name is None or not name:
            toks = [t.spelling for t in c.get_tokens()]
            name = toks[-1] if toks else "?"
            arrow = len(toks) >= 2 and toks[-2] == "->"
        elif base is not None:
            arrow = base.type.get_canonical().kind == _CI.TypeKind.POINTER or base.kind == K.CXX_THIS_EXPR
        if base is None:
            brefs = self.this_refs()
        else:
            brefs = self.refs(base)
            if arrow or base.kind == K.CXX_THIS_EXPR:
                brefs = self.pointee(brefs, base)
        return [(p + ((".", name),), False, cd) for p, a, cd in brefs if not a]

    def _index(self, c):
        """The index class of a subscript: constant, parameter, per-registration capture, or None."""
        c = _strip_parens(c)
        K = self.K
        if c.kind == K.INTEGER_LITERAL:
            toks = [t.spelling for t in c.get_tokens()]
            try:
                return ("k", int(re.sub(r"[uUlL]+$", "", toks[0]), 0)) if toks else None
            except ValueError:
                return None
        if c.kind == K.DECL_REF_EXPR:
            ref = c.referenced
            if ref is None:
                return None
            if ref.kind == K.ENUM_CONSTANT_DECL:
                return ("k", ref.spelling)
            if ref.kind == K.PARM_DECL:
                i = self.params.get(self._pkey(ref))
                if i is not None:
                    return ("p", i)
            if self.is_lambda and (self._in_captures(ref) or (
                    self._outside(ref) and self.caps.get(ref.spelling, self.cap_default) in ("=", "init"))):
                return ("c", ref.get_usr() or ref.spelling)
        return None

    def subscript(self, c) -> list[tuple]:
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) != 2:
            return []
        base, idx = kids
        self.value(idx)
        elems = self.ptr_value(self.refs(base), _strip_parens(base))
        step = ("[", self._index(idx))
        out = []
        for p, _a, cd in elems:
            if p and p[-1] == _ELEM:
                p = p[:-1]
            out.append((p + (step,), False, cd))
        return out

    def unary(self, c) -> list[tuple]:
        op = _unop(c)
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if not kids:
            return []
        e = kids[0]
        if op == "&":
            return [(p, True, cd) if not a else (p, a, cd) for p, a, cd in self.refs(e)]
        if op == "*":
            return self.pointee(self.refs(e), e)
        if op in ("++", "--"):
            r = self.refs(e)
            self.record("rw", r, c, e.type)
            return r
        self.value(e)
        return []

    def binary(self, c) -> list[tuple]:
        op = _binop(c)
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) != 2:
            for ch in kids:
                self.value(ch)
            return []
        lhs, rhs = kids
        if op == "=":
            left = self.refs(lhs)
            self.dest.append(left)
            try:
                right = self.refs(rhs)
            finally:
                self.dest.pop()
            self.assign(lhs, left, rhs, right, c)
            return left
        if c.kind == self.K.COMPOUND_ASSIGNMENT_OPERATOR:
            left = self.refs(lhs)
            self.value(rhs)
            self.record("rw", left, c, lhs.type)
            return left
        if op in ("+", "-") and c.type.get_canonical().kind == _CI.TypeKind.POINTER:
            for side in (lhs, rhs):
                if side.type.get_canonical().kind in (_CI.TypeKind.POINTER, _CI.TypeKind.CONSTANTARRAY):
                    return self.ptr_value(self.refs(side), side)
        self.value(lhs)
        self.value(rhs)
        return []

    def assign(self, lhs, left, rhs, right, c) -> None:
        """`lhs = rhs` for scalars (class types assign through operator=)."""
        ci = _CI
        inner = _strip_parens(lhs)
        if inner.kind == self.K.DECL_REF_EXPR and inner.referenced is not None and inner.referenced.get_usr() in self.alias:
            usr = inner.referenced.get_usr()
            if lhs.type.get_canonical().kind == ci.TypeKind.POINTER:
                self.alias[usr] = self.alias[usr] + self.ptr_value(right, rhs)
                return
        if rhs.type.get_canonical().kind == ci.TypeKind.POINTER:
            vals = self.ptr_value(right, rhs)
            self._escape(vals, left, c)
        else:
            self.record("r", right, rhs, rhs.type)
        self.record("w", left, c, lhs.type)

    def _escape(self, vals, left, c) -> None:
        """A pointer to state stored into state: accesses through the copy are not
        connected to the original (undecided)."""
        for p, a, cd in vals:
            if not a or not _ok(p, cd):
                continue
            if any(_ok(lp, lcd) for lp, la, lcd in left if not la):
                self.events.append(("w", p, self.u.loc(c), self.tick(), tuple(self.loops),
                                    "its address is stored in another variable; accesses through that pointer "
                                    "are not connected to it"))

    def init_list(self, c) -> list[tuple]:
        """Braced initializers: element k initialises field k of the destination."""
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        dest = self.dest[-1] if self.dest else []
        fields = []
        decl = _strip_ref(c.type).get_canonical().get_declaration()
        if decl is not None and decl.kind in (self.K.STRUCT_DECL, self.K.CLASS_DECL):
            fields = [f.spelling for f in decl.get_children() if f.kind == self.K.FIELD_DECL]
        for i, ch in enumerate(kids):
            sub = [(p + ((".", fields[i]),), False, cd) for p, a, cd in dest if not a] if i < len(fields) else []
            self.dest.append(sub)
            try:
                self.value(ch)
            finally:
                self.dest.pop()
        return []

    def inline_lambda(self, lam) -> None:
        """A lambda that is not a callback: its body counts as run where it is written."""
        for ch in lam.get_children():
            if ch.kind == self.K.COMPOUND_STMT:
                self.stmt(ch)

    # -- calls
    def call(self, c) -> list[tuple]:
        K = self.K
        ref = c.referenced
        if ref is not None:
            api = _registration_api(ref)
            if api is not None:
                return self.registration(c, ref, api)
        if ref is None:
            return self.unresolved(c)
        if ref.kind == K.CONSTRUCTOR:
            return self.construct(c, ref)
        if ref.kind not in (K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CONVERSION_FUNCTION,
                            K.DESTRUCTOR):
            return self.unknown_target(c, "a call through a function object or pointer: its target is not known")
        qual = _qualname(ref)
        args = list(c.get_arguments())
        if qual in _PASS_THROUGH and args:
            return self.refs(args[0])
        if qual in _PART_OF and args:
            r = self.refs(args[0])
            if ref.spelling in ("get_if",) or ref.spelling.endswith(("begin", "end", "data")):
                return [(p + (_ELEM,), True, cd) if not a else (p, a, cd) for p, a, cd in r]
            return [(p + (_ELEM,), a, cd) for p, a, cd in r]
        obj = None
        is_method = ref.kind in (K.CXX_METHOD, K.CONVERSION_FUNCTION, K.DESTRUCTOR) or (
            ref.kind == K.FUNCTION_TEMPLATE and ref.semantic_parent is not None and ref.semantic_parent.kind in (
                K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE))
        objtype = None
        if is_method and not ref.is_static_method():
            obj, args, objtype = self._object(c, ref, args)
        name = ref.spelling
        if obj is not None and (name == "operator=" or name in ("push_back", "emplace_back", "push_front",
                                                                 "emplace_front", "insert", "emplace", "push")):
            # where a created publisher goes: `pub_ = nh.advertise(...)`, `v.emplace_back(Conn{create_publisher(...)})`
            self.dest.append([(p, False, cd) for p, a, cd in obj if not a] if name == "operator=" else
                             [(p + (_ELEM,), False, cd) for p, a, cd in obj if not a])
            try:
                return self.dispatch(c, ref, obj, args, objtype)
            finally:
                self.dest.pop()
        return self.dispatch(c, ref, obj, args, objtype)

    def _object(self, c, ref, args):
        """(object refs, arguments, object type) of a member call; operator calls carry the object first."""
        K = self.K
        kids = list(c.get_children())
        first = kids[0] if kids else None
        nparams = len(list(ref.type.argument_types())) if ref.type.kind == _CI.TypeKind.FUNCTIONPROTO else None
        if first is not None and first.kind == K.MEMBER_REF_EXPR and (
                first.referenced is None or first.referenced == ref or first.spelling == ref.spelling):
            base = [ch for ch in first.get_children() if ch.kind.is_expression()]
            if not base:
                return self.this_refs(), args, None
            b = base[0]
            r = self.refs(b)
            t = _strip_parens(b).type
            if b.kind == K.CXX_THIS_EXPR or t.get_canonical().kind == _CI.TypeKind.POINTER:
                r = self.pointee(r, b)
                t = t.get_canonical().get_pointee() if t.get_canonical().kind == _CI.TypeKind.POINTER else None
            return r, args, t
        if ref.spelling.startswith("operator") and args and (nparams is None or len(args) == nparams + 1):
            return self.refs(args[0]), args[1:], _strip_parens(args[0]).type
        return self.this_refs(), args, None

    def dispatch(self, c, ref, obj, args, objtype=None) -> list[tuple]:
        d = self.u.definition(ref)
        if d is not None:
            return self.user_call(c, ref, d, obj, args)
        decl = self.u.declaration(ref)
        if decl is not None:  # declared by the user, defined elsewhere: resolved over all sources
            return self.user_call(c, ref, decl, obj, args)
        return self.library_call(c, ref, obj, args, objtype)

    def _bind_args(self, args, ptypes):
        binds, idx, byval = [], [], []
        for i, a in enumerate(args):
            r = self.refs(a)
            pt = ptypes[i] if i < len(ptypes) else None
            by_value = pt is not None and _strip_ref(pt).kind == pt.kind and pt.kind != _CI.TypeKind.POINTER
            if pt is not None and pt.kind == _CI.TypeKind.POINTER:
                r = self.ptr_value(r, a)
            elif by_value:
                self.record("r", r, a, a.type)  # the copy reads the argument
            binds.append(r)
            idx.append(self._index(a))
            byval.append(by_value)
        return binds, idx, byval

    def user_call(self, c, ref, d, obj, args) -> list[tuple]:
        ptypes = list(ref.type.argument_types()) if ref.type.kind == _CI.TypeKind.FUNCTIONPROTO else []
        binds, idx, _byval = self._bind_args(args, ptypes)
        fallback = _Fn.__new__(_Fn)
        fallback.__dict__.update(self.__dict__)
        fallback.events = []
        self._signature_effects(fallback, c, ref, obj, args, binds, ptypes)
        order = self.tick()
        usr = d.get_usr() if d.kind != self.K.LAMBDA_EXPR else self.u.lambda_usr(d)
        self.calls.append({"usr": usr, "name": _qualname(ref), "this": obj, "args": binds, "idx": idx,
                           "order": order, "loops": tuple(self.loops), "loc": self.u.loc(c),
                           "virtual": bool(ref.kind == self.K.CXX_METHOD and ref.is_virtual_method()),
                           "fallback": fallback.events})
        self.n = fallback.n
        # What it returns by reference: from its summary in this unit, else its object.
        if ref.result_type.kind not in (_CI.TypeKind.LVALUEREFERENCE, _CI.TypeKind.RVALUEREFERENCE,
                                        _CI.TypeKind.POINTER):
            return []
        s = self.u.summary(d) if _has_body(d) else None
        if s is None:
            return list(obj or [])
        out = []
        for p, a, cd in s["returns"]:
            root = p[0]
            if root == ("this",):
                bases = obj or []
            elif root[0] == "param":
                bases = binds[root[1]] if root[1] < len(binds) else []
            else:
                out.append((p, a, cd))
                continue
            for bp, ba, bcd in bases:
                np = _join(bp, ba, p[1:])
                if np is not None and _ok(np, bcd):
                    out.append((np, a, bcd))
        return out

    def _signature_effects(self, sink, c, ref, obj, args, binds, ptypes) -> None:
        """What a call does by its declaration alone (used when no definition is found)."""
        if obj is not None:
            sink.record("r" if ref.kind == self.K.CXX_METHOD and ref.is_const_method() else "w", obj, c)
        for i, r in enumerate(binds):
            pt = ptypes[i] if i < len(ptypes) else None
            _pass(sink, r, pt, args[i], False)

    def library_call(self, c, ref, obj, args, objtype=None) -> list[tuple]:
        """A call into a library (a system header): decided from its declaration and name."""
        K = self.K
        name = ref.spelling
        parent = ref.semantic_parent
        pq = _qualname(parent) if parent is not None else ""
        if name == "publish" and ("Publisher" in pq or pq.startswith(("ros::", "rclcpp"))):
            for a in args:
                self.value(a)
            self.events.append(("pub", _first_path(obj), self.u.loc(c), self.tick(), tuple(self.loops), None))
            return []
        ptypes = list(ref.type.argument_types()) if ref.type.kind == _CI.TypeKind.FUNCTIONPROTO else []
        forwarding = _forwarding_params(ref)
        variadic = ref.type.kind == _CI.TypeKind.FUNCTIONPROTO and ref.type.is_function_variadic()
        out: list[tuple] = []
        is_method = obj is not None
        quiet = is_method and (_not_state_name(pq) or _not_state_type(objtype) or (
            parent is not None and parent.kind in (K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE) and _not_state_name(
                _type_qual(parent.type))))
        pointer = objtype is not None and _pointer_like(objtype) or _smart_qual(pq)
        if is_method:
            out = self._object_effect(c, ref, name, pq, obj, args, pointer, quiet)
        arg_refs = []
        for i, a in enumerate(args):
            pt = ptypes[i] if i < len(ptypes) else None
            r = self.refs(a)
            arg_refs.append(r)
            if pt is None and not variadic and i >= len(ptypes) and ptypes:
                pt = ptypes[-1]
            fwd = (min(i, len(forwarding) - 1) >= 0 and forwarding[min(i, len(forwarding) - 1)]) if forwarding else False
            _pass(self, r, pt, a, fwd, variadic=pt is None, through=_qualname(ref) not in _READ_ONLY_ALGOS)
        if not is_method and ref.result_type.kind in (_CI.TypeKind.LVALUEREFERENCE, _CI.TypeKind.POINTER):
            for i, r in enumerate(arg_refs):  # std::min/max and the like return one of their arguments
                pt = ptypes[i] if i < len(ptypes) else None
                if pt is not None and pt.kind == _CI.TypeKind.LVALUEREFERENCE:
                    out += r
        return out

    def _object_effect(self, c, ref, name, pq, obj, args, pointer: bool, quiet: bool) -> list[tuple]:
        """What a library method does to its object (nothing recorded when `quiet`:
        ROS handles, locks, streams), and the element or pointee it gives."""
        cls = pq
        if name in _DEREF and pointer:
            vals = []
            for p, a, cd in obj:
                if a:
                    vals.append((p, True, cd))
                else:
                    if not quiet:
                        self.record("r", [(p, False, cd)], c)
                    vals.append((p + (_STAR,), True, cd))
            if name in ("operator*", "value"):
                return [(p, False, cd) for p, a, cd in vals]
            return vals
        if quiet:
            return []
        if name in _ELEMENT and not _is_smart_or_iter(cls):
            idx = self._index(args[0]) if name in ("operator[]", "at") and args else None
            if cls in _MAPS and name == "operator[]" and not ref.is_const_method():
                self.record("w", obj, c)
                idx = None
            if name in ("find", "lower_bound", "upper_bound", "equal_range"):
                self.record("r", obj, c)  # a search reads the container
            step = ("[", idx)
            addr = name in ("data", "begin", "end", "rbegin", "rend", "cbegin", "cend", "find", "lower_bound",
                            "upper_bound")
            return [(p + (step,), addr, cd) for p, a, cd in obj if not a]
        if ref.is_const_method() or name in _READ_ONLY:
            self.record("r", obj, c)
        elif name in _READ_WRITE:
            self.record("rw", obj, c)
        else:
            self.record("w", obj, c)
        if ref.result_type.kind in (_CI.TypeKind.LVALUEREFERENCE, _CI.TypeKind.POINTER):
            return [(p, False, cd) for p, a, cd in obj if not a]
        return []

    def construct(self, c, ref) -> list[tuple]:
        """A constructor call: arguments by the constructor's parameters; a smart
        pointer or iterator copied from state shares what it points to."""
        args = list(c.get_arguments())
        cls = _type_qual(c.type)
        ptypes = list(ref.type.argument_types()) if ref.type.kind == _CI.TypeKind.FUNCTIONPROTO else []
        if (cls in _SMART or _pointer_like(c.type)) and len(args) == 1 and _pointer_like(args[0].type):
            r = self.refs(args[0])
            self.record("r", r, args[0], args[0].type)
            if ptypes and ptypes[0].kind == _CI.TypeKind.RVALUEREFERENCE:
                self.record("w", r, args[0], args[0].type)  # moved from
            return [(p, a, cd if cd is not None else (None if a else len(p))) for p, a, cd in r]
        if len(args) == 1 and cls in ("std::function", "boost::function"):
            self.refs(args[0])
            return []
        d = self.u.definition(ref)
        if d is not None:
            self.user_call(c, ref, d, None, args)
            return []
        forwarding = _forwarding_params(ref)
        for i, a in enumerate(args):
            pt = ptypes[i] if i < len(ptypes) else (ptypes[-1] if ptypes else None)
            fwd = forwarding[min(i, len(forwarding) - 1)] if forwarding else False
            _pass(self, self.refs(a), pt, a, fwd)
        return []

    def unresolved(self, c) -> list[tuple]:
        """A call in a template whose target depends on a template parameter."""
        K = self.K
        kids = list(c.get_children())
        first = kids[0] if kids else None
        args = list(c.get_arguments())
        head = _strip_parens(first) if first is not None else None
        if head is not None and head.kind == K.DECL_REF_EXPR and head.referenced is not None and (
                head.referenced.kind == K.OVERLOADED_DECL_REF):
            ov = head.referenced
            lib = _CI.conf.lib
            cands = [lib.clang_getOverloadedDecl(ov, i) for i in range(lib.clang_getNumOverloadedDecls(ov))]
            cands = [x for x in cands if x is not None]
            user = [x for x in cands if self.u.definition(x) is not None]
            if len(user) == 1:
                return self.user_call_pattern(c, user[0], args)
            if cands and not user:
                return self.library_call(c, cands[0], None, args)
        if head is not None and head.kind == K.MEMBER_REF_EXPR and head.referenced is None:
            return self.dependent_method(c, head, args)
        return self.unknown_target(c, "a call whose target is not known statically")

    def user_call_pattern(self, c, d, args) -> list[tuple]:
        """A call of a user template from a template (types still unknown): parameters by the pattern."""
        ptypes = [p.type for p in d.get_children() if p.kind == self.K.PARM_DECL]
        binds, idx, _ = self._bind_args(args, ptypes)
        self.calls.append({"usr": self.u.definition(d).get_usr(), "name": _qualname(d), "this": None, "args": binds,
                           "idx": idx, "order": self.tick(), "loops": tuple(self.loops), "loc": self.u.loc(c),
                           "virtual": False, "fallback": []})
        return []

    def dependent_method(self, c, head, args) -> list[tuple]:
        toks = [t.spelling for t in head.get_tokens()]
        name = toks[-1] if toks else "?"
        if len(toks) >= 2 and toks[-2] == "operator":
            name = "operator" + toks[-1]
        arrow = len(toks) >= 2 and toks[-2] == "->"
        base = [ch for ch in head.get_children() if ch.kind.is_expression()]
        obj = self.refs(base[0]) if base else self.this_refs()
        if arrow and base:
            obj = self.pointee(obj, base[0])
        for a in args:
            r = self.refs(a)
            self.record("r", r, a, a.type)
        if name in _DEREF:
            return [(p + (_STAR,), name != "operator*", cd) for p, a, cd in obj if not a]
        if name in _ELEMENT:
            return [(p + (_ELEM,), name in ("data", "begin", "end"), cd) for p, a, cd in obj if not a]
        if name in _READ_ONLY:
            self.record("r", obj, c)
        elif name in _READ_WRITE:
            self.record("rw", obj, c)
        elif name in _MUTATORS:
            self.record("w", obj, c)
        else:
            self.record("r", obj, c)
            self.record("w", obj, c, why=f"method '{name}' of a template-dependent type: counted as a write")
        return []

    def unknown_target(self, c, why: str) -> list[tuple]:
        for a in c.get_arguments():
            r = self.refs(a)
            self.record("r", r, a, a.type)
            vals = [x for x in r if x[1]]
            if vals:
                self.record("w", self.pointee(vals, a), a, None, why=why + "; the state it is given is counted as written")
            elif a.type.get_canonical().kind == _CI.TypeKind.LVALUEREFERENCE or _strip_parens(a).kind in (
                    self.K.DECL_REF_EXPR, self.K.MEMBER_REF_EXPR) and r:
                self.record("w", r, a, a.type, why=why + "; the state it is given is counted as written")
        return []

    # -- registrations
    def registration(self, c, ref, api) -> list[tuple]:
        kind, pos, flavour = api
        args = list(c.get_arguments())
        name_arg = args[pos] if pos < len(args) else None
        base = self._handle(c)
        if kind == "publisher":
            dest = self.dest[-1] if self.dest else []
            self.u.pubs.append({"dest": [p for p, a, cd in dest if not a], "topic": _const_string(name_arg),
                                "topic_expr": self.u.text(name_arg) if name_arg is not None else None,
                                "loc": self.u.loc(c), "fn": self.usr, "cls": self.cls})
            return []
        cb = None
        for i, a in enumerate(args[pos + 1:], start=pos + 1):
            cb = self.callable(a, args[i + 1:])
            if cb is not None:
                break
        reg = {"kind": kind, "api": flavour, "loc": self.u.loc(c), "fn": self.usr, "fn_name": self._name(),
               "cls": self.cls, "in_loop": bool(self.loops), "handle": base,
               "param_usrs": self.param_usrs,
               "topic": None, "topic_expr": None, "period_ns": None, "period_expr": None}
        if kind == "timer":
            reg["period_ns"] = _duration_ns(name_arg) if name_arg is not None else None
            reg["period_expr"] = self.u.text(name_arg) if name_arg is not None else None
        else:
            reg["topic"] = _const_string(name_arg)
            reg["topic_expr"] = self.u.text(name_arg) if name_arg is not None else None
        reg.update(cb or {"callable": None, "symbol": None, "this": [], "why": "the callback is not a lambda, a "
                          "function, a member function or a bind of one (e.g. a std::function variable)"})
        self.u.regs.append(reg)
        return []

    def _handle(self, c):
        """What a registration is called on (for the node's ROS name): a member, a variable, or this."""
        K = self.K
        kids = list(c.get_children())
        if not kids or kids[0].kind != K.MEMBER_REF_EXPR:
            return None
        base = [ch for ch in kids[0].get_children() if ch.kind.is_expression()]
        if not base:
            return ["this", self.cls]
        return self._handle_of(base[0])

    def _handle_of(self, b):
        K = self.K
        b = _strip_parens(b)
        if b.kind == K.CXX_THIS_EXPR:
            return ["this", self.cls]
        if b.kind == K.MEMBER_REF_EXPR and b.referenced is not None:
            return ["member", f"{self.cls}|{b.referenced.spelling}"]
        if b.kind == K.DECL_REF_EXPR and b.referenced is not None:
            r = b.referenced
            if r.kind == K.VAR_DECL:
                lit = None
                for ch in r.get_children():
                    if ch.kind.is_expression():
                        lit = self._first_literal(ch)
                if lit is not None:
                    self.u.inits.setdefault(r.get_usr(), lit)
                return ["var", r.get_usr()]
        if b.kind == K.CALL_EXPR and b.referenced is not None and b.referenced.spelling in ("operator->", "operator*"):
            args = list(b.get_arguments())  # node->create_subscription(...): the shared_ptr variable
            return self._handle_of(args[0]) if args else None
        return None

    def callable(self, a, rest):
        """The callback designated by a registration argument: a lambda, a
        (member) function pointer with its object, or a bind of one."""
        K = self.K
        e = _strip_wrappers(a)
        if e is None:
            return None
        if e.kind == K.LAMBDA_EXPR:
            s = self.u.lambda_summary(e, self)
            sym, alt = _lambda_symbol(e, self.lambda_number(e))
            return {"callable": s["usr"], "callable_kind": "lambda", "symbol": sym, "symbol_alternatives": alt,
                    "this": self.this_refs(), "function": s["name"], "defined_at": self.u.loc(e)}
        if e.kind == K.UNARY_OPERATOR and _unop(e) == "&":
            inner = [ch for ch in e.get_children() if ch.kind.is_expression()]
            e = _strip_parens(inner[0]) if inner else e
        if e.kind == K.DECL_REF_EXPR and e.referenced is not None:
            r = e.referenced
            if r.kind == K.VAR_DECL:
                for ch in r.get_children():
                    if ch.kind.is_expression():
                        lam = _find_lambda(ch)
                        if lam is not None:
                            return self.callable(lam, rest)
                return None
            if r.kind in (K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
                return self._function_callable(r, rest, "member" if r.kind == K.CXX_METHOD and not r.is_static_method()
                                               else "function")
        if e.kind == K.CALL_EXPR and e.referenced is not None and _qualname(e.referenced) in _BIND:
            bargs = list(e.get_arguments())
            if bargs:
                inner = self.callable(bargs[0], bargs[1:])
                if inner is not None:
                    inner["callable_kind"] = "bind"
                    return inner
        return None

    def lambda_number(self, lam) -> int | None:
        """The position (from 1) of `lam` among the lambdas written directly in this
        function, in source order: GCC's number in a lambda's name."""
        if not hasattr(self, "_lambdas"):
            found = []

            def walk(c):
                for ch in c.get_children():
                    if ch.kind == self.K.LAMBDA_EXPR:
                        found.append(ch.extent.start.offset)
                    else:
                        walk(ch)
            walk(self.c)  # (when this function is itself a lambda: its own body)
            self._lambdas = sorted(found)
        off = lam.extent.start.offset
        return self._lambdas.index(off) + 1 if off in self._lambdas else None

    def _function_callable(self, r, rest, kind):
        d = self.u.definition(r)
        usr = d.get_usr() if d is not None else r.get_usr()
        this = []
        if kind == "member" and rest:
            o = rest[0]
            this = self.pointee(self.refs(o), o) if o.type.get_canonical().kind == _CI.TypeKind.POINTER or \
                _strip_parens(o).kind == self.K.CXX_THIS_EXPR else self._smart_pointee(o)
        sym = demangle([r.mangled_name])[0] if r.mangled_name else _qualname(r)
        return {"callable": usr, "callable_kind": kind, "symbol": sym, "this": this, "function": _qualname(r),
                "defined_at": self.u.loc(d if d is not None else r)}

    def _smart_pointee(self, o) -> list[tuple]:
        r = self.refs(o)
        if _pointer_like(o.type):
            return [(p + (_STAR,), False, cd) for p, a, cd in r if not a] + [(p, False, cd) for p, a, cd in r if a]
        return r


def _pass(fn: _Fn, refs, ptype, arg, forwarding: bool, variadic: bool = False, through: bool = False) -> None:
    """Records what passing `refs` to a parameter of type `ptype` does. `through`: a
    non-const iterator into state given by value (to a library algorithm) writes
    what it points to."""
    ci = _CI
    if ptype is None:
        vals = [x for x in refs if x[1]]
        if variadic and vals:
            fn.record("w", fn.pointee(vals, arg), arg, None,
                      why="a pointer to it is passed to a variadic parameter; counted as written")
        fn.record("r", refs, arg, arg.type)
        return
    k = ptype.kind
    if k == ci.TypeKind.LVALUEREFERENCE:
        fn.record("r" if ptype.get_pointee().is_const_qualified() or forwarding else "w", refs, arg, arg.type)
    elif k == ci.TypeKind.RVALUEREFERENCE:
        fn.record("r" if forwarding or ptype.get_pointee().is_const_qualified() else "w", refs, arg, arg.type)
        if not forwarding:
            fn.record("r", refs, arg, arg.type)
    elif k == ci.TypeKind.POINTER:
        vals = fn.ptr_value(refs, arg)
        pointee_t = ptype.get_pointee()
        t = arg.type.get_canonical()
        ctype = t.get_pointee() if t.kind == ci.TypeKind.POINTER else None
        if ctype is not None and _not_state_type(ctype):
            return
        fn.record("r" if pointee_t.is_const_qualified() else "w", [(p, False, cd) for p, a, cd in vals], arg, ctype)
    else:
        fn.record("r", refs, arg, arg.type)
        vals = [(p, False, cd) for p, a, cd in refs if a]
        if vals and through and _pointer_like(arg.type):
            const = re.search(r"const_iterator|<const |const \*", _strip_ref(arg.type).get_canonical().spelling)
            fn.record("r" if const else "w", vals, arg, None)


def _forwarding_params(ref) -> list[bool]:
    """Per parameter of a library function template: is it a forwarding reference (T&&)?"""
    hit = _FWD.get(ref)
    if hit is None:
        hit = _FWD[ref] = _forwarding_uncached(ref)
    return hit


def _forwarding_uncached(ref) -> list[bool]:
    tmpl = _CI.conf.lib.clang_getSpecializedCursorTemplate(ref)
    if tmpl is None:
        return []
    K = _CI.CursorKind
    tparams = {ch.spelling for ch in tmpl.get_children() if ch.kind == K.TEMPLATE_TYPE_PARAMETER}
    out = []
    for p in tmpl.get_children():
        if p.kind != K.PARM_DECL:
            continue
        s = p.type.spelling.replace("...", "").replace(" ", "")
        out.append(s.endswith("&&") and s[:-2] in tparams)
    return out


def _has_body(c) -> bool:
    """A written definition (implicit copy constructors and the like are placed at their class's name)."""
    K = _CI.CursorKind
    parent = c.semantic_parent
    if parent is not None and parent.location.file is not None and c.location.file is not None and (
            parent.location.offset == c.location.offset and parent.location.file.name == c.location.file.name):
        return False
    return any(ch.kind in (K.COMPOUND_STMT, K.CXX_TRY_STMT) for ch in c.get_children())


def _first_path(refs):
    for p, a, _cd in refs or []:
        if not a:
            return p
    return None


def _join(base, addr, rest):
    if addr:
        if not rest or rest[0] != _STAR:
            return None
        return base + tuple(rest[1:])
    return base + tuple(rest)


def _is_smart_or_iter(q: str) -> bool:
    return _smart_qual(q) or "iterator" in q.rsplit("::", 1)[-1].lower()


def _strip_parens(c):
    K = _CI.CursorKind
    while c is not None and c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _strip_wrappers(c):
    """Through casts, temporaries and std::function/boost::function conversions."""
    K = _CI.CursorKind
    for _ in range(32):
        if c is None:
            return None
        if c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR, K.CSTYLE_CAST_EXPR,
                      K.CXX_STATIC_CAST_EXPR):
            kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
            if len(kids) != 1:
                return c
            c = kids[0]
        elif c.kind == K.CALL_EXPR and c.referenced is not None and c.referenced.kind == K.CONSTRUCTOR:
            written = [a for a in c.get_arguments() if a.extent.start.offset != a.extent.end.offset]
            if len(written) != 1:  # (default arguments have no extent)
                return c
            c = written[0]
        else:
            return c
    return c


def _find_lambda(c):
    e = _strip_wrappers(c)
    return e if e is not None and e.kind == _CI.CursorKind.LAMBDA_EXPR else None


def _lambda_symbol(lam, gcc_number: int | None) -> tuple[str | None, list[str]]:
    """The demangled closure type, as the tracers record a lambda callback, and
    the other spelling. The Itanium ABI numbers a function's lambdas per
    signature (clang: `{lambda()#1}` for the first timer lambda after two
    subscription lambdas); GCC numbers them all in order (`{lambda()#3}`), and
    ROS is built with GCC: the GCC form comes first."""
    decl = lam.type.get_declaration()
    op = next((ch for ch in decl.get_children() if ch.spelling == "operator()"), None) if decl is not None else None
    if op is None or not op.mangled_name:
        return None, []
    s = demangle([op.mangled_name])[0]
    i = s.rfind("}::operator()")
    if i < 0:
        return _local_lambda_symbol(s, gcc_number), []
    abi = s[:i + 1]
    m = re.search(r"#(\d+)\}$", abi)
    if gcc_number is None or m is None or int(m.group(1)) == gcc_number:
        return abi, []
    return abi[:m.start()] + f"#{gcc_number}}}", [abi]


def _local_lambda_symbol(s: str, number: int | None) -> str | None:
    """clang names a lambda of a function that is not inline (e.g. main) `$_N`
    (internal linkage): 'main::$_0::operator()(P) const' -> 'main::{lambda(P)#k}',
    GCC's name, with k its position among the function's lambdas."""
    found = list(re.finditer(r"\$_\d+::operator\(\)\(", s))
    m = found[-1] if found else None
    if m is None or number is None:
        return None
    depth, j = 1, m.end()
    while j < len(s) and depth:
        depth += {"(": 1, ")": -1}.get(s[j], 0)
        j += 1
    params = s[m.end():j - 1]
    prefix = s[:m.start()]
    if "$_" in prefix:
        return None  # a lambda inside a local lambda: its context has no GCC name here
    return f"{prefix}{{lambda({params})#{number}}}"


def _registration_api(ref):
    """(kind, position of the topic/service/period argument, 'roscpp'|'rclcpp') of a
    callback or publisher registration call, or None."""
    K = _CI.CursorKind
    name = ref.spelling
    if name not in _ROS1_API and name not in _ROS2_API and name not in _ROS2_FREE:
        return None
    parent = ref.semantic_parent
    pq = _qualname(parent) if parent is not None else ""
    if pq == "ros::NodeHandle" and name in _ROS1_API:
        k, pos = _ROS1_API[name]
        return k, pos, "roscpp"
    if parent is not None and parent.kind in (K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE):
        if (pq in _ROS2_CLASSES or pq.startswith("rclcpp")) and name in _ROS2_API:
            k, pos = _ROS2_API[name]
            return k, pos, "rclcpp"
        return None
    if pq.startswith("rclcpp") and name in _ROS2_FREE:
        k, pos = _ROS2_FREE[name]
        return k, pos, "rclcpp"
    return None


def _string_literal(tok: str) -> str | None:
    m = re.fullmatch(r'(?:u8|u|U|L)?"((?:[^"\\]|\\.)*)"', tok, re.S)
    if not m:
        return None
    try:
        return m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return m.group(1)


def _const_string(c) -> str | None:
    """A string known at compile time: a literal, std::string("..."), a const variable initialised with one."""
    K = _CI.CursorKind
    c = _strip_wrappers(c)
    if c is None:
        return None
    if c.kind == K.STRING_LITERAL:
        return _string_literal(c.spelling)
    if c.kind == K.CALL_EXPR and c.referenced is not None and c.referenced.kind == K.CONSTRUCTOR:
        args = list(c.get_arguments())
        return _const_string(args[0]) if args else None
    if c.kind == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.VAR_DECL:
        v = c.referenced
        if v.type.is_const_qualified() or "constexpr" in {t.spelling for t in v.get_tokens()}:
            for ch in v.get_children():
                if ch.kind.is_expression():
                    return _const_string(ch)
    return None


_UNITS_NS = {"ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000, "h": 3_600_000_000_000}


def _duration_ns(c) -> int | None:
    """A timer period known at compile time, in ns (ros::Duration(0.1), 100ms, std::chrono::milliseconds(100) ...)."""
    v = _eval_duration(c, 0)
    if v is None:
        return None
    kind, x = v
    if kind == "num":  # a bare number given to createTimer: ROS 1 would not compile it; rclcpp takes durations
        return None
    return int(round(x))


def _eval_duration(c, depth):
    K = _CI.CursorKind
    if c is None or depth > 12:
        return None
    c = _strip_parens(c)
    k = c.kind
    toks = [t.spelling for t in c.get_tokens()]
    if k in (K.INTEGER_LITERAL, K.FLOATING_LITERAL) and toks:
        try:
            return "num", float(re.sub(r"[uUlLfF]+$", "", toks[0]))
        except ValueError:
            return None
    if len(toks) == 1:
        m = re.fullmatch(r"(\d+(?:\.\d*)?)(ns|us|ms|s|min|h)", toks[0])
        if m:
            return "ns", float(m.group(1)) * _UNITS_NS[m.group(2)]
    if k in (K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR, K.CALL_EXPR) and c.referenced is not None and (
            c.referenced.kind == K.CONSTRUCTOR):
        args = list(c.get_arguments())
        cls = _type_qual(c.type)
        vals = [_eval_duration(a, depth + 1) for a in args]
        if any(v is None for v in vals):
            return None
        if cls in ("ros::Duration", "ros::WallDuration", "ros::SteadyDuration", "rclcpp::Duration"):
            if len(vals) == 1 and vals[0][0] == "num":
                return "ns", vals[0][1] * 1e9
            if len(vals) == 2:
                return "ns", vals[0][1] * 1e9 + vals[1][1]
            if len(vals) == 1:
                return vals[0]
        if cls == "std::chrono::duration" and len(vals) == 1:
            if vals[0][0] == "ns":
                return vals[0]
            num, den = _ratio(c.type)
            if num is None:
                return None
            return "ns", vals[0][1] * num / den * 1e9
        if len(vals) == 1:
            return vals[0]
        return None
    if k == K.BINARY_OPERATOR:
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) == 2:
            a, b = (_eval_duration(x, depth + 1) for x in kids)
            if a is None or b is None:
                return None
            op = _binop(c)
            kind = "ns" if "ns" in (a[0], b[0]) else "num"
            try:
                x = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1], "/": a[1] / b[1]}.get(op)
            except ZeroDivisionError:
                return None
            if x is None or (op == "/" and a[0] == "ns" and b[0] == "ns"):
                return None
            return kind, x
    if k == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.VAR_DECL:
        v = c.referenced
        if v.type.is_const_qualified() or "constexpr" in {t.spelling for t in v.get_tokens()}:
            for ch in v.get_children():
                if ch.kind.is_expression():
                    return _eval_duration(ch, depth + 1)
    if k == K.CALL_EXPR and c.referenced is not None and c.referenced.spelling.startswith("operator\"\""):
        m = re.fullmatch(r"(\d+(?:\.\d*)?)(ns|us|ms|s|min|h)", "".join(toks))
        if m:
            return "ns", float(m.group(1)) * _UNITS_NS[m.group(2)]
    kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
    if k in (K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR, K.CXX_STATIC_CAST_EXPR, K.CSTYLE_CAST_EXPR) and len(kids) == 1:
        return _eval_duration(kids[0], depth + 1)
    return None


def _ratio(t):
    s = _strip_ref(t).get_canonical().spelling
    m = re.search(r"std::ratio<(\d+)L?,\s*(\d+)L?>", s)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(2))


# ---------------------------------------------------------------- analysis over all translation units


def _parse(ci, index, source: str, args: list[str]):
    try:
        return index.parse(source, args=args)
    except ci.TranslationUnitLoadError as exc:
        raise InputError(f"{source}: libclang could not parse it ({exc})") from None


def _tu_args(source: str, db: CompileDatabase | None, flags: Sequence[str] | None) -> tuple[list[str], str]:
    compiler = "c++"
    how = "--flags"
    args: list[str] = []
    if db is not None:
        hit = db.lookup(source)
        args, compiler, how = hit
        if flags:
            how += " + --flags"
    if flags:
        args = args + _clean_args(list(flags), os.getcwd(), None)
    if source.endswith(_HEADER_EXT) and "-x" not in args:
        args = ["-x", "c++"] + args
    if not any(a.startswith("-std=") for a in args):
        args.append("-std=c++17")
    inc = _compiler_include(compiler) or _compiler_include("c++")
    if inc:
        args += ["-idirafter", inc]
    return args, how


def _diagnostics(ci, tu, source: str) -> list[str]:
    out = []
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error:
            f = d.location.file.name if d.location.file else source
            out.append(f"{f}:{d.location.line}:{d.location.column}: {d.spelling}")
            if d.severity == ci.Diagnostic.Fatal:
                raise InputError(f"{out[-1]} (while parsing {source}: give the build directory with -p or the "
                                 "include paths and defines with --flags)")
    return out


class _UnitData:
    """What phase 2 needs of one translation unit (picklable: units can be analysed in worker processes)."""

    FIELDS = ("summaries", "regs", "pubs", "names", "kinds", "overrides", "inits")

    def __init__(self, unit: _Unit):
        for f in self.FIELDS:
            setattr(self, f, getattr(unit, f))


def _analyze_one(source: str, args: list[str], how: str) -> tuple[_UnitData, dict]:
    ci = _cindex()
    t0 = time.perf_counter()
    tu = _parse(ci, ci.Index.create(), source, args)
    errors = _diagnostics(ci, tu, source)
    unit = _Unit(tu)
    try:
        unit.run()
    finally:
        _QUAL.clear()
        _FWD.clear()
    info = {"source": source, "flags_from": how, "errors": errors, "seconds": round(time.perf_counter() - t0, 3)}
    return _UnitData(unit), info


def analyze(sources: Sequence[str], build_dir: str | None = None, flags: Sequence[str] | None = None,
            progress=None, jobs: int | None = None) -> dict:
    """The dependency document of the C++ `sources` (see docs/deps.md).

    Flags come from `build_dir`/compile_commands.json (a source without an entry,
    e.g. a header, takes the flags of the nearest file the build compiles), and/or
    from `flags` (added to every source). Sources are parsed in `jobs` worker
    processes (default: one per CPU). Raises InputError on a missing file, a bad
    compilation database or a source that does not parse."""
    _cindex()
    if not sources:
        raise InputError("no source file given")
    for s in sources:
        if not os.path.isfile(s):
            raise InputError(f"{s}: no such file")
    db = CompileDatabase(build_dir) if build_dir is not None else None
    work = [(s, *_tu_args(s, db, flags)) for s in sources]
    jobs = max(1, min(len(work), jobs if jobs is not None else (os.cpu_count() or 1)))
    t_all = time.perf_counter()
    results: dict[str, tuple[_UnitData, dict]] = {}
    if jobs == 1:
        for s, args, how in work:
            results[s] = _analyze_one(s, args, how)
            if progress is not None:
                progress(s, results[s][1]["seconds"], results[s][1]["errors"])
    else:
        import concurrent.futures as cf
        import multiprocessing

        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            futures = {ex.submit(_analyze_one, s, args, how): s for s, args, how in work}
            for fut in cf.as_completed(futures):
                s = futures[fut]
                results[s] = fut.result()
                if progress is not None:
                    progress(s, results[s][1]["seconds"], results[s][1]["errors"])
    units = [results[s][0] for s, _a, _h in work]
    doc = _document(units)
    doc["inputs"] = {"sources": list(sources), "build_dir": build_dir, "flags": list(flags or []),
                     "translation_units": [results[s][1] for s, _a, _h in work],
                     "seconds": round(time.perf_counter() - t_all, 3)}
    return doc


class _Closure:
    """Summaries of all units closed over calls: every event a function makes,
    through the functions it calls, in terms of its own this/params/variables."""

    def __init__(self, units: list[_UnitData]):
        self.summaries: dict[str, dict] = {}
        self.overrides: dict[str, list[str]] = {}
        self.names: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        for u in units:
            for usr, s in u.summaries.items():
                self.summaries.setdefault(usr, s)
            for base, lst in u.overrides.items():
                self.overrides.setdefault(base, [])
                self.overrides[base] += [x for x in lst if x not in self.overrides[base]]
            self.names.update(u.names)
            self.kinds.update(u.kinds)
        self.memo: dict[str, list[tuple]] = {}
        self.busy: set[str] = set()
        self.missing: dict[str, str] = {}

    def closed(self, usr: str) -> list[tuple]:
        if usr in self.memo:
            return self.memo[usr]
        s = self.summaries.get(usr)
        if s is None:
            return []
        if usr in self.busy:  # recursion: the outer call accounts for this function's events
            return list(s["events"])
        self.busy.add(usr)
        try:
            evs = list(s["events"])
            for call in s["calls"]:
                targets = [call["usr"]]
                if call.get("virtual"):
                    targets += self.overrides.get(call["usr"], [])
                found = False
                for t in targets:
                    if t in self.summaries:
                        found = True
                        evs += substitute(self.closed(t), call)
                if not found:
                    self.missing.setdefault(call["name"], call["loc"])
                    evs += call["fallback"]
        finally:
            self.busy.discard(usr)
        self.memo[usr] = _dedupe(evs)
        return self.memo[usr]


def _dedupe(evs: list[tuple]) -> list[tuple]:
    """One event per (kind, path, location): reads keep their earliest order,
    publications their latest (what 'read before it publishes' needs)."""
    best: dict[tuple, tuple] = {}
    for e in evs:
        key = (e[0], e[1], e[2], e[5])
        old = best.get(key)
        if old is None or (e[3] > old[3] if e[0] == "pub" else e[3] < old[3]):
            best[key] = e
    return list(best.values())


def _sub_index(path, idx):
    if not any(s[0] == "[" and s[1] is not None and s[1][0] == "p" for s in path[1:]):
        return path
    out = [path[0]]
    for s in path[1:]:
        if s[0] == "[" and s[1] is not None and s[1][0] == "p":
            j = s[1][1]
            s = ("[", idx[j] if j < len(idx) else None)
        out.append(s)
    return tuple(out)


def substitute(events: list[tuple], call: dict) -> list[tuple]:
    """A callee's events seen from its caller: this and the parameters replaced by
    what the call binds to them; events on the callee's own copies dropped."""
    out = []
    this = call.get("this") or []
    args = call.get("args") or []
    idx = call.get("idx") or []
    for kind, path, loc, order, loops, why in events:
        o = tuple(call["order"]) + tuple(order)
        lp = tuple(call["loops"]) + tuple(loops)
        if path is None:
            out.append((kind, None, loc, o, lp, why))
            continue
        root = path[0]
        if root == ("this",):
            bases = this
        elif root[0] == "param":
            bases = args[root[1]] if root[1] < len(args) else []
        else:
            out.append((kind, _sub_index(path, idx), loc, o, lp, why))
            continue
        rest = _sub_index(path, idx)[1:]
        for bp, ba, bcd in bases:
            np = _join(tuple(bp), ba, rest)
            if np is None or not _ok(np, bcd):
                continue
            out.append((kind, np, loc, o, lp, why))
    return out


def _conflict(w, r, same_registration: bool) -> bool:
    """Does writing path `w` change what reading path `r` reads?"""
    if w[0] != r[0]:
        return False
    n = min(len(w), len(r))
    for a, b in zip(w[1:n], r[1:n]):
        if a[0] != b[0]:
            return False
        if a[0] in (".", "^") and a[1] != b[1]:
            return False
        if a[0] == "[":
            x, y = a[1], b[1]
            if x is not None and y is not None:
                if x[0] == "k" and y[0] == "k" and x[1] != y[1]:
                    return False
                if same_registration and x[0] == "c" and x == y:
                    return False  # one element per registration of a lambda (its captured index)
    if len(w) <= len(r):
        return True
    return _STAR not in w[len(r):]  # reading a pointer does not read what it points to


def _display(path, names: dict[str, str]) -> str:
    if path is None:
        return "?"
    root = path[0]
    if root[0] == "obj":
        s = f"{root[1]}::"
        first = True
    elif root[0] == "var":
        s = names.get(root[1], root[1])
        first = False
    else:
        s = root[0]
        first = False
    for st in path[1:]:
        if st[0] == ".":
            s += ("" if first else ".") + st[1]
        elif st[0] == "*":
            s += "->" if not s.endswith("->") else ""
            s = s[:-2] + "->" if s.endswith("->") else s
            first = True
            continue
        elif st[0] == "[":
            i = st[1]
            s += "[]" if i is None else f"[{i[1]}]" if i[0] == "k" else "[per registration]" if i[0] == "c" else "[]"
        elif st[0] == "^":
            s += f"({st[1]})"
        first = False
    return s[:-2] + "->*" if s.endswith("->") else s


def _norm_root(path, reg: dict):
    """Registration-space roots to callback-level roots: this -> the object of its class."""
    if path is None:
        return None
    root = path[0]
    if root == ("this",):
        return (("obj", reg["cls"] or reg["fn_name"]),) + tuple(path[1:])
    if root[0] == "param":
        usrs = reg.get("param_usrs") or []
        return (("var", usrs[root[1]] if root[1] < len(usrs) else f"{reg['fn']}#{root[1]}"),) + tuple(path[1:])
    return path


def _rel(loc: str) -> str:
    """file:line:col with the file relative to the working directory when below it."""
    f, _, rest = loc.rpartition(":")
    f, _, line = f.rpartition(":")
    try:
        r = os.path.relpath(f)
        if not r.startswith(".."):
            f = r
    except ValueError:
        pass
    return f"{f}:{line}:{rest}"


def _generic(path):
    """A path with every index made generic and trailing derefs removed (publisher lookup)."""
    if path is None:
        return None
    out = [path[0]] + [("[", None) if s[0] == "[" else s for s in path[1:]]
    while len(out) > 1 and out[-1] == _STAR:
        out.pop()
    return tuple(out)


def _callback_events(clo: _Closure, reg: dict) -> list[tuple]:
    usr = reg.get("callable")
    if usr is None or usr not in clo.summaries:
        return []
    call = {"this": reg.get("this") or [], "args": [], "idx": [], "order": (), "loops": ()}
    evs = substitute(clo.closed(usr), call)
    return _dedupe([(k, _norm_root(p, reg), loc, o, lp, why) for k, p, loc, o, lp, why in evs])


def _unique_regs(units: list[_UnitData]) -> tuple[list[dict], list[dict], dict[str, str]]:
    regs, pubs, inits, seen = [], [], {}, set()
    for u in units:
        for r in u.regs:
            if r["loc"] not in seen:
                seen.add(r["loc"])
                regs.append(r)
        for p in u.pubs:
            if ("pub", p["loc"]) not in seen:
                seen.add(("pub", p["loc"]))
                pubs.append(p)
        for k, v in u.inits.items():
            inits.setdefault(k, v)
    return regs, pubs, inits


def _ros_name(reg: dict, inits: dict[str, str]) -> str | None:
    h = reg.get("handle")
    if not h:
        return None
    if h[0] == "this":
        return inits.get(f"{h[1]}|base")
    if h[0] == "member":
        return inits.get(h[1])
    return inits.get(h[1])


def _publisher_table(pubs: list[dict]) -> dict:
    table = {}
    for p in pubs:
        reg = {"cls": p["cls"], "fn_name": p["fn"], "fn": p["fn"], "param_usrs": []}
        for d in p["dest"]:
            table.setdefault(_generic(_norm_root(tuple(d), reg)), p)
    return table


def _summarise_callback(reg: dict, evs: list[tuple], pubtab: dict, names: dict[str, str]) -> dict:
    reads, writes, publishes, undecided = {}, {}, [], []
    for kind, path, loc, _order, _loops, why in sorted(evs, key=lambda e: (e[3], e[2])):
        if kind == "pub":
            p = pubtab.get(_generic(path))
            publishes.append({"publisher": _display(_generic(path), names) if path is not None else None,
                              "topic": p["topic"] if p else None,
                              "topic_expr": p["topic_expr"] if p else None, "at": _rel(loc)})
            continue
        if path is None:
            continue
        target = reads if kind == "r" else writes
        target.setdefault(_display(path, names), [])
        if _rel(loc) not in target[_display(path, names)]:
            target[_display(path, names)].append(_rel(loc))
        if why is not None:
            undecided.append({"state": _display(path, names), "access": "write" if kind == "w" else "read",
                              "at": _rel(loc), "why": why})
    seen_pub, pubs_u = set(), []
    for p in publishes:
        key = (p["publisher"], p["at"])
        if key not in seen_pub:
            seen_pub.add(key)
            pubs_u.append(p)
    return {"reads": [{"state": k, "at": v} for k, v in sorted(reads.items())],
            "writes": [{"state": k, "at": v} for k, v in sorted(writes.items())],
            "publishes": pubs_u, "undecided": _uniq_dicts(undecided)}


def _uniq_dicts(items: list[dict]) -> list[dict]:
    seen, out = set(), []
    for d in items:
        key = json.dumps(d, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _edges(cbs: list[dict], names: dict[str, str]) -> list[dict]:
    """B depends on A when A writes state that B reads before B publishes (or, for a
    B that does not publish, state B reads when B writes what a publishing callback
    reads); with a registration in a loop, A may be B (another registration)."""
    for cb in cbs:
        evs = cb["_events"]
        pubs = [e for e in evs if e[0] == "pub"]
        cb["_writes"] = [e for e in evs if e[0] == "w" and e[1] is not None]
        last = max((e[3] for e in pubs), default=None)
        loops_with_pub = {lp for e in pubs for lp in e[4]}
        cb["_reads_all"] = [e for e in evs if e[0] == "r" and e[1] is not None]
        cb["_reads_pub"] = [e for e in cb["_reads_all"] if last is not None and (
            e[3] < last or loops_with_pub.intersection(e[4]))]
        cb["_publishes"] = bool(pubs)

    def feeds(a, b, reads):
        same = a is b
        found = []
        for w in a["_writes"]:
            for r in reads:
                if _conflict(w[1], r[1], same):
                    found.append((w, r))
        return found

    relevant = {id(cb) for cb in cbs if cb["_publishes"]}
    changed = True
    while changed:
        changed = False
        for b in cbs:
            if id(b) in relevant:
                continue
            if any(feeds(b, c, c["_reads_pub"] if c["_publishes"] else c["_reads_all"]) for c in cbs
                   if id(c) in relevant and (c is not b or c["in_loop"])):
                relevant.add(id(b))
                changed = True
    out = []
    for a in cbs:
        for b in cbs:
            if id(b) not in relevant or (a is b and not b["in_loop"]):
                continue
            pairs = feeds(a, b, b["_reads_pub"] if b["_publishes"] else b["_reads_all"])
            if not pairs:
                continue
            state = sorted({_display(r[1], names) for w, r in pairs})
            certain = any(w[5] is None and r[5] is None for w, r in pairs)
            roots = {w[1][0][0] for w, r in pairs}
            out.append({"from": a["id"], "to": b["id"], "state": state, "certain": certain,
                        "through": "member" if roots == {"obj"} else "shared",
                        "evidence": _uniq_dicts([{"write": _rel(w[2]), "read": _rel(r[2])} for w, r in pairs])[:6]})
    return out


def _callback_entry(reg: dict, cid: str, ros_name, summary: dict) -> dict:
    return {
        "id": cid, "kind": reg["kind"], "api": reg["api"],
        "topic": reg["topic"], "topic_expr": reg["topic_expr"],
        "period_ns": reg["period_ns"], "period_expr": reg["period_expr"],
        "symbol": reg.get("symbol"), "symbol_alternatives": reg.get("symbol_alternatives") or [],
        "callable": reg.get("callable_kind"), "function": reg.get("function"),
        "registered_at": _rel(reg["loc"]),
        "defined_at": _rel(reg["defined_at"]) if reg.get("defined_at") else None,
        "instances": "many" if reg["in_loop"] else "one", "ros_name": ros_name, **summary,
    }


def _document(units: list[_UnitData]) -> dict:
    from roscope import __version__

    clo = _Closure(units)
    regs, pubs, inits = _unique_regs(units)
    pubtab = _publisher_table(pubs)
    names = clo.names
    nodes: dict[str, dict] = {}
    cbs: list[dict] = []
    ids: dict[str, int] = {}
    undecided_all = []
    for reg in sorted((r for r in regs if r["kind"] != "publisher"), key=lambda r: r["loc"]):
        evs = _callback_events(clo, reg)
        node_key = reg["cls"] or reg["fn_name"]
        base = reg.get("function") or f"{node_key}::?"
        ids[base] = ids.get(base, 0) + 1
        cid = base if ids[base] == 1 else f"{base}#{ids[base]}"
        summary = _summarise_callback(reg, evs, pubtab, names)
        if reg.get("callable") is None:
            summary["undecided"].append({"state": None, "access": None, "at": _rel(reg["loc"]), "why": reg["why"]})
        elif reg["callable"] not in clo.summaries:
            summary["undecided"].append({"state": None, "access": None, "at": _rel(reg["loc"]),
                                         "why": f"no definition of {reg.get('function')} in the analysed sources: "
                                                "its accesses are unknown"})
        entry = _callback_entry(reg, cid, _ros_name(reg, inits), summary)
        node = nodes.setdefault(node_key, {"name": node_key, "kind": "class" if reg["cls"] else "function",
                                           "ros_name": None, "callbacks": []})
        node["callbacks"].append(entry)
        cbs.append({"id": cid, "node": node_key, "in_loop": reg["in_loop"], "_events": evs})
        undecided_all += [dict(u, callback=cid) for u in summary["undecided"]]
    for node in nodes.values():
        rn = {cb["ros_name"] for cb in node["callbacks"]}
        node["ros_name"] = rn.pop() if len(rn) == 1 else None
    edges = _edges(cbs, names)
    node_of = {cb["id"]: cb["node"] for cb in cbs}
    for e in edges:
        e["cross_node"] = node_of[e["from"]] != node_of[e["to"]]
    notes = [f"no definition of {name} (called at {_rel(loc)}) in the analysed sources: decided from its declaration"
             for name, loc in sorted(clo.missing.items())]
    return {"format": FORMAT, "version": FORMAT_VERSION, "generator": f"roscope {__version__} deps",
            "nodes": sorted(nodes.values(), key=lambda n: n["name"]), "edges": edges,
            "undecided": undecided_all, "notes": notes}


# ---------------------------------------------------------------- the file


def write(doc: dict, path: str) -> None:
    """Writes the dependency document atomically (a temporary file, then a rename)."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise InputError(f"{path}: its directory does not exist")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory")
    atomic_write(path, json.dumps(doc, indent=1) + "\n")


def load(deps) -> dict:
    """A dependency document from a path or a dict, checked (InputError names what is wrong)."""
    where = "the dependency document"
    if isinstance(deps, (str, os.PathLike)):
        where = os.fspath(deps)
        try:
            with open(deps, encoding="utf-8") as f:
                deps = json.load(f)
        except FileNotFoundError:
            raise InputError(f"{where}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{where}: is a directory, not a dependency file") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{where}: not a JSON dependency file written by `roscope deps` ({exc})") from None
    if not isinstance(deps, dict) or deps.get("format") != FORMAT:
        raise InputError(f"{where}: not a dependency file written by `roscope deps` (no \"format\": \"{FORMAT}\")")
    v = deps.get("version")
    if not isinstance(v, int) or v > FORMAT_VERSION:
        raise InputError(f"{where}: dependency file version {v!r}; this roscope reads version {FORMAT_VERSION}")
    nodes = deps.get("nodes")
    if not isinstance(nodes, list):
        raise InputError(f"{where}: \"nodes\" must be a list")
    ids = set()
    for n in nodes:
        cbs = n.get("callbacks") if isinstance(n, dict) else None
        if not isinstance(cbs, list):
            raise InputError(f"{where}: a node without a \"callbacks\" list")
        for cb in cbs:
            if not isinstance(cb, dict) or not isinstance(cb.get("id"), str) or cb.get("kind") not in (
                    "subscription", "timer", "service"):
                raise InputError(f"{where}: a callback needs an \"id\" and a \"kind\" (subscription, timer, service)")
            if cb["id"] in ids:
                raise InputError(f"{where}: callback id {cb['id']!r} appears twice")
            ids.add(cb["id"])
    edges = deps.get("edges")
    if not isinstance(edges, list):
        raise InputError(f"{where}: \"edges\" must be a list")
    for e in edges:
        if not isinstance(e, dict) or e.get("from") not in ids or e.get("to") not in ids:
            raise InputError(f"{where}: edge {e!r} names a callback that is not in the file")
    return deps


# ---------------------------------------------------------------- matching a trace


def _norm_symbol(s) -> str | None:
    return re.sub(r"\s+", "", s) if isinstance(s, str) and s else None


def _norm_node(s) -> str | None:
    return s.strip("/") if isinstance(s, str) and s.strip("/") else None


def _node_ok(cb: dict, t: dict) -> bool:
    want = _norm_node(cb.get("ros_name"))
    if want is None:
        return True
    return want in {_norm_node(t.get("node")), _norm_node(t.get("node_namespace")), _norm_node(t.get("node_name"))}


def _fallback(cb: dict, free: list[dict]) -> tuple[list[dict], str | None]:
    if cb["kind"] == "timer":
        if cb.get("period_ns") is None:
            return [], None
        cands = [t for t in free if t["kind"] == "timer" and t["period_ns"] is not None and
                 int(t["period_ns"]) == int(cb["period_ns"]) and _node_ok(cb, t)]
        return cands, "period"
    if not cb.get("topic"):
        return [], None
    topic = cb["topic"]
    cands = [t for t in free if t["kind"] == cb["kind"] and t["topic"] is not None and _node_ok(cb, t) and (
        t["topic"] == topic or (not topic.startswith("/") and t["topic"].rsplit("/", 1)[-1] == topic))]
    return cands, "topic"


def match(db, deps) -> tuple[dict[str, list[dict]], dict]:
    """Which trace callbacks (rows of callbacks_info) each file callback is: by
    demangled symbol first; else, for the rest, by node and topic (subscriptions,
    services) or node and period (timers)."""
    doc = load(deps)
    rows = db.records("SELECT ci.callback_id, ci.proc_id, ci.pid, ci.procname, ci.node, ci.node_name, "
                      "ci.node_namespace, ci.kind, ci.topic, ci.period_ns, ci.symbol, c.node_id "
                      "FROM callbacks_info ci JOIN callbacks c USING (callback_id) ORDER BY ci.callback_id")
    by_sym: dict[str, list[dict]] = {}
    for t in rows:
        s = _norm_symbol(t["symbol"])
        if s:
            by_sym.setdefault(s, []).append(t)
    cbs = [cb for n in doc["nodes"] for cb in n["callbacks"]]
    found: dict[str, list[dict]] = {}
    report = {"matched": [], "unmatched": [], "ambiguous": [], "trace_unmatched": []}
    taken: set[int] = set()
    for cb in cbs:
        hit = []
        for sym in [cb.get("symbol")] + list(cb.get("symbol_alternatives") or []):
            hit = [t for t in by_sym.get(_norm_symbol(sym) or "\0", []) if t["kind"] == cb["kind"]]
            if hit:
                break
        if hit:
            found[cb["id"]] = hit
            taken.update(t["callback_id"] for t in hit)
            report["matched"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in hit],
                                      "by": "symbol"})
    for cb in cbs:
        if cb["id"] in found:
            continue
        cands, by = _fallback(cb, [t for t in rows if t["callback_id"] not in taken])
        if not cands:
            why = ("no trace callback has its symbol" + (f", nor its {by}" if by else
                   " and its topic or period is not known statically"))
            report["unmatched"].append({"callback": cb["id"], "why": why})
            continue
        nodes = {(t["proc_id"], t["node_id"]) for t in cands}
        syms = {_norm_symbol(t["symbol"]) for t in cands}
        if len(nodes) > 1 and len(syms) > 1:
            report["ambiguous"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in cands],
                                        "why": f"its {by} matches callbacks of {len(nodes)} nodes; give the node's "
                                               "name in the source (a literal) to choose"})
            continue
        found[cb["id"]] = cands
        taken.update(t["callback_id"] for t in cands)
        report["matched"].append({"callback": cb["id"], "trace_callbacks": [t["callback_id"] for t in cands], "by": by})
    procs = {t["proc_id"] for hit in found.values() for t in hit}
    report["trace_unmatched"] = [
        {"callback_id": t["callback_id"], "kind": t["kind"], "node": t["node"], "topic": t["topic"],
         "period_ns": t["period_ns"], "symbol": t["symbol"]}
        for t in rows if t["proc_id"] in procs and t["callback_id"] not in taken]
    return found, report


def trace_edges(db, deps) -> tuple[list[tuple[int, int]], dict]:
    """The file's dependency edges as (callback_id A, callback_id B) pairs of the
    database's `callbacks` table (B depends on A), and a report of the match
    (see `match`; plus, per file edge, the trace pairs it gave). Pairs are within
    one process, and within one node when the edge rests on member state only."""
    doc = load(deps)
    found, report = match(db, doc)
    pairs: set[tuple[int, int]] = set()
    report["edges"] = []
    for e in doc["edges"]:
        got = []
        for a in found.get(e["from"], []):
            for b in found.get(e["to"], []):
                if a["callback_id"] == b["callback_id"] or a["proc_id"] != b["proc_id"]:
                    continue
                if e.get("through", "member") == "member" and a["node_id"] is not None and b["node_id"] is not None \
                        and a["node_id"] != b["node_id"]:
                    continue
                got.append((int(a["callback_id"]), int(b["callback_id"])))
        pairs.update(got)
        report["edges"].append({"from": e["from"], "to": e["to"], "trace_edges": sorted(got)})
    return sorted(pairs), report
