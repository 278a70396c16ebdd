"""Writing a user's files: atomically (a temporary name beside the target, then a
rename), with the mode a plain `open()` would give, so that a failure or an
interrupt never leaves a partial file under the target's name."""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes `data` to `path` under a temporary name in its directory, synced, then
    renamed into place; on any error the temporary file is removed and the error
    raised (an existing file at `path` stays as it was)."""
    path = Path(path)
    tmp = None
    try:
        # Ctrl-C inside mkstemp, once it made the file, would leave it unnamed: held
        # back until `tmp` is known, then raised here, where the clean-up sees it.
        with interrupts_deferred():
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)   # as open() would make it (mkstemp makes 0600)
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


@contextlib.contextmanager
def interrupts_deferred():
    """Holds back Ctrl-C (SIGINT) for the block (a few renames, a temporary
    file's creation), then raises it. Only the main thread receives signals:
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, _frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if got:
        raise KeyboardInterrupt

