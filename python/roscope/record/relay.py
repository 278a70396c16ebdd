"""A private ``lttng-relayd`` for one live session (`roscope watch --source live`,
docs/watch.md): bound to 127.0.0.1 on free ports, writing into the recording's own
directory (its output is the recording), started and stopped as one of roscope's
processes (``roscope.processes``)."""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from roscope.processes import group, signals
from roscope.record.options import RecordError

#: How long the relay may take to listen on its ports (s).
START_S = 10.0
HOST = "127.0.0.1"


def _free_ports(n: int) -> list[int]:
    """n ports the kernel says are free now (another process may take one before the
    relay binds it: `Relay.start` then tries again)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _listens(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


class Relay:
    """The relay daemon of one live session, writing under `out`."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.proc: group.Started | None = None
        self.control = self.data = self.viewer = 0

    @property
    def url(self) -> str:
        """The session's `--set-url`: where its consumer sends the trace."""
        return f"net://{HOST}:{self.control}:{self.data}"

    @property
    def session_output(self) -> str:
        """A session streaming to this relay, as `lttng list` shows where it writes."""
        return f"tcp4://{HOST}:{self.control}/ [data: {self.data}]"

    @property
    def viewer_addr(self) -> str:
        return f"{HOST}:{self.viewer}"

    def start(self) -> None:
        if shutil.which("lttng-relayd") is None:
            raise RecordError("the 'lttng-relayd' command was not found (needed by --source live); install lttng-tools")
        why = ""
        for _ in range(3):   # a port taken between the look and the bind: new ports
            self.control, self.data, self.viewer = _free_ports(3)
            argv = ["lttng-relayd", f"--control-port=tcp://{HOST}:{self.control}", f"--data-port=tcp://{HOST}:{self.data}",
                    f"--live-port=tcp://{HOST}:{self.viewer}", f"--output={self.out}"]
            self.proc = group.start("lttng-relayd", argv, log=self.out / "relayd.log")
            t0 = time.monotonic()
            while self.proc.alive() and time.monotonic() - t0 < START_S:
                if _listens(self.viewer) and _listens(self.control):
                    return
                time.sleep(0.02)
            why = "it exited" if not self.proc.alive() else f"not listening after {START_S:g} s"
            group.stop(self.proc, 1.0)
            self.proc = None
        raise RecordError(f"could not start lttng-relayd ({why}; see {self.out / 'relayd.log'})")

    def failure(self, error: str) -> str:
        """What to tell when the connection to the relay's viewer port failed (`error`):
        whether the relay died (its exit status), and where its log is."""
        log = self.out / "relayd.log"
        p = self.proc
        if p is not None:
            try:   # a relay that died closes its sockets just before it can be reaped
                p.popen.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        if p is not None and not p.alive():
            rc = p.popen.poll()
            how = f"was killed by signal {-rc}" if rc is not None and rc < 0 else f"exited with status {rc}"
            return (f"lttng-relayd (pid {p.popen.pid}, viewer port {self.viewer_addr}) {how} while the live session "
                    f"was read; the trace up to then is in {self.out}; see {log}")
        return f"lost the connection to lttng-relayd at {self.viewer_addr} ({error}); see {log}"

    def stop(self) -> None:
        """Stops the relay (once the session was destroyed and its viewer read the end)."""
        if self.proc is not None:
            group.stop(self.proc, 5.0)
            self.proc = None


def is_relay_of(out: Path):
    """A predicate over argv: the relay daemon writing into `out`."""
    arg = f"--output={Path(out)}"
    return lambda argv: bool(argv) and Path(argv[0]).name == "lttng-relayd" and arg in argv


def stop_by_identity(ident: dict | None, out: Path) -> str | None:
    """Stops the relay a killed watch left (`roscope record recover`), by its recorded identity
    (never another process). Returns what was done, or None when it no longer runs."""
    return signals.stop_recorded(ident, is_relay_of(out), signal.SIGTERM, "lttng-relayd", 10.0)
