"""Lambdas in a function's walk for `roscope deps` (a part of `function.Function`)
that are not callbacks: called where they are written, or kept in a variable and
called later (a helper that stamps and publishes a message for several callbacks)."""
from __future__ import annotations

from roscope.deps import libclang as lc
from roscope.deps.cxx import find_lambda, strip_wrappers


class Lambdas:
    """Lambdas run in place and lambdas called through a variable."""

    def inline_lambda(self, lam) -> None:
        """A lambda that is not a callback: its body counts as run where it is written."""
        for ch in lam.get_children():
            if ch.kind == self.K.COMPOUND_STMT:
                self.stmt(ch)

    def called_lambda(self, c, ref, args):
        """(The lambda written in the analysed code that a call of `operator()` calls,
        the call's arguments without the lambda), or (None, args): `f(x)` or
        `f.operator()(x)` with `auto f = [...](...) {...}` (f captured or not), and
        `[...](...) {...}(x)`."""
        K = self.K
        kids = list(c.get_children())
        first = kids[0] if kids else None
        if first is not None and first.kind == K.MEMBER_REF_EXPR:
            base = [ch for ch in first.get_children() if ch.kind.is_expression()]
            target, rest = (base[0] if base else None), args
        else:
            nparams = len(list(ref.type.argument_types())) if ref.type.kind == lc.CI.TypeKind.FUNCTIONPROTO else None
            if not args or (nparams is not None and len(args) != nparams + 1):
                return None, args
            target, rest = args[0], args[1:]
        lam = self._lambda_of(target)
        if lam is None:
            return None, args
        decl = lam.type.get_declaration()
        if decl is None or ref.semantic_parent is None or decl != ref.semantic_parent:
            return None, args
        return lam, rest

    def _lambda_of(self, e):
        """The lambda expression `e` is, or that the variable `e` names was initialised with."""
        K = self.K
        e = strip_wrappers(e) if e is not None else None
        if e is None:
            return None
        if e.kind == K.LAMBDA_EXPR:
            return e
        if e.kind == K.DECL_REF_EXPR and e.referenced is not None and e.referenced.kind == K.VAR_DECL:
            for ch in e.referenced.get_children():
                if ch.kind.is_expression():
                    return find_lambda(ch)
        return None

    def lambda_call(self, c, lam, args) -> list[tuple]:
        """A call of a lambda written in the analysed code (a helper kept in a variable,
        e.g. one that stamps and publishes a message for several callbacks): a call of
        its summary, as of a user function (before, it was a library call: what the
        lambda does, its publications too, was lost)."""
        s = self.u.lambda_summary(lam, self._home_of(lam))
        if s is None:
            return self.unknown_target(c, "a lambda that calls itself: its target is not followed")
        ptypes = [p.type for p in lam.get_children() if p.kind == self.K.PARM_DECL]
        binds, idx, _byval = self.bind_args(args, ptypes)
        self.calls.append({"usr": s["usr"], "name": s["name"], "this": self.this_refs(), "args": binds, "idx": idx,
                           "order": self.tick(), "loops": tuple(self.loops), "loc": self.u.loc(c), "virtual": False,
                           "fallback": []})
        return []

    def _home_of(self, lam):
        """The function (this one, or one around it) whose body holds the lambda `lam`."""
        fn = self
        off, f = lam.extent.start.offset, lam.extent.start.file
        while fn is not None:
            ext = fn.c.extent
            if ext.start.file is not None and f is not None and ext.start.file.name == f.name and (
                    ext.start.offset <= off < ext.end.offset):
                return fn
            fn = fn.outer
        return self
