"""Runs fault cases: roscope in a worker process (restarted after a hang or a
crash), babeltrace2 on the same damaged input, and the figures of the run."""
from __future__ import annotations

import collections
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time

from tests.faults import bases as fb
from tests.faults.mutations import Applied, Case, generate

#: The worker, run as a module from the repository root (it imports tests.support and tests.faults).
WORKER = "tests.faults.worker"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Worker:
    """One roscope worker process; a request that takes longer than `timeout`
    seconds is a hang: the process is killed and a new one started."""

    def __init__(self, bases_pickle: str):
        self.bases_pickle = bases_pickle
        self.proc = None
        self.starts = 0

    def _start(self) -> None:
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", WORKER, self.bases_pickle], stdin=subprocess.PIPE, cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=self.err, start_new_session=True)
        self.starts += 1

    def send(self, req: dict) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        self.sent = time.monotonic()

    def receive(self, timeout: float) -> dict:
        left = timeout - (time.monotonic() - self.sent)
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
        if not ready:
            self.stop()
            return {"status": "hang", "message": f"no answer within {timeout} s", "n": 0}
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            self.err.seek(0)
            tail = self.err.read()[-3000:].decode(errors="replace")
            self.proc = None
            return {"status": "crash", "message": f"worker exited with {rc}: {tail}", "n": 0}
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None


def babeltrace2(root: str, timeout: float, reference: collections.Counter | None = None) -> dict:
    """babeltrace2's reading of `root` (its text output, one line per event):
    "ok", "error", "hang" (killed after `timeout` s) or "crash" (killed by a
    signal); the events it printed, and how many of them are genuine (lines
    also in `reference`, its reading of the undamaged trace: garbage decoded as
    events is not)."""
    try:
        p = subprocess.run(["babeltrace2", "--no-delta", root], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"status": "hang", "n": None, "genuine": None}
    lines = collections.Counter(p.stdout.splitlines())
    status = "ok" if p.returncode == 0 else ("crash" if p.returncode < 0 else "error")
    genuine = sum((lines & reference).values()) if reference is not None else None
    return {"status": status, "n": sum(lines.values()), "genuine": genuine, "rc": p.returncode}


def run(shared: str, workdir: str, seed: int, n_stream: int, n_meta: int, names=None,
        roscope_timeout: float = 20.0, bt2_timeout: float = 5.0) -> tuple[list[Case], list[dict]]:
    """Generates and runs the cases; returns them with their results (one dict
    per case: roscope's, with babeltrace2's under "bt2")."""
    names = list(names or [*fb.BASES, *fb.CUTS])
    bases = [fb.load(shared, n, workdir) for n in names]
    by_name = {b.name: b for b in bases}
    originals: dict[tuple[str, str], bytes] = {}

    def read(base, rel):
        key = (base.name, rel)
        if key not in originals:
            with open(os.path.join(base.src, rel), "rb") as f:
                originals[key] = f.read()
        return originals[key]

    cases = generate(bases, seed, n_stream, n_meta, read)
    roots = {b.name: fb.working_copy(b, os.path.join(workdir, "copy-" + b.name)) for b in bases}
    pk = os.path.join(workdir, "bases.pickle")
    with open(pk, "wb") as f:
        pickle.dump(by_name, f)
    reference = {b.name: collections.Counter(subprocess.run(["babeltrace2", "--no-delta", b.src], stdout=subprocess.PIPE,
                                                              check=True).stdout.splitlines()) for b in bases}
    worker = Worker(pk)
    results = []
    try:
        for case in cases:
            root = roots[case.base]
            with Applied(root, case, read(by_name[case.base], case.file)):
                worker.send({"case": case.to_json(), "root": root})
                bt = babeltrace2(root, bt2_timeout, reference[case.base])
                res = worker.receive(roscope_timeout)
            res["id"] = case.id
            res["bt2"] = bt
            results.append(res)
    finally:
        worker.stop()
    return cases, results


