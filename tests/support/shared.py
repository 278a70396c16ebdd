"""Where the project's shared inputs are: the real traces recorded by others, beside the
checkout (`../shared/traces`), or where $ROSCOPE_TRACES says. The one place tests and their
helpers find them (bench/ and scripts/ read the same variable, with the same default)."""
from __future__ import annotations

import os

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.environ.get("ROSCOPE_TRACES", os.path.join(os.path.dirname(CHECKOUT), "shared", "traces"))
