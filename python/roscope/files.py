"""Writing a user's files: atomically (a temporary name beside the target, then a
rename), with the mode a plain `open()` would give, so that a failure or an
interrupt never leaves a partial file under the target's name."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes `data` to `path` under a temporary name in its directory, synced, then
    renamed into place; on any error the temporary file is removed and the error
    raised (an existing file at `path` stays as it was)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)   # as open() would make it (mkstemp makes 0600)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