def figures(cases: list[Case], results: list[dict]) -> dict:
    """Per kind and in all: cases, outcomes of roscope and babeltrace2, and the
    events each read."""
    def blank():
        return {"cases": 0, "roscope": collections.Counter(), "bt2": collections.Counter(),
                "bt2_failed_roscope_read": 0, "events_roscope": 0, "events_bt2_where_it_read": 0,
                "events_roscope_where_bt2_read": 0, "events_roscope_where_bt2_failed": 0,
                "genuine_roscope_where_bt2_read": 0, "genuine_bt2_where_it_read": 0, "genuine_roscope_where_bt2_failed": 0,
                "genuine_bt2_partial_where_it_failed": 0, "lost_undetectable": 0,
                "events_after_damage": 0, "events_after_damage_recovered": 0, "no_visible_effect": 0}

    per = collections.defaultdict(blank)
    for case, res in zip(cases, results):
        for key in (case.kind, "stream" if not case.metadata else "metadata", "all"):
            f = per[key]
            f["cases"] += 1
            f["roscope"][res["status"]] += 1
            f["bt2"][res["bt2"]["status"]] += 1
            f["events_roscope"] += res.get("n", 0)
            if res["bt2"]["status"] == "ok":
                f["events_bt2_where_it_read"] += res["bt2"]["n"] or 0
                f["events_roscope_where_bt2_read"] += res.get("n", 0)
                f["genuine_bt2_where_it_read"] += res["bt2"]["genuine"] or 0
                f["genuine_roscope_where_bt2_read"] += res.get("genuine", 0)
                f["lost_undetectable"] += bool(res.get("lost")) and not res.get("warned_at") and not res.get("reported")
            else:
                f["events_roscope_where_bt2_failed"] += res.get("n", 0)
                f["genuine_roscope_where_bt2_failed"] += res.get("genuine", 0)
                f["genuine_bt2_partial_where_it_failed"] += res["bt2"]["genuine"] or 0
                f["bt2_failed_roscope_read"] += res["status"] == "ok" and res.get("n", 0) > 0
            f["events_after_damage"] += res.get("after", 0)
            f["events_after_damage_recovered"] += res.get("recovered", 0)
            f["no_visible_effect"] += bool(res.get("same"))
    return {k: {**v, "roscope": dict(v["roscope"]), "bt2": dict(v["bt2"])} for k, v in per.items()}


def table(figs: dict) -> str:
    """The figures as a text table (for the note and the test log). "genuine":
    events equal to one of the undamaged trace (garbage decoded as events is
    not), counted for roscope and for babeltrace2's text output."""
    head = ("kind", "cases", "roscope ok/error/other", "bt2 ok/error/hang/crash", "bt2 failed, roscope read",
            "genuine roscope|bt2 where bt2 read", "all roscope|bt2 where bt2 read", "genuine roscope|bt2 where bt2 failed",
            "recovered after damage")
    rows = []
    for kind, f in sorted(figs.items(), key=lambda kv: (kv[0] in ("stream", "metadata", "all"), kv[0])):
        r, b = f["roscope"], f["bt2"]
        other = sum(v for k, v in r.items() if k not in ("ok", "error"))
        rows.append((kind, str(f["cases"]), f"{r.get('ok', 0)}/{r.get('error', 0)}/{other}",
                     f"{b.get('ok', 0)}/{b.get('error', 0)}/{b.get('hang', 0)}/{b.get('crash', 0)}",
                     str(f["bt2_failed_roscope_read"]),
                     f"{f['genuine_roscope_where_bt2_read']}|{f['genuine_bt2_where_it_read']}",
                     f"{f['events_roscope_where_bt2_read']}|{f['events_bt2_where_it_read']}",
                     f"{f['genuine_roscope_where_bt2_failed']}|{f['genuine_bt2_partial_where_it_failed']}",
                     f"{f['events_after_damage_recovered']}/{f['events_after_damage']}"))
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]

    def line(cells):
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths))

    return "\n".join([line(head), "-+-".join("-" * w for w in widths), *(line(r) for r in rows)])
