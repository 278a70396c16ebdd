"""The budget kinds, one entry each (roscope.check.kind.Kind): what a budget selects, the
measures it takes and how each is parsed, measured and suggested. A budgets file's
kinds, `roscope check`, `--suggest`, `--baseline` and the pytest API all read them here.

To add a measure to a kind: a `MeasureSpec` in its module's `measures` and the function
that measures it (and its line in docs/ci.md's budgets reference).
"""
from __future__ import annotations

from roscope.check.kind import Kind
from roscope.check.kinds import callback, executor, lost, path, topic

#: The kinds, by the key that names a budget's subject, in the order the budgets reference lists them.
KINDS: dict[str, Kind] = {k.name: k for k in (callback.KIND, topic.KIND, path.KIND, executor.KIND, lost.KIND)}
