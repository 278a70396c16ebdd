"""C++ types and names for `roscope deps`: which objects are state (not ROS
handles, locks or streams), what library methods do to their object, qualified
names, and small walks through casts, references and smart pointers."""
from __future__ import annotations

import re

from roscope.deps import libclang as lc
from roscope.deps.libclang import specialized_template

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
NOT_STATE_VARS = re.compile(r"^(__rosconsole|__rcutils|__rclcpp|rosconsole_)")
SMART = {"std::shared_ptr", "std::unique_ptr", "std::weak_ptr", "std::optional", "std::auto_ptr",
          "boost::shared_ptr", "boost::scoped_ptr", "boost::weak_ptr", "boost::intrusive_ptr", "boost::optional",
          "std::reference_wrapper", "boost::reference_wrapper"}
MAPS = {"std::map", "std::unordered_map", "std::multimap", "boost::unordered_map", "boost::container::flat_map"}
#: Methods that give an element (or the pointee) without changing the object.
ELEMENT = {"operator[]", "at", "front", "back", "data", "begin", "end", "rbegin", "rend", "cbegin", "cend",
            "find", "lower_bound", "upper_bound", "equal_range", "top"}
DEREF = {"operator*", "operator->", "get", "value", "lock"}
#: Non-const methods that read the object as well as change it.
READ_WRITE = {"operator++", "operator--", "operator+=", "operator-=", "operator*=", "operator/=", "operator%=",
               "operator|=", "operator&=", "operator^=", "operator<<=", "operator>>=", "fetch_add", "fetch_sub",
               "fetch_and", "fetch_or", "fetch_xor", "exchange", "compare_exchange_weak", "compare_exchange_strong",
               "pop", "pop_front", "pop_back", "swap", "splice", "merge", "sort", "unique", "reverse", "remove",
               "remove_if", "extract", "append", "increment", "decrement"}
#: Names of methods known not to change their object (for calls on dependent types in templates).
READ_ONLY = {"size", "empty", "length", "c_str", "count", "contains", "capacity", "max_size", "load",
              "operator==", "operator!=", "operator<", "operator>", "operator<=", "operator>=", "operator bool",
              "operator!", "toSec", "toNSec", "seconds", "nanoseconds", "getTopic", "getNamespace", "get_name",
              "get_logger", "now", "use_count", "has_value", "str", "substr", "compare", "key", "second", "first"}
MUTATORS = {"push_back", "push_front", "emplace_back", "emplace_front", "emplace", "insert", "erase", "clear",
             "resize", "reserve", "assign", "reset", "store", "operator=", "set", "fill", "shrink_to_fit",
             "emplace_hint", "try_emplace", "insert_or_assign", "push"}
PASS_THROUGH = {"std::move", "std::forward", "std::ref", "std::cref", "std::as_const", "boost::ref",
                 "boost::cref", "std::addressof", "std::move_if_noexcept"}
BIND = {"std::bind", "boost::bind", "std::bind_front"}
#: Library functions that give (a part of) their argument: std::get<1>(t) is t's element, not a write of t.
PART_OF = {"std::get", "std::get_if", "boost::get", "std::begin", "std::end", "std::cbegin", "std::cend",
            "std::rbegin", "std::rend", "std::data"}
#: Algorithms that only read through the iterators they are given (others, e.g. std::sort, write through them).
READ_ONLY_ALGOS = {f"std::{n}" for n in (
    "find", "find_if", "find_if_not", "find_end", "find_first_of", "count", "count_if", "accumulate", "reduce",
    "all_of", "any_of", "none_of", "min_element", "max_element", "minmax_element", "equal", "mismatch", "distance",
    "lower_bound", "upper_bound", "binary_search", "equal_range", "search", "search_n", "adjacent_find", "is_sorted",
    "is_sorted_until", "includes", "inner_product", "lexicographical_compare", "next", "prev", "is_permutation",
    "transform_reduce", "partial_sum", "adjacent_difference")}

_SYSTEM_DIRS = ("/usr/include/", "/usr/lib/", "/opt/ros/", "/usr/local/include/")


def system_path(path: str) -> bool:
    return path.startswith(_SYSTEM_DIRS)


_QUAL: dict = {}
_TYPES: dict = {}
_FWD: dict = {}


def qualname(c) -> str:
    """'ns::Class::name' of a declaration (inline namespaces like std::__cxx11 left out)."""
    try:
        return _QUAL[c]
    except KeyError:
        pass
    q = _QUAL[c] = _qualname_uncached(c)
    return q


def _qualname_uncached(c) -> str:
    ci = lc.CI
    parts = []
    while c is not None and c.kind != ci.CursorKind.TRANSLATION_UNIT:
        name = c.spelling
        if c.kind == ci.CursorKind.NAMESPACE and (name.startswith("__") or not name):
            pass
        elif name:
            parts.append(name)
        c = c.semantic_parent
    return "::".join(reversed(parts))


def strip_ref(t):
    ci = lc.CI
    while t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        t = t.get_pointee()
    return t


