"""`roscope watch`: a live view of a running system (docs/watch.md).

An LTTng session (the one `roscope record` makes, through `roscope.record`) is read
as it records, from one of two sources:

- `rotation`: the session rotates into a trace chunk every `rotate_ms`; each chunk
  archived under OUT/archives is read as soon as it appears;
- `live`: a live session (live timer `live_ms`) streams through a private
  lttng-relayd writing OUT; roscope's own client of the live viewer protocol
  (`_core.LiveClient`) gets the packets every `POLL_S` and writes those every stream
  is complete up to into a small trace directory of its own (a "mini chunk").

Each chunk goes to `roscope.live.LiveWindows` (the core's incremental model builder),
and every window whose records are all in is handed to `show` (JSON lines or the
terminal view). The session is tracked and destroyed like a recording's, and OUT is a
complete trace that `roscope load` reads.
"""
from __future__ import annotations

import queue
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from roscope import _core, files
from roscope.alerts import EXIT_MISSED, OnMiss
from roscope.live import LiveWindows, WatchedPath
from roscope.manifest import record_ids
from roscope.processes import group
from roscope.record.options import DEFAULT_EVENTS, RecordError, RecordOptions
from roscope.record.session import Recording

#: The channel's monitor timer under watch (us): a rotation completes within about this
#: much after its timer fired (LTTng's default, 1 s, made alerts 0.5 s later).
MONITOR_TIMER_US = 100_000

#: How often the archive directory is looked at for a new chunk (a directory listing).
POLL_S = 0.02
#: The archive directory is listed at least this often (s), whatever its mtime says.
LIST_S = 0.5

#: The sources a watch reads its session from (docs/watch.md, "Live source").
SOURCES = ("rotation", "live")
#: How long the relay may take to know a live session, and to hand over its end (s).
ATTACH_S = 20.0
END_S = 30.0


@dataclass
class WatchOptions:
    output: str | None = None
    window_s: float = 5.0
    step_s: float = 1.0
    rotate_ms: int = 250
    #: Where the session is read from (`SOURCES`), and a live session's live timer (ms).
    source: str = "live"
    live_ms: int = 50
    duration_s: float | None = None
    heuristics: bool = True
    #: LTTng event patterns recorded besides roscope's and ROS's (`DEFAULT_EVENTS`).
    events: list[str] = field(default_factory=list)
    #: Watched paths: (from regex, to regex, deadline ns or None).
    paths: list[tuple[str, str, int | None]] = field(default_factory=list)
    on_miss: str | None = None
    #: As `roscope record`'s: the pip-installed ROS 2 to preload roscope's tracer into, state
    #: dumps of the processes already running, only these processes (and descendants).
    ros2: str | None = None
    attach: bool = False
    pids: list[int] = field(default_factory=list)


def chunks(out: Path) -> list[Path]:
    """The archived chunks of a session writing into `out`, in order."""
    arch = out / "archives"
    if not arch.is_dir():
        return []

    def index(p: Path) -> int:
        tail = p.name.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1
    return sorted((p for p in arch.iterdir() if p.is_dir()), key=index)


