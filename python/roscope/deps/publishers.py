"""Where publishers go, for `roscope deps` (a part of `function.Function`): the
object a publisher is assigned to when it is a local variable of the registering
function (not state), and the user constructors given a publisher, whose pointer
or reference members then stand for it (document._publisher_table; issue 39)."""
from __future__ import annotations

from roscope.deps import libclang as lc
from roscope.deps.cxx import is_publisher_type, strip_parens
from roscope.deps.libclang import unop
from roscope.deps.paths import STAR


class Publishers:
    """Publisher destinations that the walk of state does not give."""

    def _local_dest(self, c) -> list[tuple]:
        """The object an `operator=` call assigns to, when it is a local variable of this
        function or a field of one (not state, so `refs` gives nothing): where a publisher
        created by the right-hand side goes."""
        K = self.K
        kids = [ch for ch in c.get_children() if ch.kind.is_expression()]
        e = kids[0] if kids else None
        if e is not None and e.kind == K.MEMBER_REF_EXPR and e.spelling == "operator=":
            base = [ch for ch in e.get_children() if ch.kind.is_expression()]
            e = base[0] if base else None
        elif e is not None and strip_parens(e).kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) and len(kids) > 1:
            e = kids[1]  # operator=(lhs, rhs): the callee comes first
        p = self._local_path(e)
        return [(p, False, None)] if p is not None else []

    def _local_path(self, e) -> tuple | None:
        """The path of a local variable of this function, or of a field of one, that `e` names."""
        K = self.K
        steps = []
        while e is not None:
            e = strip_parens(e)
            if e.kind == K.MEMBER_REF_EXPR and e.referenced is not None and e.referenced.kind == K.FIELD_DECL:
                base = [ch for ch in e.get_children() if ch.kind.is_expression()]
                if not base or base[0].type.get_canonical().kind == lc.CI.TypeKind.POINTER:
                    return None
                steps.insert(0, (".", e.referenced.spelling))
                e = base[0]
            elif e.kind == K.DECL_REF_EXPR and e.referenced is not None and e.referenced.kind == K.VAR_DECL:
                self.u.name_var(e.referenced)
                return (("var", e.referenced.get_usr()),) + tuple(steps)
            else:
                return None
        return None

    def _constructed(self, c, d, ref, args) -> None:
        """A user constructor's call, when it is given a publisher (by reference or
        pointer) and the object it makes is known (a variable, a member): where its
        pointer or reference members to publishers point (document._publisher_table)."""
        dest = [p for p, a, cd in (self.dest[-1] if self.dest else []) if not a]
        if not dest or not any(is_publisher_type(a.type) for a in args):
            return
        ptypes = list(ref.type.argument_types()) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else []
        binds = []
        for i, a in enumerate(args):
            pt = ptypes[i] if i < len(ptypes) else None
            r = self.refs(a) if is_publisher_type(a.type) else []
            if not r and is_publisher_type(a.type):  # `Sender s(&pub)` in main: pub is a local, not state
                e = strip_parens(a)
                addr = e.kind == self.K.UNARY_OPERATOR and unop(e) == "&"
                if addr:
                    e = next((ch for ch in e.get_children() if ch.kind.is_expression()), None)
                lp = self._local_path(e) if e is not None else None
                r = [(lp, addr, None)] if lp is not None else []
            if pt is not None and pt.kind == lc.CI.TypeKind.POINTER:
                r = [(p, True, cd) if a2 else (p + (STAR,), True, cd) for p, a2, cd in r]
            binds.append([(list(p), a2) for p, a2, _cd in r])
        self.u.pubs.append({"ctor": d.get_usr(), "this": dest, "args": binds, "dest": [], "topic": None,
                            "topic_expr": None, "loc": self.u.loc(c), "fn": self.usr, "cls": self.cls})
