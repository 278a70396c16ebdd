"""Reading a user's YAML file (an experiment file, a budgets file) safely, and with
the line of every value, so that an error can name the file, the line and the key.

- ``read(path, what)``: the document, read as UTF-8 text of at most `max_bytes`,
  with at most `max_values` values once its aliases are expanded (checked on the
  node graph, before any value is built: an alias bomb is refused, as is an alias
  that refers to a value holding it); every failure is an InputError naming the
  file (and the line, where YAML says which). With ``lines=True`` mappings are
  `LineMap`s and sequences `LineList`s: a dict and a list that also know the line of
  each key and item.
- ``expanded_size(node)``: how many values a composed YAML node graph holds once
  its aliases are expanded.
- ``read_small(path, what, max_bytes)``: the bytes of a user's small input file (this
  YAML, a `roscope deps` JSON file): opened without blocking (a FIFO or a device never
  hangs roscope), a regular file only, at most `max_bytes` read; InputError otherwise.
"""
from __future__ import annotations

import os
import stat

from roscope.errors import InputError

#: Defaults: a user's YAML file is read up to this size (bytes) and this many values.
MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 100_000


def _a(what: str) -> str:
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


class LineMap(dict):
    """A YAML mapping as a dict, with `line` (where it starts, 1-based) and
    `lines` (the line of each key)."""

    line: int = 0

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.lines: dict = {}

    def line_of(self, key) -> int:
        """The line of `key` (of the mapping when it has no such key)."""
        return self.lines.get(key, self.line)


class LineList(list):
    """A YAML sequence as a list, with `line` and `lines` (the line of each item)."""

    line: int = 0

    def __init__(self, *a):
        super().__init__(*a)
        self.lines: list[int] = []

    def line_of(self, index: int) -> int:
        return self.lines[index] if 0 <= index < len(self.lines) else self.line


def expanded_size(node) -> int | None:
    """How many values a YAML node graph holds once its aliases are expanded (an alias is a
    second reference to a node: counted again each time); None if an alias refers to a node
    that holds it (a recursive value). Iterative; memoized per node."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack = [(node, False)]
    while stack:
        n, done = stack.pop()
        if isinstance(n.value, list):
            kids = [x for pair in n.value for x in pair] if n.value and isinstance(n.value[0], tuple) else n.value
        else:
            kids = []
        if done:
            size[id(n)] = 1 + sum(size[id(k)] for k in kids)
            open_.discard(id(n))
            continue
        if id(n) in size:
            continue
        if id(n) in open_:
            return None
        open_.add(id(n))
        stack.append((n, True))
        for k in kids:
            if id(k) in open_:
                return None
            if id(k) not in size:
                stack.append((k, False))
    return size[id(node)]


def _refuse_surrogates(path, node) -> None:
    """InputError naming the line of the first scalar that holds a lone surrogate (a YAML
    escape such as "\\ud800"): no Unicode character, which no output can write."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n.value, str):
            bad = next((c for c in n.value if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                raise InputError(f"{path}:{n.start_mark.line + 1}: holds a lone surrogate (\\u{ord(bad):04x}), "
                                 "which is not a Unicode character")
        elif isinstance(n.value, list):
            for x in n.value:
                stack.extend(x if isinstance(x, tuple) else (x,))


def _line_loader(text: str):
    """A SafeLoader over `text` whose mappings and sequences are LineMap and LineList."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node):
        data = LineMap()
        data.line = node.start_mark.line + 1
        yield data
        data.update(yaml.SafeLoader.construct_mapping(loader, node))  # merges (<<) and checks keys
        for k_node, _v in node.value:  # node.value holds the merged pairs now
            key = loader.construct_object(k_node)
            data.lines.setdefault(key, k_node.start_mark.line + 1)

    def sequence(loader, node):
        data = LineList()
        data.line = node.start_mark.line + 1
        yield data
        data.extend(loader.construct_sequence(node))
        data.lines = [n.start_mark.line + 1 for n in node.value]

    Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", sequence)
    return Loader(text)


def read_small(path, what: str, max_bytes: int) -> bytes:
    """The bytes of the `what` at `path` (module's doc). Nothing of the file is ever put in
    an error message."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: is a directory, not {_a(what)}")
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
            raise InputError(f"{path}: is {kind}, not a regular file: not {_a(what)}")
        if st.st_size > max_bytes:
            raise InputError(f"{path}: larger than {max_bytes} bytes: not {_a(what)}")
        chunks, n = [], 0
        while n <= max_bytes:
            b = os.read(fd, max_bytes + 1 - n)
            if not b:
                break
            chunks.append(b)
            n += len(b)
    except OSError as e:
        raise InputError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if n > max_bytes:
        raise InputError(f"{path}: larger than {max_bytes} bytes: not {_a(what)}")
    return b"".join(chunks)


def read(path, what: str, *, lines: bool = False, max_bytes: int = MAX_FILE_BYTES, max_values: int = MAX_VALUES):
    """The YAML document of `path` (a `what`, e.g. "experiment file", for the messages), or
    None for an empty one. See the module's doc."""
    import yaml

    data = read_small(path, what, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    loader = _line_loader(text) if lines else yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_surrogates(path, node)
        n = expanded_size(node)
        if n is None:
            raise InputError(f"{path}: a YAML alias (*name) refers to a value that holds it: not {_a(what)}")
        if n > max_values:
            raise InputError(f"{path}: holds {n} values once its YAML aliases (*name) are expanded; at most "
                             f"{max_values} are read (write the values out, or use fewer aliases)")
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else f"{path}"
        raise InputError(f"{where}: not valid YAML: {str(e).splitlines()[0] if str(e) else e}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be {_a(what)}") from None
    finally:
        loader.dispose()
