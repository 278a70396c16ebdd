"""ROS in C++ sources for `roscope deps`: which calls register callbacks and
create publishers (roscpp, rclcpp), the symbol a tracer records for a lambda, and
topic names and timer periods known at compile time."""
from __future__ import annotations

import re

from roscope.deps import libclang as lc
from roscope.deps.cxx import qualname, strip_parens, strip_ref, strip_wrappers, type_qual
from roscope.deps.libclang import binop, demangle

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


def lambda_symbol(lam, gcc_number: int | None) -> tuple[str | None, list[str]]:
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


def registration_api(ref):
    """(kind, position of the topic/service/period argument, 'roscpp'|'rclcpp') of a
    callback or publisher registration call, or None."""
    K = lc.CI.CursorKind
    name = ref.spelling
    if name not in _ROS1_API and name not in _ROS2_API and name not in _ROS2_FREE:
        return None
    parent = ref.semantic_parent
    pq = qualname(parent) if parent is not None else ""
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


def string_literal(tok: str) -> str | None:
    m = re.fullmatch(r'(?:u8|u|U|L)?"((?:[^"\\]|\\.)*)"', tok, re.S)
    if not m:
        return None
    try:
        return m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return m.group(1)


def const_string(c) -> str | None:
    """A string known at compile time: a literal, std::string("..."), a const variable initialised with one."""
    K = lc.CI.CursorKind
    c = strip_wrappers(c)
    if c is None:
        return None
    if c.kind == K.STRING_LITERAL:
        return string_literal(c.spelling)
    if c.kind == K.CALL_EXPR and c.referenced is not None and c.referenced.kind == K.CONSTRUCTOR:
        args = list(c.get_arguments())
        return const_string(args[0]) if args else None
    if c.kind == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.VAR_DECL:
        v = c.referenced
        if v.type.is_const_qualified() or "constexpr" in {t.spelling for t in v.get_tokens()}:
            for ch in v.get_children():
                if ch.kind.is_expression():
                    return const_string(ch)
    return None


_UNITS_NS = {"ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000, "h": 3_600_000_000_000}


def duration_ns(c) -> int | None:
    """A timer period known at compile time, in ns (ros::Duration(0.1), 100ms, std::chrono::milliseconds(100) ...)."""
    v = _eval_duration(c, 0)
    if v is None:
        return None
    kind, x = v
    if kind == "num":  # a bare number given to createTimer: ROS 1 would not compile it; rclcpp takes durations
        return None
    return int(round(x))


def _eval_duration(c, depth):
    K = lc.CI.CursorKind
    if c is None or depth > 12:
        return None
    c = strip_parens(c)
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
        cls = type_qual(c.type)
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
            op = binop(c)
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
    s = strip_ref(t).get_canonical().spelling
    m = re.search(r"std::ratio<(\d+)L?,\s*(\d+)L?>", s)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(2))
