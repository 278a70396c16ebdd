"""The one compiler of the regular expressions a user gives roscope to match trace
strings in Python: `flow`/`watch` `--from`/`--to`/`--exclude` and `--deadline`'s topics,
named paths' callbacks, the selections of `roscope.selector` (`check`'s budgets and the
pytest plugin, `why --callback`, `trend --metric`, an experiment's trace metrics).

They run on Rust's `regex` engine through the core (`_core.Regex`): matching takes time
linear in the text, so no pattern can backtrack for minutes over a long name
(`^(\\S+\\s?)+X$`). Its syntax is Python's `re` without look-around and backreferences
(and `\\z` for `\\Z`); a pattern it cannot run is refused with the engine's reason, in one
line naming the option and the pattern. Selections of callbacks, topics, nodes and executor
threads compile through here by way of `roscope.selector` (`trend`, `why --callback` too).

    compile(pattern, what) -> Regex      InputError "WHAT: bad regular expression 'P': reason"
    Regex.search(text) -> bool           like re.search
    Regex.mask(texts) -> list[bool]      search of each text
"""
from __future__ import annotations

from roscope import _core
from roscope.errors import InputError
from roscope.text import escape

#: Longer patterns are refused (the engine also caps its compiled size). Generous: roscope's
#: own patterns made of topic names (the report's pairs, `^(a|b|...)$`) go through here too, and
#: a system's names may be long (test_report's long names: over 10,000 characters together).
MAX_PATTERN = 1_000_000

_HINT = {"look-around": " (roscope's regular expressions run in linear time: no look-around)",
         "backreferences": " (roscope's regular expressions run in linear time: no backreferences)"}


class Regex:
    """A compiled user regular expression (`compile`)."""

    __slots__ = ("_rx", "pattern")

    def __init__(self, rx, pattern: str):
        self._rx = rx
        self.pattern = pattern

    def search(self, text: str) -> bool:
        """Whether it matches anywhere in `text`."""
        try:
            return self._rx.search(text)
        except UnicodeEncodeError:   # a lone surrogate (a name read from YAML): match what can be shown
            return self._rx.search(_valid(text))

    def mask(self, texts) -> list[bool]:
        """`search` of each of `texts`."""
        texts = list(texts)
        try:
            return self._rx.mask(texts)
        except UnicodeEncodeError:
            return self._rx.mask([_valid(t) for t in texts])

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


def _valid(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class RegexError(InputError):
    """A user's regular expression the engine cannot run."""


def compile(pattern, what: str | None) -> Regex:  # noqa: A001 (the module's one function, as re.compile)
    """`pattern` compiled for matching trace strings; RegexError naming `what` (the option,
    or None when the caller names the file and key) and the pattern otherwise."""
    try:
        return Regex(_compile(pattern), pattern)
    except RegexError as e:
        raise RegexError(f"{what}: {e}" if what else str(e)) from None


def _compile(pattern):
    if not isinstance(pattern, str):
        raise RegexError(f"expected a regular expression (text), got {type(pattern).__name__}")
    shown = escape(repr(pattern if len(pattern) <= 200 else pattern[:200] + "…"))
    if len(pattern) > MAX_PATTERN:
        raise RegexError(f"bad regular expression {shown}: longer than {MAX_PATTERN:,} characters")
    try:
        return _core.Regex(pattern)
    except UnicodeEncodeError:
        raise RegexError(f"bad regular expression {shown}: it holds a lone surrogate (not a Unicode character)") from None
    except ValueError as e:
        reason = str(e)
        hint = next((h for k, h in _HINT.items() if k in reason), "")
        raise RegexError(f"bad regular expression {shown}: {escape(reason)}{hint}") from None