class Watch:
    """One watch: its recording, its live model, what it has read."""

    def __init__(self, command: list[str] | None, opts: WatchOptions, show, alert=None):
        self.opts = opts
        self.show = show
        self.alert = alert            # each miss, as a dict (a JSON line), or None
        self.on_miss = OnMiss(opts.on_miss)
        self.misses = 0
        if opts.source not in SOURCES:
            raise ValueError(f"unknown source {opts.source!r}")
        live = opts.source == "live"
        self.rec = Recording(RecordOptions(output=opts.output, rotate_us=None if live else int(opts.rotate_ms) * 1000,
                                           live_timer_us=int(opts.live_ms) * 1000 if live else None,
                                           monitor_timer_us=MONITOR_TIMER_US,
                                           events=[*DEFAULT_EVENTS, *opts.events], ros2=opts.ros2, attach=opts.attach,
                                           pids=list(opts.pids)),
                             list(command) if command else None, "watch")
        self.live: LiveWindows | None = None
        self.seen: set[str] = set()
        #: A live source's client, the directory of its mini chunks, and how many it made.
        self.client = None
        self._mini: Path | None = None
        self._n = 0
        self.result: dict = {}
        self.windows = 0
        self._mtime: int | None = None   # the archive directory's, at the last listing
        self._listed = 0.0               # time.monotonic() of the last listing
        #: The windows' statistics are computed on a thread of their own (`_windows_thread`),
        #: so that they never hold up the next chunk's check; what it and the loop tell goes
        #: out under one lock, a line at a time.
        self._jobs: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._worker_error: BaseException | None = None
        #: The live source's relay failed (told once: the end is not read from it).
        self._relay_failed = False
        self._out = threading.Lock()

    def _read_new(self, force: bool = False) -> None:
        """Feeds the chunks archived since the last look and checks the deadlines at
        once; the windows' work waits until no chunk is waiting (it never holds up the
        next chunk's check)."""
        if self.client is not None:
            self._read_live()
            return
        if not force and not self._archive_changed():
            return
        fed = False
        while True:
            new = [c for c in chunks(self.rec.out) if c.name not in self.seen]
            if not new:
                break
            for c in new:
                self.seen.add(c.name)
                if next(c.rglob("metadata"), None) is not None:   # else no process wrote into it
                    self.live.feed(str(c))
                    fed = True
            self.live.check(self._alert)
        if fed:   # nothing new: nothing to step
            self._show(final=False)

    def _read_live(self) -> bool:
        """Feeds what the live client has complete (a mini chunk) and checks the deadlines;
        returns whether the session's every stream ended."""
        d = self._mini / str(self._n)
        try:
            packets, _bytes, ended, upto, after = self.client.poll(str(d))
        except _core.TraceError as e:   # the relay's connection failed: say whether it died, and where its log is
            self._relay_failed = True
            raise RecordError(self.rec.relay.failure(str(e))) from None
        if packets:
            self._n += 1
            try:
                self.live.feed(str(d), upto, after)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            self.live.check(self._alert)
            self._show(final=False)
        return ended

    def _start_live(self) -> None:
        """The live source: a client of the recording's relay, attached to its session."""
        parent = "/dev/shm" if Path("/dev/shm").is_dir() else files.temp_root()
        files.sweep_private_dirs(parent, "roscope-live-", 60.0)  # those of a watch that was killed
        self._mini = Path(files.private_dir(parent, "roscope-live-"))
        try:
            self.client = _core.LiveClient(self.rec.relay.viewer_addr)
            self.client.attach(self.rec.name, ATTACH_S)
        except _core.TraceError as e:
            raise RecordError(self.rec.relay.failure(str(e))) from None

    def _archive_changed(self) -> bool:
        """Whether a chunk may have been archived since the last listing: the archive
        directory's mtime moved, or LIST_S passed (a rename within the same clock tick
        as the last listing leaves the mtime as it was). Listing the directory every
        poll costs as much as the chunks it holds."""
        try:
            mtime = (self.rec.out / "archives").stat().st_mtime_ns
        except OSError:
            return False
        now = time.monotonic()
        if mtime == self._mtime and now - self._listed < LIST_S:
            return False
        self._mtime, self._listed = mtime, now
        return True

    def _show(self, final: bool) -> None:
        """The windows now complete: handed to the windows' thread; with `final`, after
        the last check and every window before, the last ones here."""
        if final:
            self.live.check(self._alert)
            self._stop_windows()
            self._tell(self.live.windows(True))
            return
        job = self.live.take_windows(False)
        if job is None:
            return
        if self._worker is None:
            self._worker = threading.Thread(target=self._windows_thread, name="roscope-watch-windows", daemon=True)
            self._worker.start()
        self._jobs.put(job)

    def _windows_thread(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                if self._worker_error is None:
                    self._tell(self.live.window_stats_of(job))
            except BaseException as e:   # told by the loop (`_loop`), which ends the watch
                self._worker_error = e

    def _stop_windows(self) -> None:
        """Waits for the windows' thread to compute what it was given, and ends it."""
        if self._worker is not None:
            self._jobs.put(None)
            self._worker.join()
            self._worker = None
        if self._worker_error is not None:
            e, self._worker_error = self._worker_error, None
            raise e

    def _tell(self, windows: list[dict]) -> None:
        with self._out:
            for w in windows:
                self.show(w)
                self.windows += 1

    def _alert(self, misses: list[dict]) -> None:
        """The deadline misses of one check, told at once: every line first, then their
        --on-miss commands (starting one takes longer than printing a line)."""
        with self._out:
            for a in misses:
                # when it was told (CLOCK_MONOTONIC: LTTng's clock, the trace's times)
                a["alerted_ns"] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                self.misses += 1
                if self.alert is not None:
                    self.alert({"alert": "deadline_miss", **a})
                self.on_miss.tell(a)
        for a in misses:
            self.on_miss(a, self.rec.out)

    def _last_chunks(self) -> dict:
        """After the session's end: the chunks not read yet, then every event read and
        lost (LTTng's counters) for the manifest."""
        if self.client is not None:   # the session is destroyed: the relay hands over its end (if it still runs)
            t0 = time.monotonic()
            while not self._relay_failed and not self._read_live():
                if time.monotonic() - t0 > END_S:
                    print(f"roscope: warning: the relay did not hand over the session's end within {END_S:g} s",
                          file=sys.stderr)
                    break
                time.sleep(POLL_S)
        else:
            self._read_new(force=True)
        self.live.close()
        return {"events": self.live.events, "discarded_events": self.live.lost_events,
                "packets_lost": self.live.lost_packets}

    def run(self) -> int:
        """Watches until the command ends, --duration passes, or Ctrl-C; returns the exit code."""
        rec = self.rec
        # The recording's signal handlers stay until its end, with or without a command: SIGINT,
        # SIGTERM and SIGHUP end the watch (the session stopped), SIGUSR1 is refused in a line.
        rec.setup()
        waiter = None
        interrupted = False
        try:
            # The processes of this recording only, as `roscope load` on its output counts them.
            self.live = LiveWindows(int(self.opts.window_s * 1e9), int(self.opts.step_s * 1e9), self.opts.heuristics,
                                    record_ids([str(rec.out)]), [WatchedPath(a, b, d) for a, b, d in self.opts.paths],
                                    attach=self.opts.attach or rec.command is None)
            if rec.relay is not None:
                self._start_live()
            if rec.command is not None:
                def wait():
                    rc, _left = rec.wait()
                    self.result["exit_code"] = rc
                waiter = threading.Thread(target=wait, name="roscope-watch-wait", daemon=True)
                waiter.start()
            interrupted = self._loop(waiter)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if waiter is not None and waiter.is_alive():
                if rec.child is not None:
                    group.signal_all(rec.child, signal.SIGINT)
                waiter.join()
            self.result["interrupted"] = interrupted or bool(rec.interrupted)
            # destroys the session (the last chunk is archived), then reads the rest: the
            # manifest's counts are watch's own (no second pass over the trace)
            try:
                rec.finish(self.result, counts=self._last_chunks if self.live is not None else None)
            finally:
                if self._mini is not None:
                    files.remove_private_dir(str(self._mini))
        if self.live is None:   # interrupted before the first chunk
            print(f"roscope: trace written to {rec.out} (interrupted at its start)", file=sys.stderr)
            return 130
        self._show(final=True)
        self.on_miss.finish()
        print(f"roscope: trace written to {rec.out} ({len(self.seen) + self._n} chunks, {self.windows} windows shown"
              f", {self.live.lost_events} events lost)", file=sys.stderr)
        if self.misses:
            print(f"roscope: {self.misses} flows missed their deadline", file=sys.stderr)
        return 130 if self.result["interrupted"] else EXIT_MISSED if self.misses else 0

    def _loop(self, waiter: threading.Thread | None) -> bool:
        """Reads chunks as they come until the command ends, --duration passes or a
        signal; returns whether it was interrupted."""
        rec = self.rec
        t0 = time.monotonic()
        interrupted = False
        while True:
            self._read_new()
            if self._worker_error is not None:
                self._stop_windows()
            rec.serve_snapshots()
            if waiter is not None and not waiter.is_alive():
                return interrupted
            if rec.interrupted:
                interrupted = True
                if waiter is None:
                    return True
            if self.opts.duration_s is not None and time.monotonic() - t0 >= self.opts.duration_s:
                if waiter is None:
                    return interrupted
                if rec.child is not None:
                    group.signal_all(rec.child, signal.SIGINT)
                waiter.join()
                return interrupted
            time.sleep(POLL_S)

