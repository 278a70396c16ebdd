"""`roscope dump` against babeltrace2 (tests/support/oracle.py): every event of a trace compared as
it is printed, several traces' merged order checked, stderr free of crashes; bt2's pass kept per
path for the info tests' counts (`oracle_tables`)."""
from __future__ import annotations

import subprocess
import tempfile

import pytest

from tests.support import oracle

#: {path: a finished bt2 pass over it (oracle.Reading)}, shared by the dump and info tests.
_oracle_tables: dict[str, oracle.Reading] = {}


_BAD_STDERR = ("Traceback (most recent call last)", "panicked at", "RUST_BACKTRACE")


def assert_clean_stderr(stderr: str, what: str) -> None:
    for bad in _BAD_STDERR:
        assert bad not in stderr, f"{what} crashed ({bad!r} on stderr):\n{stderr[-4000:]}"


class DumpRun:
    """``roscope dump PATH`` running, its events read lazily."""

    def __init__(self, cmd: list[str], path: str):
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.argv = [*cmd, "dump", path]
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=self.errf,
                                     text=True, bufsize=1 << 20)

    def events(self):
        return oracle.read_dump_lines(self.proc.stdout)

    def finish(self, timeout: float = 600) -> tuple[int, str]:
        rest = self.proc.stdout.read()  # drain whatever was not compared
        rc = self.proc.wait(timeout=timeout)
        self.errf.seek(0)
        err = self.errf.read()
        self.errf.close()
        if rest.strip():
            raise oracle.Mismatch(f"roscope dump printed more after the compared events: {rest[:500]!r}")
        return rc, err

    def kill(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.errf.seek(0)
        err = self.errf.read()
        self.errf.close()
        return err


def check_dump(cmd: list[str], path: str) -> int:
    traces = oracle.find_traces(path)
    assert traces, f"no trace under {path}"
    reading = oracle.Reading(path)
    run = DumpRun(cmd, path)
    try:
        if len(traces) == 1:
            n = oracle.compare(reading.events(), run.events())
        else:
            actual = list(run.events())
            n = sum(oracle.compare_by_trace(reading.events(), actual).values())
            _check_merge_order(actual, reading.clock_offsets_ns)
    except oracle.Mismatch as exc:
        failure = str(exc)
    else:
        failure = None
    if failure is not None:
        err = run.kill()
        pytest.fail(f"{' '.join(run.argv)}: {failure}\n--- stderr ---\n{err[-3000:]}", pytrace=False)
    rc, err = run.finish()
    assert_clean_stderr(err, "roscope dump")
    assert rc == 0, f"{' '.join(run.argv)} exited {rc}:\n{err[-3000:]}"
    assert n == reading.n_events
    if reading.done:  # bt2's whole pass: its counts are the info tests' oracle too (oracle_tables)
        _oracle_tables.setdefault(path, reading)
    return n


def _check_merge_order(actual: list[dict], offsets: dict[str, int]) -> None:
    """The dump of several traces is one merged, time-ordered sequence: by the
    clock value (ts) or by the clock value plus the trace's clock offset
    (wall time).  Either is a valid reading of 'merged time order'."""
    def is_sorted(keys):
        return all(a <= b for a, b in zip(keys, keys[1:]))
    by_ts = [e["ts"] for e in actual]
    by_wall = [e["ts"] + offsets.get(e["trace"], 0) for e in actual]
    assert is_sorted(by_ts) or is_sorted(by_wall), \
        "roscope dump of several traces is sorted neither by ts nor by ts + clock offset"


def oracle_tables(path: str) -> oracle.Reading:
    """bt2's counts, hostnames and discarded counts (no field conversion), from one
    bt2 pass per path: the dump test's (which reads every event whole) when it ran."""
    if path not in _oracle_tables:
        _oracle_tables[path] = oracle.Reading(path, full=lambda ts, name: False).run()
    return _oracle_tables[path]
