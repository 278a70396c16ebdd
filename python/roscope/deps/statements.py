"""Statements of a function's walk for `roscope deps` (a part of `function.Function`)."""
from __future__ import annotations

from roscope.deps import libclang as lc
from roscope.deps.cxx import pointer_like, var_key
from roscope.deps.paths import ELEM


class Statements:
    """Blocks, declarations, loops, control flow and returns."""

    def stmt(self, c) -> None:
        self.deeper(c)
        try:
            self._stmt(c)
        finally:
            self.shallower()

    def _stmt(self, c) -> None:
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
                    self.returns.extend(self.ptr_value(r, ch) if ch.type.get_canonical().kind == lc.CI.TypeKind.POINTER
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
                elems.append((p + (ELEM,), False, cd))
        if var is not None:
            t = var.type.get_canonical()
            names = self._bindings(var) or [var_key(var)]
            if t.kind in (lc.CI.TypeKind.LVALUEREFERENCE, lc.CI.TypeKind.RVALUEREFERENCE):
                for n in names:
                    self.alias[n] = elems
            else:
                self.record("r", elems, var, var.type)
                if pointer_like(var.type):
                    for n in names:
                        self.alias[n] = [(p, a, len(p)) for p, a, cd in elems]
        body = kids[-1] if len(kids) >= 3 else None  # (the loop variable, the range, the body)
        if body is not None and body is not rng:
            self.stmt(body)

    def _bindings(self, c) -> list[str]:
        """The names bound by a structured binding declaration (auto& [a, b] = ...)."""
        if c.kind != self.K.UNEXPOSED_DECL:
            return []
        return [var_key(ch) for ch in c.get_children() if ch.kind == self.K.UNEXPOSED_DECL]

    def decomposition(self, c) -> None:
        """auto& [a, b] = x: a and b stand for (parts of) x; by value, x is read."""
        init = None
        for ch in c.get_children():
            if ch.kind.is_expression():
                init = ch
        if init is None:
            return
        t = c.type.get_canonical()
        if t.kind in (lc.CI.TypeKind.LVALUEREFERENCE, lc.CI.TypeKind.RVALUEREFERENCE):
            r = self.refs(init)
            for n in self._bindings(c):
                self.alias[n] = r
        else:
            self.value(init)

    def vardecl(self, c) -> None:
        ci = lc.CI
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
        elif pointer_like(t):
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
