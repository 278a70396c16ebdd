"""Registrations in a function's walk for `roscope deps` (a part of
`function.Function`): the callbacks a node registers (subscriptions, timers,
services) and the publishers it creates."""
from __future__ import annotations

from roscope.deps import libclang as lc
from roscope.deps.cxx import BIND, find_lambda, pointer_like, qualname, strip_parens, strip_wrappers
from roscope.deps.libclang import demangle, unop
from roscope.deps.paths import STAR
from roscope.deps.rosapi import const_string, duration_ns, lambda_symbol


class Registrations:
    """Callback and publisher registrations."""

    def registration(self, c, ref, api) -> list[tuple]:
        kind, pos, flavour = api
        args = list(c.get_arguments())
        name_arg = args[pos] if pos < len(args) else None
        base = self._handle(c)
        if kind == "publisher":
            dest = self.dest[-1] if self.dest else []
            self.u.pubs.append({"dest": [p for p, a, cd in dest if not a], "topic": const_string(name_arg),
                                "topic_expr": self.u.text(name_arg) if name_arg is not None else None,
                                "loc": self.u.loc(c), "fn": self.usr, "cls": self.cls})
            return []
        cb = None
        for i, a in enumerate(args[pos + 1:], start=pos + 1):
            cb = self.callable(a, args[i + 1:])
            if cb is not None:
                break
        reg = {"kind": kind, "api": flavour, "loc": self.u.loc(c), "fn": self.usr, "fn_name": self.display_name(),
               "cls": self.cls, "in_loop": bool(self.loops), "handle": base,
               "param_usrs": self.param_usrs,
               "topic": None, "topic_expr": None, "period_ns": None, "period_expr": None}
        if kind == "timer":
            reg["period_ns"] = duration_ns(name_arg) if name_arg is not None else None
            reg["period_expr"] = self.u.text(name_arg) if name_arg is not None else None
        else:
            reg["topic"] = const_string(name_arg)
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
        b = strip_parens(b)
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
                        lit = self.first_literal(ch)
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
        e = strip_wrappers(a)
        if e is None:
            return None
        if e.kind == K.LAMBDA_EXPR:
            s = self.u.lambda_summary(e, self)
            if s is None:
                return None
            sym, alt = lambda_symbol(e, self.lambda_number(e))
            return {"callable": s["usr"], "callable_kind": "lambda", "symbol": sym, "symbol_alternatives": alt,
                    "this": self.this_refs(), "function": s["name"], "defined_at": self.u.loc(e)}
        if e.kind == K.UNARY_OPERATOR and unop(e) == "&":
            inner = [ch for ch in e.get_children() if ch.kind.is_expression()]
            e = strip_parens(inner[0]) if inner else e
        if e.kind == K.DECL_REF_EXPR and e.referenced is not None:
            r = e.referenced
            if r.kind == K.VAR_DECL:
                for ch in r.get_children():
                    if ch.kind.is_expression():
                        lam = find_lambda(ch)
                        if lam is not None:
                            return self.callable(lam, rest)
                return None
            if r.kind in (K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
                return self._function_callable(r, rest, "member" if r.kind == K.CXX_METHOD and not r.is_static_method()
                                               else "function")
        if e.kind == K.CALL_EXPR and e.referenced is not None and qualname(e.referenced) in BIND:
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
            stack = [self.c]  # (when this function is itself a lambda: its own body)
            while stack:
                for ch in stack.pop().get_children():
                    if ch.kind == self.K.LAMBDA_EXPR:
                        found.append(ch.extent.start.offset)
                    else:
                        stack.append(ch)
            self._lambdas = sorted(found)
        off = lam.extent.start.offset
        return self._lambdas.index(off) + 1 if off in self._lambdas else None

    def _function_callable(self, r, rest, kind):
        d = self.u.definition(r)
        usr = d.get_usr() if d is not None else r.get_usr()
        this = []
        if kind == "member" and rest:
            o = rest[0]
            this = self.pointee(self.refs(o), o) if o.type.get_canonical().kind == lc.CI.TypeKind.POINTER or \
                strip_parens(o).kind == self.K.CXX_THIS_EXPR else self._smart_pointee(o)
        sym = demangle([r.mangled_name])[0] if r.mangled_name else qualname(r)
        return {"callable": usr, "callable_kind": kind, "symbol": sym, "this": this, "function": qualname(r),
                "defined_at": self.u.loc(d if d is not None else r)}

    def _smart_pointee(self, o) -> list[tuple]:
        r = self.refs(o)
        if pointer_like(o.type):
            return [(p + (STAR,), False, cd) for p, a, cd in r if not a] + [(p, False, cd) for p, a, cd in r if a]
        return r
