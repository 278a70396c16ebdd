"""State as paths, for `roscope deps`.

A path is a tuple: (root, step, step, ...). Roots: ("this",), ("param", i),
("var", usr) (a global, static or captured variable), ("obj", class) (a
callback's object, after binding). Steps: (".", field), ("[", index), ("*",)
(what a pointer or smart pointer points to), ("^", base class). Index: None
(unknown), ("k", constant), ("p", parameter), ("c", capture usr: one value per
registration of a lambda).

A reference ("ref") is (path, addr, cd): addr says the expression's value is
the address of path (a pointer to it); cd ("copy depth") says the expression
is a copy of the object at path[:cd]: only accesses through a "*" after cd
reach shared state.
"""
from __future__ import annotations

STAR = ("*",)
ELEM = ("[", None)


def ok(path, cd) -> bool:
    return cd is None or STAR in path[cd:]


def first_path(refs):
    for p, a, _cd in refs or []:
        if not a:
            return p
    return None


def join(base, addr, rest):
    if addr:
        if not rest or rest[0] != STAR:
            return None
        return base + tuple(rest[1:])
    return base + tuple(rest)


def sub_index(path, idx):
    if not any(s[0] == "[" and s[1] is not None and s[1][0] == "p" for s in path[1:]):
        return path
    out = [path[0]]
    for s in path[1:]:
        if s[0] == "[" and s[1] is not None and s[1][0] == "p":
            j = s[1][1]
            s = ("[", idx[j] if j < len(idx) else None)
        out.append(s)
    return tuple(out)


def conflict(w, r, same_registration: bool) -> bool:
    """Does writing path `w` change what reading path `r` reads?"""
    if w[0] != r[0]:
        return False
    n = min(len(w), len(r))
    for a, b in zip(w[1:n], r[1:n]):
        if a[0] != b[0]:
            return False
        if a[0] in (".", "^") and a[1] != b[1]:
            return False
        if a[0] == "[":
            x, y = a[1], b[1]
            if x is not None and y is not None:
                if x[0] == "k" and y[0] == "k" and x[1] != y[1]:
                    return False
                if same_registration and x[0] == "c" and x == y:
                    return False  # one element per registration of a lambda (its captured index)
    if len(w) <= len(r):
        return True
    return STAR not in w[len(r):]  # reading a pointer does not read what it points to


def display(path, names: dict[str, str]) -> str:
    if path is None:
        return "?"
    root = path[0]
    if root[0] == "obj":
        s = f"{root[1]}::"
        first = True
    elif root[0] == "var":
        s = names.get(root[1], root[1])
        first = False
    else:
        s = root[0]
        first = False
    for st in path[1:]:
        if st[0] == ".":
            s += ("" if first else ".") + st[1]
        elif st[0] == "*":
            s += "->" if not s.endswith("->") else ""
            s = s[:-2] + "->" if s.endswith("->") else s
            first = True
            continue
        elif st[0] == "[":
            i = st[1]
            s += "[]" if i is None else f"[{i[1]}]" if i[0] == "k" else "[per registration]" if i[0] == "c" else "[]"
        elif st[0] == "^":
            s += f"({st[1]})"
        first = False
    return s[:-2] + "->*" if s.endswith("->") else s


def norm_root(path, reg: dict):
    """Registration-space roots to callback-level roots: this -> the object of its class."""
    if path is None:
        return None
    root = path[0]
    if root == ("this",):
        return (("obj", reg["cls"] or reg["fn_name"]),) + tuple(path[1:])
    if root[0] == "param":
        usrs = reg.get("param_usrs") or []
        return (("var", usrs[root[1]] if root[1] < len(usrs) else f"{reg['fn']}#{root[1]}"),) + tuple(path[1:])
    return path


def generic(path):
    """A path with every index made generic and trailing derefs removed (publisher lookup)."""
    if path is None:
        return None
    out = [path[0]] + [("[", None) if s[0] == "[" else s for s in path[1:]]
    while len(out) > 1 and out[-1] == STAR:
        out.pop()
    return tuple(out)