def type_qual(t) -> str:
    """Qualified name of a (class) type's declaration, or the canonical spelling."""
    ci = lc.CI
    t = strip_ref(t).get_canonical()
    d = t.get_declaration()
    if d is not None and d.kind != ci.CursorKind.NO_DECL_FOUND:
        return qualname(d)
    return t.spelling.replace("const ", "").replace("volatile ", "").strip()


def not_state_name(q: str) -> bool:
    return q in _NOT_STATE or q.startswith(_NOT_STATE_NS)


def unwrap(t, depth: int = 0):
    """The type under references, pointers, arrays and smart pointers."""
    ci = lc.CI
    t = strip_ref(t).get_canonical()
    if depth > 4:
        return t
    if t.kind == ci.TypeKind.POINTER:
        return unwrap(t.get_pointee(), depth + 1)
    if t.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        return unwrap(t.element_type, depth + 1)
    if type_qual(t) in SMART and t.get_num_template_arguments() > 0:
        return unwrap(t.get_template_argument_type(0), depth + 1)
    return t


def not_state_type(t) -> bool:
    if t is None:
        return False
    key = ("ns", t.get_canonical().spelling)
    hit = _TYPES.get(key)
    if hit is None:
        try:
            hit = not_state_name(type_qual(unwrap(t)))
        except RecursionError:
            raise  # (it was taken for "is state" here, silently: a walk that deep is an error, workers.py)
        except Exception:
            hit = False
        _TYPES[key] = hit
    return hit


_PUBLISHER = re.compile(r"\b(?:ros::Publisher|rclcpp::Publisher(?:Base)?\b|rclcpp_lifecycle::LifecyclePublisher|"
                        r"Publisher<)")


def is_publisher_type(t) -> bool:
    """A ROS publisher, or a reference, pointer or smart pointer to one (by the type's
    spelling: also a template-dependent `typename rclcpp::Publisher<M>::SharedPtr`)."""
    if t is None:
        return False
    try:
        return bool(_PUBLISHER.search(t.spelling) or _PUBLISHER.search(t.get_canonical().spelling))
    except Exception:
        return False


def smart_qual(q: str) -> bool:
    """A smart pointer class, or one of libstdc++'s bases of one."""
    return q in SMART or q.startswith(("std::__shared_ptr", "std::__weak_ptr", "std::__uniq_ptr", "std::_Optional",
                                        "boost::optional_detail"))


def pointer_like(t) -> bool:
    ci = lc.CI
    t = strip_ref(t).get_canonical()
    if t.kind == ci.TypeKind.POINTER:
        return True
    q = type_qual(t)
    return smart_qual(q) or "iterator" in q.rsplit("::", 1)[-1].lower()


def forwarding_params(ref) -> list[bool]:
    """Per parameter of a library function template: is it a forwarding reference (T&&)?"""
    hit = _FWD.get(ref)
    if hit is None:
        hit = _FWD[ref] = _forwarding_uncached(ref)
    return hit


def _forwarding_uncached(ref) -> list[bool]:
    tmpl = specialized_template(ref)
    if tmpl is None:
        return []
    K = lc.CI.CursorKind
    tparams = {ch.spelling for ch in tmpl.get_children() if ch.kind == K.TEMPLATE_TYPE_PARAMETER}
    out = []
    for p in tmpl.get_children():
        if p.kind != K.PARM_DECL:
            continue
        s = p.type.spelling.replace("...", "").replace(" ", "")
        out.append(s.endswith("&&") and s[:-2] in tparams)
    return out


def has_body(c) -> bool:
    """A written definition (implicit copy constructors and the like are placed at their class's name)."""
    K = lc.CI.CursorKind
    parent = c.semantic_parent
    if parent is not None and parent.location.file is not None and c.location.file is not None and (
            parent.location.offset == c.location.offset and parent.location.file.name == c.location.file.name):
        return False
    return any(ch.kind in (K.COMPOUND_STMT, K.CXX_TRY_STMT) for ch in c.get_children())


def is_smart_or_iter(q: str) -> bool:
    return smart_qual(q) or "iterator" in q.rsplit("::", 1)[-1].lower()


def strip_parens(c):
    K = lc.CI.CursorKind
    while c is not None and c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def strip_wrappers(c):
    """Through casts, temporaries and std::function/boost::function conversions."""
    K = lc.CI.CursorKind
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


def find_lambda(c):
    e = strip_wrappers(c)
    return e if e is not None and e.kind == lc.CI.CursorKind.LAMBDA_EXPR else None


def clear_caches() -> None:
    """Forgets the cursors cached for one translation unit (they are not valid in the next)."""
    _QUAL.clear()
    _FWD.clear()


def param_key(p) -> str:
    """A parameter's key (its offset and name: one for the declaration and its uses)."""
    return f"{p.location.offset}:{p.spelling}"


def var_key(c) -> str:
    """A variable's key: its USR, or its offset and name."""
    return c.get_usr() or f"{c.location.offset}:{c.spelling}"
