"""One translation unit for `roscope deps`: its user functions (not a library's:
not in a system header) and their summaries, the callbacks and publishers it
registers, and the names of the variables they touch."""
from __future__ import annotations

import os
import re

from roscope.deps import libclang as lc
from roscope.deps.cxx import has_body, qualname, system_path
from roscope.deps.function import Function
from roscope.deps.libclang import global_storage, overridden, specialized_template


class Unit:
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
        self.depth = 0  # how deep the walk is (function.Function.deeper)

    # -- files
    def is_user(self, c) -> bool:
        loc = c.location
        f = loc.file
        if f is None:
            return False
        name = f.name
        hit = self.user_cache.get(name)
        if hit is None:
            hit = not loc.is_in_system_header and not system_path(os.path.realpath(name))
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
        ci = lc.CI
        parent = c.semantic_parent
        if parent is not None and parent.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
                                                  ci.CursorKind.CONSTRUCTOR, ci.CursorKind.FUNCTION_TEMPLATE,
                                                  ci.CursorKind.DESTRUCTOR):
            self.names[usr] = f"{qualname(parent)}()::{c.spelling}"
        else:
            self.names[usr] = qualname(c) or c.spelling
        storage = global_storage(c) if c.kind == ci.CursorKind.VAR_DECL else 0
        if storage == 1:
            self.kinds[usr] = "static" if parent is not None and parent.kind not in (
                ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE) else "global"
        else:
            self.kinds[usr] = "captured"

    # -- walking declarations
    def run(self) -> None:
        ci = lc.CI
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
                    for o in overridden(c):
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
            fn = Function(self, c)
            fn.run()
            s = fn.result()
        finally:
            self.building.discard(usr)
        self.summaries[usr] = s
        return s

    def lambda_summary(self, lam, outer: Function) -> dict | None:
        """The summary of lambda `lam` (written in `outer`), None while it is being made
        (a lambda that reaches itself)."""
        usr = self.lambda_usr(lam)
        if usr not in self.summaries:
            if usr in self.building:
                return None
            self.building.add(usr)
            try:
                fn = Function(self, lam, outer=outer)
                fn.run()
                self.summaries[usr] = fn.result()
            finally:
                self.building.discard(usr)
        return self.summaries[usr]

    def declaration(self, ref):
        """A function the user declares (not a library's) whose definition is not in this unit."""
        if ref is None:
            return None
        tmpl = specialized_template(ref)
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
        tmpl = specialized_template(ref)
        cand = tmpl if tmpl is not None else ref
        d = cand.get_definition()
        if d is None:
            return cand if self.is_user(cand) and has_body(cand) else None
        return d if self.is_user(d) and has_body(d) else None


class UnitData:
    """What phase 2 needs of one translation unit (picklable: units can be analysed in worker processes)."""

    FIELDS = ("summaries", "regs", "pubs", "names", "kinds", "overrides", "inits")

    def __init__(self, unit: Unit):
        for f in self.FIELDS:
            setattr(self, f, getattr(unit, f))
