"""What the Spark tests share: the shared ROS 2 traces they load, whether Spark can run here, and
rows compared as Spark and DuckDB give them (floating values within rounding)."""
from __future__ import annotations

import math
import os

from tests.support.shared import TRACES

ROS2 = os.path.join(TRACES, "ros2")
SMALL = ["caret-end-to-end-cyclonedds", "caret-intra-process-galactic", "caret-talker-listener-galactic",
         "pingpong-rolling-2021"]
BIG = "autoware-carla-galactic"


def _spark_missing() -> str | None:
    try:
        from roscope import spark

        spark.check()
    except Exception as exc:  # noqa: BLE001 - any reason is the skip reason
        return f"Spark cannot run here: {exc}"
    return None


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def same_rows(a: list[dict], b: list[dict], name: str) -> None:
    assert len(a) == len(b), name
    for x, y in zip(a, b):
        assert x.keys() == y.keys(), name
        for k in x:
            if isinstance(x[k], float) or isinstance(y[k], float):
                assert close(x[k], y[k]), (name, k, x, y)
            else:
                assert x[k] == y[k] and type(x[k]) is type(y[k]), (name, k, x[k], y[k])
