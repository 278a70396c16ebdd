"""Expressions of a function's walk for `roscope deps` (a part of `function.Function`).

An expression designates objects (as refs, see `paths`); reading or writing them
is recorded by the expression around it (`value` reads)."""
from __future__ import annotations

import re

from roscope.deps import libclang as lc
from roscope.deps.cxx import NOT_STATE_VARS, is_publisher_type, not_state_type, param_key, strip_parens, strip_ref, var_key
from roscope.deps.libclang import binop, global_storage, unop
from roscope.deps.paths import ELEM, STAR, ok


class Expressions:
    """What an expression designates, and the accesses of its sub-expressions."""

    def value(self, c) -> list[tuple]:
        """Evaluates `c` and reads the object it designates (an rvalue use)."""
        r = self.refs(c)
        inner = strip_parens(c)
        if inner.kind in (self.K.BINARY_OPERATOR, self.K.COMPOUND_ASSIGNMENT_OPERATOR) and binop(inner).endswith("="):
            if binop(inner) not in ("==", "!=", "<=", ">="):
                return r
        if inner.kind == self.K.UNARY_OPERATOR and unop(inner) in ("++", "--"):
            return r
        self.record("r", r, c, c.type)
        return r

    def ptr_value(self, refs, c) -> list[tuple]:
        """The pointer value of an expression designating a pointer object (or an array)."""
        out = []
        is_array = c is not None and c.type.get_canonical().kind in (lc.CI.TypeKind.CONSTANTARRAY,
                                                                     lc.CI.TypeKind.INCOMPLETEARRAY)
        for p, a, cd in refs:
            if a:
                out.append((p, True, cd))
            elif is_array:
                out.append((p + (ELEM,), True, cd))
            else:
                if c is not None:
                    self.record("r", [(p, False, cd)], c, c.type)
                out.append((p + (STAR,), True, cd))
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
        self.deeper(c)
        try:
            return self._refs(c)
        finally:
            self.shallower()

    def _refs(self, c) -> list[tuple]:
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
            if global_storage(ref) == 1:
                if self.u.is_user(ref) and is_publisher_type(ref.type):  # a global publisher: not state, but
                    self.u.name_var(ref)  # where a publication goes (its accesses are left out by its type)
                    return [((("var", usr),), False, None)]
                if not self.u.is_user(ref) or NOT_STATE_VARS.match(ref.spelling) or not_state_type(ref.type):
                    return []
                self.u.name_var(ref)
                return [((("var", usr),), False, None)]
            if self.is_lambda and self.outside(ref):
                return self.captured(ref)
            return []
        if ref.kind == K.PARM_DECL:
            usr = ref.get_usr()
            if usr and usr in self.alias:
                return list(self.alias[usr])
            i = self.params.get(param_key(ref))
            if i is None:
                return self.captured(ref) if self.is_lambda else []
            return [((("param", i),), False, 1 if i in self.byval else None)]
        if ref.kind == K.UNEXPOSED_DECL:  # a structured binding
            return list(self.alias.get(var_key(ref), []))
        if ref.kind == K.FIELD_DECL:  # a member named inside a lambda without this-> (clang shows MEMBER_REF_EXPR)
            return [(r[0] + ((".", ref.spelling),), False, None) for r in self.this_refs()]
        return []

    def captured(self, ref) -> list[tuple]:
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
            if not self.u.is_user(ref) or not_state_type(ref.type):
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
            arrow = base.type.get_canonical().kind == lc.CI.TypeKind.POINTER or base.kind == K.CXX_THIS_EXPR
        if base is None:
            brefs = self.this_refs()
        else:
            brefs = self.refs(base)
            if arrow or base.kind == K.CXX_THIS_EXPR:
                brefs = self.pointee(brefs, base)
        return [(p + ((".", name),), False, cd) for p, a, cd in brefs if not a]

    def index_of(self, c):
        """The index class of a subscript: constant, parameter, per-registration capture, or None."""
        c = strip_parens(c)
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
                i = self.params.get(param_key(ref))
                if i is not None:
                    return ("p", i)
            if self.is_lambda and (self.in_captures(ref) or (
                    self.outside(ref) and self.caps.get(ref.spelling, self.cap_default) in ("=", "init"))):
                return ("c", ref.get_usr() or ref.spelling)
        return None

    def subscript(self, c) -> list[tuple]:
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        if len(kids) != 2:
            return []
        base, idx = kids
        self.value(idx)
        elems = self.ptr_value(self.refs(base), strip_parens(base))
        step = ("[", self.index_of(idx))
        out = []
        for p, _a, cd in elems:
            if p and p[-1] == ELEM:
                p = p[:-1]
            out.append((p + (step,), False, cd))
        return out

    def unary(self, c) -> list[tuple]:
        op = unop(c)
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
        op = binop(c)
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
        if op in ("+", "-") and c.type.get_canonical().kind == lc.CI.TypeKind.POINTER:
            for side in (lhs, rhs):
                if side.type.get_canonical().kind in (lc.CI.TypeKind.POINTER, lc.CI.TypeKind.CONSTANTARRAY):
                    return self.ptr_value(self.refs(side), side)
        self.value(lhs)
        self.value(rhs)
        return []

    def assign(self, lhs, left, rhs, right, c) -> None:
        """`lhs = rhs` for scalars (class types assign through operator=)."""
        ci = lc.CI
        inner = strip_parens(lhs)
        if inner.kind == self.K.DECL_REF_EXPR and inner.referenced is not None and inner.referenced.get_usr() in self.alias:
            usr = inner.referenced.get_usr()
            if lhs.type.get_canonical().kind == ci.TypeKind.POINTER:
                self.alias[usr] = self.alias[usr] + self.ptr_value(right, rhs)
                return
        if rhs.type.get_canonical().kind == ci.TypeKind.POINTER:
            vals = self.ptr_value(right, rhs)
            if is_publisher_type(lhs.type):  # `out_ = &pub_`: publications through out_ are pub_'s
                self.alias_publisher(left, [(p, False, cd) for p, a, cd in vals if a], c)
            self._escape(vals, left, c)
        else:
            self.record("r", right, rhs, rhs.type)
        self.record("w", left, c, lhs.type)

    def _escape(self, vals, left, c) -> None:
        """A pointer to state stored into state: accesses through the copy are not
        connected to the original (undecided)."""
        for p, a, cd in vals:
            if not a or not ok(p, cd):
                continue
            if any(ok(lp, lcd) for lp, la, lcd in left if not la):
                self.events.append(("w", p, self.u.loc(c), self.tick(), tuple(self.loops),
                                    "its address is stored in another variable; accesses through that pointer "
                                    "are not connected to it"))

    def init_list(self, c) -> list[tuple]:
        """Braced initializers: element k initialises field k of the destination."""
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        dest = self.dest[-1] if self.dest else []
        fields = []
        decl = strip_ref(c.type).get_canonical().get_declaration()
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
