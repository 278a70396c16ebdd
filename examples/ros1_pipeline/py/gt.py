"""Ground-truth log for the Python (rospy) nodes: same JSON-lines format as src/common.h."""
import json
import os
import threading
import time


class GroundTruth:
    def __init__(self, process):
        d = os.environ.get("ROSCOPE_GT_DIR") or "."
        self._f = open(os.path.join(d, process + ".jsonl"), "x", buffering=1)  # never overwrite
        self._lock = threading.Lock()
        self.line(ev="start", process=process, pid=os.getpid())

    def line(self, **kw):
        kw.setdefault("mono_ns", time.monotonic_ns())
        kw.setdefault("wall_ns", time.time_ns())
        with self._lock:
            if self._f:
                self._f.write(json.dumps(kw) + "\n")

    def close(self):
        self.line(ev="stop")
        with self._lock:
            self._f.close()
            self._f = None
