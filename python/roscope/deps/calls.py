"""Calls in a function's walk for `roscope deps` (a part of `function.Function`):
calls of user functions (recorded, resolved over all sources later), calls into
libraries (decided from the declaration and the name), constructors, and calls
whose target is not known."""
from __future__ import annotations

import re

from roscope.deps import libclang as lc
from roscope.deps.cxx import (
    DEREF,
    ELEMENT,
    MAPS,
    MUTATORS,
    PART_OF,
    PASS_THROUGH,
    READ_ONLY,
    READ_ONLY_ALGOS,
    READ_WRITE,
    SMART,
    forwarding_params,
    has_body,
    is_publisher_type,
    is_smart_or_iter,
    not_state_name,
    not_state_type,
    pointer_like,
    qualname,
    smart_qual,
    strip_parens,
    strip_ref,
    type_qual,
)
from roscope.deps.libclang import overloaded_decls
from roscope.deps.paths import ELEM, STAR, first_path, join, ok
from roscope.deps.rosapi import registration_api


class Calls:
    """Calls, by what they call."""

    def call(self, c) -> list[tuple]:
        K = self.K
        ref = c.referenced
        if ref is not None:
            api = registration_api(ref)
            if api is not None:
                return self.registration(c, ref, api)
        if ref is None:
            return self.unresolved(c)
        if ref.kind == K.CONSTRUCTOR:
            return self.construct(c, ref)
        if ref.kind not in (K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CONVERSION_FUNCTION,
                            K.DESTRUCTOR):
            return self.unknown_target(c, "a call through a function object or pointer: its target is not known")
        qual = qualname(ref)
        args = list(c.get_arguments())
        if qual in PASS_THROUGH and args:
            return self.refs(args[0])
        if qual in PART_OF and args:
            r = self.refs(args[0])
            if ref.spelling in ("get_if",) or ref.spelling.endswith(("begin", "end", "data")):
                return [(p + (ELEM,), True, cd) if not a else (p, a, cd) for p, a, cd in r]
            return [(p + (ELEM,), a, cd) for p, a, cd in r]
        if ref.spelling == "operator()":
            lam, rest = self.called_lambda(c, ref, args)
            if lam is not None:
                return self.lambda_call(c, lam, rest)
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
            dest = [(p, False, cd) for p, a, cd in obj if not a] if name == "operator=" else \
                [(p + (ELEM,), False, cd) for p, a, cd in obj if not a]
            if not dest and name == "operator=":  # `out.pub = nh.advertise(...)` on a local struct
                dest = self._local_dest(c)
            self.dest.append(dest)
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
        nparams = len(list(ref.type.argument_types())) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else None
        if first is not None and first.kind == K.MEMBER_REF_EXPR and (
                first.referenced is None or first.referenced == ref or first.spelling == ref.spelling):
            base = [ch for ch in first.get_children() if ch.kind.is_expression()]
            if not base:
                return self.this_refs(), args, None
            b = base[0]
            r = self.refs(b)
            t = strip_parens(b).type
            if b.kind == K.CXX_THIS_EXPR or t.get_canonical().kind == lc.CI.TypeKind.POINTER:
                r = self.pointee(r, b)
                t = t.get_canonical().get_pointee() if t.get_canonical().kind == lc.CI.TypeKind.POINTER else None
            return r, args, t
        if ref.spelling.startswith("operator") and args and (nparams is None or len(args) == nparams + 1):
            return self.refs(args[0]), args[1:], strip_parens(args[0]).type
        return self.this_refs(), args, None

    def dispatch(self, c, ref, obj, args, objtype=None) -> list[tuple]:
        d = self.u.definition(ref)
        if d is not None:
            return self.user_call(c, ref, d, obj, args)
        decl = self.u.declaration(ref)
        if decl is not None:  # declared by the user, defined elsewhere: resolved over all sources
            return self.user_call(c, ref, decl, obj, args)
        return self.library_call(c, ref, obj, args, objtype)

    def bind_args(self, args, ptypes):
        """What each argument binds to its parameter of type `ptypes[i]` (refs; a pointer
        parameter gets the pointer's value), with the index class of each and whether it
        is taken by value (a copy: the argument is read)."""
        binds, idx, byval = [], [], []
        for i, a in enumerate(args):
            r = self.refs(a)
            pt = ptypes[i] if i < len(ptypes) else None
            by_value = pt is not None and strip_ref(pt).kind == pt.kind and pt.kind != lc.CI.TypeKind.POINTER
            if pt is not None and pt.kind == lc.CI.TypeKind.POINTER:
                r = self.ptr_value(r, a)
            elif by_value:
                self.record("r", r, a, a.type)  # the copy reads the argument
            binds.append(r)
            idx.append(self.index_of(a))
            byval.append(by_value)
        return binds, idx, byval

    def user_call(self, c, ref, d, obj, args) -> list[tuple]:
        ptypes = list(ref.type.argument_types()) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else []
        binds, idx, _byval = self.bind_args(args, ptypes)
        fallback = type(self).__new__(type(self))
        fallback.__dict__.update(self.__dict__)
        fallback.events = []
        self._signature_effects(fallback, c, ref, obj, args, binds, ptypes)
        fallback.hidden(c, f"calls {qualname(ref)}, which no analysed source defines: a publication in it is not seen")
        order = self.tick()
        usr = d.get_usr() if d.kind != self.K.LAMBDA_EXPR else self.u.lambda_usr(d)
        self.calls.append({"usr": usr, "name": qualname(ref), "this": obj, "args": binds, "idx": idx,
                           "order": order, "loops": tuple(self.loops), "loc": self.u.loc(c),
                           "virtual": bool(ref.kind == self.K.CXX_METHOD and ref.is_virtual_method()),
                           "fallback": fallback.events})
        self.n = fallback.n
        # What it returns by reference: from its summary in this unit, else its object.
        if ref.result_type.kind not in (lc.CI.TypeKind.LVALUEREFERENCE, lc.CI.TypeKind.RVALUEREFERENCE,
                                        lc.CI.TypeKind.POINTER):
            return []
        s = self.u.summary(d) if has_body(d) else None
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
                np = join(bp, ba, p[1:])
                if np is not None and ok(np, bcd):
                    out.append((np, a, bcd))
        return out

    def _signature_effects(self, sink, c, ref, obj, args, binds, ptypes) -> None:
        """What a call does by its declaration alone (used when no definition is found)."""
        if obj is not None:
            sink.record("r" if ref.kind == self.K.CXX_METHOD and ref.is_const_method() else "w", obj, c)
        for i, r in enumerate(binds):
            pt = ptypes[i] if i < len(ptypes) else None
            pass_arg(sink, r, pt, args[i], False)

    def library_call(self, c, ref, obj, args, objtype=None) -> list[tuple]:
        """A call into a library (a system header): decided from its declaration and name."""
        K = self.K
        name = ref.spelling
        parent = ref.semantic_parent
        pq = qualname(parent) if parent is not None else ""
        if name == "publish" and ("Publisher" in pq or pq.startswith(("ros::", "rclcpp"))):
            for a in args:
                self.value(a)
            self.events.append(("pub", first_path(obj), self.u.loc(c), self.tick(), tuple(self.loops), None))
            return []
        ptypes = list(ref.type.argument_types()) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else []
        if name == "operator()" and obj is not None and (pq.startswith(("std::function", "boost::function")) or
                                                         pq.startswith("std::_Function")):
            self.hidden(c, f"calls a {pq} ({self.u.text(c)[:80]}), whose target is not known: a publication there "
                           "is not seen")
        elif name not in ("operator=", "swap") and not name.startswith("~"):
            given = next((a for a in args if is_publisher_type(a.type)), None)
            if given is not None:
                self.hidden(c, f"gives the publisher {self.u.text(given)} to {qualname(ref)}, a library function "
                               "roscope does not walk into: a publication there is not seen")
        forwarding = forwarding_params(ref)
        variadic = ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO and ref.type.is_function_variadic()
        out: list[tuple] = []
        is_method = obj is not None
        quiet = is_method and (not_state_name(pq) or not_state_type(objtype) or (
            parent is not None and parent.kind in (K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE) and not_state_name(
                type_qual(parent.type))))
        pointer = objtype is not None and pointer_like(objtype) or smart_qual(pq)
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
            pass_arg(self, r, pt, a, fwd, variadic=pt is None, through=qualname(ref) not in READ_ONLY_ALGOS)
        if not is_method and ref.result_type.kind in (lc.CI.TypeKind.LVALUEREFERENCE, lc.CI.TypeKind.POINTER):
            for i, r in enumerate(arg_refs):  # std::min/max and the like return one of their arguments
                pt = ptypes[i] if i < len(ptypes) else None
                if pt is not None and pt.kind == lc.CI.TypeKind.LVALUEREFERENCE:
                    out += r
        return out

    def _object_effect(self, c, ref, name, pq, obj, args, pointer: bool, quiet: bool) -> list[tuple]:
        """What a library method does to its object (nothing recorded when `quiet`:
        ROS handles, locks, streams), and the element or pointee it gives."""
        cls = pq
        if name in DEREF and pointer:
            vals = []
            for p, a, cd in obj:
                if a:
                    vals.append((p, True, cd))
                else:
                    if not quiet:
                        self.record("r", [(p, False, cd)], c)
                    vals.append((p + (STAR,), True, cd))
            if name in ("operator*", "value"):
                return [(p, False, cd) for p, a, cd in vals]
            return vals
        if quiet:
            return []
        if name in ELEMENT and not is_smart_or_iter(cls):
            idx = self.index_of(args[0]) if name in ("operator[]", "at") and args else None
            if cls in MAPS and name == "operator[]" and not ref.is_const_method():
                self.record("w", obj, c)
                idx = None
            if name in ("find", "lower_bound", "upper_bound", "equal_range"):
                self.record("r", obj, c)  # a search reads the container
            step = ("[", idx)
            addr = name in ("data", "begin", "end", "rbegin", "rend", "cbegin", "cend", "find", "lower_bound",
                            "upper_bound")
            return [(p + (step,), addr, cd) for p, a, cd in obj if not a]
        if ref.is_const_method() or name in READ_ONLY:
            self.record("r", obj, c)
        elif name in READ_WRITE:
            self.record("rw", obj, c)
        else:
            self.record("w", obj, c)
        if ref.result_type.kind in (lc.CI.TypeKind.LVALUEREFERENCE, lc.CI.TypeKind.POINTER):
            return [(p, False, cd) for p, a, cd in obj if not a]
        return []

    def construct(self, c, ref) -> list[tuple]:
        """A constructor call: arguments by the constructor's parameters; a smart
        pointer or iterator copied from state shares what it points to."""
        args = list(c.get_arguments())
        cls = type_qual(c.type)
        ptypes = list(ref.type.argument_types()) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else []
        if (cls in SMART or pointer_like(c.type)) and len(args) == 1 and pointer_like(args[0].type):
            r = self.refs(args[0])
            self.record("r", r, args[0], args[0].type)
            if ptypes and ptypes[0].kind == lc.CI.TypeKind.RVALUEREFERENCE:
                self.record("w", r, args[0], args[0].type)  # moved from
            return [(p, a, cd if cd is not None else (None if a else len(p))) for p, a, cd in r]
        if len(args) == 1 and is_publisher_type(c.type) and is_publisher_type(args[0].type) and not pointer_like(c.type):
            # a copy of a publisher (`void publish(ros::Publisher pub, ...)` called with a member): the same
            # topic; a copy, so no access through it reaches state
            return [(p, False, len(p)) for p, a, cd in self.refs(args[0]) if not a]
        if len(args) == 1 and cls in ("std::function", "boost::function"):
            self.refs(args[0])
            return []
        d = self.u.definition(ref)
        if d is not None:
            self.user_call(c, ref, d, None, args)
            self._constructed(c, d, ref, args)
            return []
        forwarding = forwarding_params(ref)
        for i, a in enumerate(args):
            pt = ptypes[i] if i < len(ptypes) else (ptypes[-1] if ptypes else None)
            fwd = forwarding[min(i, len(forwarding) - 1)] if forwarding else False
            pass_arg(self, self.refs(a), pt, a, fwd)
        return []

    def unresolved(self, c) -> list[tuple]:
        """A call in a template whose target depends on a template parameter."""
        K = self.K
        kids = list(c.get_children())
        first = kids[0] if kids else None
        args = list(c.get_arguments())
        head = strip_parens(first) if first is not None else None
        if head is not None and head.kind == K.DECL_REF_EXPR and head.referenced is not None and (
                head.referenced.kind == K.OVERLOADED_DECL_REF):
            ov = head.referenced
            cands = [x for x in overloaded_decls(ov) if x is not None]
            user = [x for x in cands if self.u.definition(x) is not None]
            if len(user) == 1:
                return self.user_call_pattern(c, user[0], args)
            if cands and not user:
                return self.library_call(c, cands[0], None, args)
        if head is not None and head.kind == K.MEMBER_REF_EXPR and (head.referenced is None or (
                head.referenced.kind == K.OVERLOADED_DECL_REF and head.referenced.spelling == "publish")):
            # (`pub.publish(m)` with `m` of a template parameter's type: the overload set of
            # ros::Publisher::publish, chosen at instantiation)
            return self.dependent_method(c, head, args)
        return self.unknown_target(c, "a call whose target is not known statically")

    def user_call_pattern(self, c, d, args) -> list[tuple]:
        """A call of a user template from a template (types still unknown): parameters by the pattern."""
        ptypes = [p.type for p in d.get_children() if p.kind == self.K.PARM_DECL]
        binds, idx, _ = self.bind_args(args, ptypes)
        self.calls.append({"usr": self.u.definition(d).get_usr(), "name": qualname(d), "this": None, "args": binds,
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
        if name == "publish" and base and strip_parens(base[0]).kind != self.K.CXX_THIS_EXPR:
            # `pub.publish(m)` in a template (a helper `publish(ros::Publisher& pub, const M& m)`):
            # the message's type is not known yet, so the call is not resolved; the object is a
            # publisher (by its type) or of a template parameter's type, taken for one (issue 39).
            for a in args:
                self.value(a)
            self.events.append(("pub", first_path(obj), self.u.loc(c), self.tick(), tuple(self.loops), None))
            return []
        for a in args:
            r = self.refs(a)
            self.record("r", r, a, a.type)
        if name in DEREF:
            return [(p + (STAR,), name != "operator*", cd) for p, a, cd in obj if not a]
        if name in ELEMENT:
            return [(p + (ELEM,), name in ("data", "begin", "end"), cd) for p, a, cd in obj if not a]
        if name in READ_ONLY:
            self.record("r", obj, c)
        elif name in READ_WRITE:
            self.record("rw", obj, c)
        elif name in MUTATORS:
            self.record("w", obj, c)
        else:
            self.record("r", obj, c)
            self.record("w", obj, c, why=f"method '{name}' of a template-dependent type: counted as a write")
        return []

    def unknown_target(self, c, why: str) -> list[tuple]:
        self.hidden(c, f"{why} ({self.u.text(c)[:80]}): a publication there is not seen")
        for a in c.get_arguments():
            r = self.refs(a)
            self.record("r", r, a, a.type)
            vals = [x for x in r if x[1]]
            if vals:
                self.record("w", self.pointee(vals, a), a, None, why=why + "; the state it is given is counted as written")
            elif a.type.get_canonical().kind == lc.CI.TypeKind.LVALUEREFERENCE or strip_parens(a).kind in (
                    self.K.DECL_REF_EXPR, self.K.MEMBER_REF_EXPR) and r:
                self.record("w", r, a, a.type, why=why + "; the state it is given is counted as written")
        return []


def pass_arg(fn, refs, ptype, arg, forwarding: bool, variadic: bool = False, through: bool = False) -> None:
    """Records what passing `refs` to a parameter of type `ptype` does. `through`: a
    non-const iterator into state given by value (to a library algorithm) writes
    what it points to."""
    ci = lc.CI
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
        if ctype is not None and not_state_type(ctype):
            return
        fn.record("r" if pointee_t.is_const_qualified() else "w", [(p, False, cd) for p, a, cd in vals], arg, ctype)
    else:
        fn.record("r", refs, arg, arg.type)
        vals = [(p, False, cd) for p, a, cd in refs if a]
        if vals and through and pointer_like(arg.type):
            const = re.search(r"const_iterator|<const |const \*", strip_ref(arg.type).get_canonical().spelling)
            fn.record("r" if const else "w", vals, arg, None)
