"""One function's summary for `roscope deps`: a walk over its body (or a
lambda's) that records the accesses it makes, the calls and the publications.

The walk is cut by what it meets: statements (`statements.Statements`),
expressions (`expressions.Expressions`), calls into user code and libraries
(`calls.Calls`), lambdas that are not callbacks (`lambdas.Lambdas`), callback and publisher registrations
(`registrations.Registrations`), where publishers go (`publishers.Publishers`); `Function` holds the state they share."""
from __future__ import annotations

from collections.abc import Iterable

from roscope.deps import libclang as lc
from roscope.deps.calls import Calls
from roscope.deps.cxx import is_publisher_type, not_state_type, param_key, qualname, strip_ref
from roscope.deps.expressions import Expressions
from roscope.deps.lambdas import Lambdas
from roscope.deps.paths import ok
from roscope.deps.publishers import Publishers
from roscope.deps.registrations import Registrations
from roscope.deps.rosapi import string_literal
from roscope.deps.statements import Statements
from roscope.errors import InputError

#: The deepest nesting of expressions and statements (with the calls whose summary the
#: walk needs first) that the walk follows; deeper code is an error that names it.
MAX_NESTING = 50_000

class Function(Statements, Expressions, Calls, Lambdas, Registrations, Publishers):
    """Walks one function body (or a lambda's) and records its summary."""

    def __init__(self, unit, cursor, outer: Function | None = None):
        ci = lc.CI
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
            self.params[param_key(p)] = i
            self.param_names.append(p.spelling)
            self.param_usrs.append(p.get_usr() or f"{self.usr}#param{i}")
            if strip_ref(p.type).kind == p.type.kind and p.type.kind not in (
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
            self.cls = qualname(parent) if parent is not None and parent.kind in (
                ci.CursorKind.CLASS_DECL, ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_TEMPLATE,
                ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION) else None
            rt = cursor.result_type
            self.ret_ref = rt.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE,
                                       ci.TypeKind.POINTER)

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

    def outside(self, decl) -> bool:
        """A variable declared outside this lambda (so captured)."""
        if not self.is_lambda:
            return False
        f = decl.location.file
        mine = self.c.location.file
        if f is None or mine is None or f.name != mine.name:
            return True
        off = decl.location.offset
        return not self.lam_range[0] <= off < self.lam_range[1]

    def in_captures(self, decl) -> bool:
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
        return {"usr": self.usr, "name": self.display_name(), "loc": self.u.loc(self.c), "events": self.events,
                "calls": self.calls, "returns": self.returns, "params": self.param_names,
                "param_usrs": self.param_usrs, "byval": sorted(self.byval), "cls": self.cls}

    def display_name(self) -> str:
        if self.is_lambda:
            outer = self.outer.display_name() if self.outer is not None else "?"
            return f"{outer}::lambda@{self.c.location.line}"
        return qualname(self.c)

    def deeper(self, c) -> None:
        """One level deeper, into `c` (an expression or a statement); an InputError past MAX_NESTING.
        `shallower` goes back."""
        u = self.u
        u.depth += 1
        if u.depth > MAX_NESTING:
            raise InputError(f"{u.loc(c)}: code nested more than {MAX_NESTING:,} levels deep (expressions, statements, "
                             "and calls whose summary is needed first): roscope deps does not analyse it")

    def shallower(self) -> None:
        self.u.depth -= 1

    def tick(self) -> tuple:
        self.n += 1
        return (self.n,)

    def hidden(self, c, why: str) -> None:
        """Code the walk cannot see into, where the callback may publish (`why`): a callback
        that publishes nowhere else is listed as unseen (document.py)."""
        self.events.append(("hidden", None, self.u.loc(c), self.tick(), tuple(self.loops), why))

    def record(self, kind: str, refs: Iterable[tuple], c, ctype=None, why: str | None = None) -> None:
        """Accesses `kind` ('r', 'w', 'rw') of the objects `refs` designate."""
        if ctype is not None and not_state_type(ctype):
            return
        loc = self.u.loc(c)
        for path, addr, cd in refs:
            if addr or not ok(path, cd):
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
        ci = lc.CI
        for i, ch in enumerate(kids):
            if ch.kind not in (K.MEMBER_REF, K.TYPE_REF, K.TEMPLATE_REF) or i + 1 >= len(kids):
                continue
            init = kids[i + 1]
            if not init.kind.is_expression():
                continue
            if ch.kind == K.MEMBER_REF and ch.referenced is not None and is_publisher_type(ch.referenced.type) and (
                    ch.referenced.type.get_canonical().kind in (ci.TypeKind.POINTER, ci.TypeKind.LVALUEREFERENCE)):
                # `out_(&pub_)`, `out_(pub_)`: a pointer or reference member to a publisher
                r = self.refs(init)
                if ch.referenced.type.get_canonical().kind == ci.TypeKind.POINTER:
                    r = [(p, False, cd) for p, a, cd in self.ptr_value(r, init)]
                self.alias_publisher([((("this",), (".", ch.spelling)), False, None)], r, ch)
                continue
            if ch.kind == K.MEMBER_REF:
                key = f"{self.cls}|{ch.spelling}"
                self.dest.append([((("this",), (".", ch.spelling)), False, None)])
                self.value(init)
                self.dest.pop()
            else:
                key = f"{self.cls}|base"
                self.value(init)
            lit = self.first_literal(init)
            if lit is not None:
                self.u.inits.setdefault(key, lit)

    def alias_publisher(self, dest, src, c) -> None:
        """A pointer or reference to a publisher kept in `dest` (paths), pointing at `src`
        (the publisher's paths): a publication through `dest` is one on `src`'s topic
        (document._publisher_table)."""
        d = [p for p, a, cd in dest if not a]
        s = [p for p, a, cd in src if not a]
        if d and s:
            self.u.pubs.append({"dest": d, "alias": s, "topic": None, "topic_expr": None, "loc": self.u.loc(c),
                                "fn": self.usr, "cls": self.cls})

    def first_literal(self, c) -> str | None:
        """The first string literal in `c`, in source order (a walk without recursion)."""
        stack = [c]
        while stack:
            x = stack.pop()
            if x.kind == self.K.STRING_LITERAL:
                s = string_literal(x.spelling)
                if s is not None:
                    return s
                continue
            stack.extend(reversed(list(x.get_children())))
        return None
