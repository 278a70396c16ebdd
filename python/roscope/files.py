"""The one writer of roscope's outputs: every file a command writes goes through
this module (tests/test_output_files.py walks the source for any other).

The rules, for a file the user names (`report -o`, `export --perfetto`, `deps -o`,
`load -o` and its Parquet files, an experiment's HTML report):

- `check(path, ...)` before any work refuses, with an InputError naming the path:
  an empty path, a missing parent directory, a symbolic link, anything that is not
  a regular file (a device node, a FIFO, a socket, a directory), an existing file
  without `force`, and one of the command's inputs (the same file, whatever its
  name, or a path inside an input directory such as a trace or a dataset);
- the content is written under a temporary name no one else can have chosen or
  planted: a new file made with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and a random name
  (`tempfile.mkstemp`) in the target's directory, or, for a library that makes its
  own files from a path (DuckDB, Parquet writers), a path inside a new private
  directory (`tempfile.mkdtemp`, mode 0700) there; then synced (fsync);
- then it is renamed into place: without `force` by link(2), which never replaces
  anything (a file that appeared meanwhile is left as it is); with `force` by
  rename(2), and only over a regular file (checked again just before);
- Ctrl-C is held back while a temporary name is made and while outputs are
  renamed, so that an interrupt never leaves a partial file under any name.

Directory outputs (`load --dataset`, `load --parquet`, `record -o`, `experiment run
-o`) are checked by `check(path, directory=True, ...)`: a symbolic link or anything
but a directory is refused, as is a directory inside an input. Files roscope
makes inside directories it created itself are made by `new_file` (exclusive) or
`log_file` (appended to, a regular file only), or rewritten by `atomic_write`.
`claim_file` makes a file only if absent, complete when it appears. `private_dir`
makes a locked private directory that `sweep_private_dirs` removes once its
process is gone. `write_control` writes a kernel control file (cgroup). `read_shared` reads
a small file from a place others can write (`/dev/shm`, caches): no link, no FIFO, capped.
`link_tree`, `move_into`, `link_to` and `exclusive` serve roscope's own trees (a flight
recorder's snapshot, a tracer build) and lock files.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from typing import IO

from roscope.errors import InputError

_UMASK = os.umask(0o022)
os.umask(_UMASK)

#: Files that belong to a database file and go with it when it is replaced (DuckDB's log).
DUCKDB_COMPANIONS = (".wal",)


# ---------------------------------------------------------------- checking a target


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def input_of(target: str, inputs: Iterable[str | os.PathLike]) -> str | None:
    """The input that `target` would destroy: the same file (by device and inode,
    whatever the names), a database's log (`DB.wal`), or a directory that holds
    `target` (a trace, a dataset); None if it is none of them."""
    real = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(target))), os.path.basename(target))
    mine = _identity(target) if os.path.lexists(target) and not os.path.islink(target) else None
    for inp in inputs:
        inp = os.fspath(inp)
        if not inp or not os.path.exists(inp):
            continue
        r = os.path.realpath(inp)
        if os.path.isdir(r):
            if _inside(real, r):
                return inp
            continue
        if real in (r, r + ".wal") or (mine is not None and mine == _identity(inp)):
            return inp
    return None


def check(path: str | os.PathLike, *, force: bool | None = False, inputs: Iterable[str | os.PathLike] = (),
          directory: bool = False, what: str = "file") -> str:
    """Checks that roscope may write `path` (see the module's rules) and returns its
    absolute path; an InputError naming `path` otherwise. `force`: an existing
    regular file may be replaced (None: the command has no --force). `directory`:
    `path` is a directory to create or to write into (an existing one is left to
    the caller to judge). `what` names the output in the message of an empty path."""
    text = os.fspath(path)
    if not text:
        raise InputError(f"the output path is empty: give the {what} to write")
    target = os.path.abspath(text)
    parent = os.path.dirname(target)
    if os.path.islink(target):
        raise InputError(f"{text}: is a symbolic link; give the path of the {what} itself "
                         "(roscope never writes through a link)")
    if os.path.lexists(target):
        mode = os.lstat(target).st_mode
        if directory and not stat.S_ISDIR(mode):
            raise InputError(f"{text}: exists and is not a directory")
        if not directory and not stat.S_ISREG(mode):
            raise InputError(f"{text}: exists and is not a regular file; roscope replaces only regular files")
    inp = input_of(target, inputs)
    if inp is not None:
        where = "is inside the input" if os.path.isdir(inp) and os.path.realpath(inp) != os.path.realpath(target) \
            else "is the input"
        raise InputError(f"{text}: {where} {inp}; roscope never writes over what it reads (give another output)")
    if not directory and os.path.lexists(target) and not force:
        hint = " (roscope never overwrites; pass --force to replace it)" if force is not None else " (roscope never overwrites)"
        raise InputError(f"{text}: already exists{hint}")
    if not directory and not os.path.isdir(parent):  # a directory output's parents are made by its caller
        if os.path.lexists(parent):
            raise InputError(f"{text}: {parent} is not a directory")
        raise InputError(f"{text}: the directory {parent} does not exist")
    return target


# ---------------------------------------------------------------- temporary names and commits


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


def _cannot_write(target: str, exc: OSError) -> InputError:
    # The error would name the temporary file, which the user never gave.
    return InputError(f"{target}: cannot write in {os.path.dirname(target)}: {exc.strerror or exc}")


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _commit(tmp: str, target: str, force: bool | None, inputs: tuple = (), companions: tuple[str, ...] = (),
            aside_dir: str | None = None) -> None:
    """Puts the complete file `tmp` (in `target`'s directory) at `target`. Without
    `force` by link(2): a file that appeared meanwhile is left as it is. With
    `force` by rename(2), only over a regular file that is none of `inputs`;
    `companions` (suffixes: DuckDB's `.wal`) of the replaced file are removed with it
    (moved first into `aside_dir`, a private directory, and put back on a failure)."""
    if not force or not os.path.lexists(target):
        try:
            os.link(tmp, target)
        except FileExistsError:
            if not force:
                raise InputError(f"{target}: appeared while roscope was writing it; left as it is"
                                 + (" (pass --force to replace it)" if force is not None else "")) from None
        except OSError:  # a file system without hard links
            if os.path.lexists(target):
                raise InputError(f"{target}: appeared while roscope was writing it; left as it is") from None
            os.replace(tmp, target)
            return
        else:
            os.unlink(tmp)
            return
    if os.path.lexists(target):
        if os.path.islink(target) or not stat.S_ISREG(os.lstat(target).st_mode):
            raise InputError(f"{target}: is no longer a regular file; roscope replaces only regular files")
        inp = input_of(target, inputs)
        if inp is not None:
            raise InputError(f"{target}: is now the input {inp}; roscope never writes over what it reads")
    moved: list[tuple[str, str]] = []
    try:
        for suffix in companions:
            old = target + suffix
            if aside_dir and os.path.isfile(old) and not os.path.islink(old):
                aside = os.path.join(aside_dir, f"old{suffix}")
                os.replace(old, aside)
                moved.append((aside, old))
        os.replace(tmp, target)
    except BaseException:
        for aside, old in moved:
            with contextlib.suppress(OSError):
                os.replace(aside, old)
        raise
    for aside, _old in moved:
        with contextlib.suppress(OSError):
            os.unlink(aside)


def _sync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _new_temp(target: str) -> tuple[int, str]:
    """A new file beside `target` (O_CREAT | O_EXCL | O_NOFOLLOW, a random name, mode 0600).
    Call it with Ctrl-C held back (`interrupts_deferred`), the result kept inside the
    block: an interrupt inside mkstemp, once it made the file, would leave it unnamed."""
    try:
        return tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=os.path.dirname(target))
    except OSError as exc:
        raise _cannot_write(target, exc) from None


@contextlib.contextmanager
def open_output(path: str | os.PathLike, *, force: bool | None = False, inputs: Iterable[str | os.PathLike] = (),
                checked: bool = False) -> Iterator[IO[bytes]]:
    """A binary file to write `path`'s content into; on leaving the block without
    an error it is synced and put at `path` (the module's rules); on an error or
    Ctrl-C it is removed and nothing else changes. `checked`: `check` already ran."""
    inputs = tuple(inputs)
    target = os.path.abspath(path) if checked else check(path, force=force, inputs=inputs)
    tmp = None
    try:
        with interrupts_deferred():
            fd, tmp = _new_temp(target)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)   # as open() would make it (mkstemp makes 0600)
            yield f
            f.flush()
            os.fsync(f.fileno())
        with interrupts_deferred():
            _commit(tmp, target, force, inputs)
        _sync_dir(os.path.dirname(target))
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def write_file(path: str | os.PathLike, data: str | bytes, *, force: bool | None = False,
               inputs: Iterable[str | os.PathLike] = ()) -> str:
    """Writes `data` to the user's file `path` by the module's rules; returns its absolute path."""
    with open_output(path, force=force, inputs=inputs) as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return os.path.abspath(path)


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes (or rewrites) one of roscope's own files, e.g. a manifest in a directory
    roscope made: atomically, replacing only a regular file (never a link or a node)."""
    write_file(path, data, force=True)


class Staged:
    """Outputs that a library writes by path (DuckDB makes its database file and log,
    the Parquet writers their files): `path(target)` checks `target` and gives a path
    in a new private directory beside it; `commit()` puts them all in place (each
    by `_commit`'s rules), or none if one fails; `discard()` (also on leaving a
    `with` block) removes whatever is left."""

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}
        self._items: list[tuple[str, str, bool | None, tuple, tuple[str, ...]]] = []

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def path(self, target: str | os.PathLike, *, force: bool | None = False, inputs: Iterable[str | os.PathLike] = (),
             companions: tuple[str, ...] = (), checked: bool = False) -> str:
        inputs = tuple(inputs)
        target = os.path.abspath(target) if checked else check(target, force=force, inputs=inputs)
        parent = os.path.dirname(target)
        if parent not in self._dirs:
            with interrupts_deferred():  # as in _new_temp
                try:
                    self._dirs[parent] = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=parent)
                except OSError as exc:
                    raise _cannot_write(target, exc) from None
        tmp = os.path.join(self._dirs[parent], os.path.basename(target))
        if any(t == tmp for t, *_ in self._items):
            raise InputError(f"{target}: given twice as an output")
        self._items.append((tmp, target, force, inputs, companions))
        return tmp

    def commit(self) -> None:
        """Syncs every staged file, then renames them into place one after the other
        with Ctrl-C held back (an interrupt never leaves a new database beside old
        Parquet files)."""
        for tmp, *_ in self._items:
            _fsync(tmp)
        with interrupts_deferred():
            for tmp, target, force, inputs, companions in self._items:
                _commit(tmp, target, force, inputs, companions, os.path.dirname(tmp))
        for parent in self._dirs:
            _sync_dir(parent)
        self._items = []

    def discard(self) -> None:
        with interrupts_deferred():  # an interrupt in the middle would leave half of a directory
            for d in self._dirs.values():
                shutil.rmtree(d, ignore_errors=True)
            self._dirs = {}
            self._items = []


# ---------------------------------------------------------------- files inside roscope's own directories


def new_file(path: str | os.PathLike, mode: str = "wb") -> IO:
    """A new file at `path` (in a directory roscope made), opened for writing; never an
    existing file, never through a link (O_CREAT | O_EXCL | O_NOFOLLOW)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    return os.fdopen(fd, mode)


def log_file(path: str | os.PathLike) -> IO[bytes]:
    """`path` opened to append to (created if missing): a process's log in a
    directory roscope made. Never through a link, never anything but a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{os.fspath(path)}: exists and is not a regular file; roscope writes its logs only to regular files")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def claim_file(path: str | os.PathLike, data: str | bytes) -> None:
    """Makes the file `path` with `data` only if nothing is there (link(2) of a
    complete temporary file: it appears whole or not at all). FileExistsError if
    something is."""
    target = os.path.abspath(path)
    tmp = None
    try:
        with interrupts_deferred():
            fd, tmp = _new_temp(target)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, target)
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def rename_new(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Moves `src` (a file or directory of roscope's, e.g. a dataset's run from its
    temporary directory) to `dst`, which must not exist: FileExistsError if it does."""
    if os.path.lexists(dst):
        raise FileExistsError(17, "File exists", os.fspath(dst))
    os.rename(src, dst)


def write_control(path: str | os.PathLike, text: str) -> None:
    """Writes `text` to an existing kernel control file (a cgroup's `cgroup.procs`,
    `cgroup.kill`): never created, never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# ---------------------------------------------------------------- trees and locks of roscope's own


def link_tree(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """A copy of directory `src` (files that never change again: an LTTng chunk once archived)
    at the new path `dst`: its files hard-linked where the file system allows, else copied;
    links inside are kept as links."""
    def link_or_copy(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)
    shutil.copytree(src, dst, copy_function=link_or_copy, symlinks=True)


def move_into(src_dir: str | os.PathLike, dst_dir: str | os.PathLike) -> None:
    """Moves every entry of directory `src_dir` into the existing directory `dst_dir` (a build
    made in a private directory, into its place), replacing entries of the same name."""
    for name in os.listdir(src_dir):
        shutil.move(os.path.join(src_dir, name), os.path.join(dst_dir, name))


def link_to(path: str | os.PathLike, target: str | os.PathLike) -> None:
    """A new symbolic link `path` -> `target` (inside a private directory of roscope's)."""
    os.symlink(target, path)


@contextlib.contextmanager
def exclusive(path: str | os.PathLike) -> Iterator[None]:
    """Holds an exclusive lock (flock) on the lock file `path`, made if absent (mode 0600,
    never through a link), for the block: one holder at a time among roscope's processes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------- reading from shared places


def read_shared(path: str | os.PathLike, limit: int, uid: int | None = None) -> bytes | None:
    """The bytes of a small file in a place others can write (`/dev/shm`, a cache), or
    None when it is not one to trust: opened without following a link and without
    blocking (a FIFO or device planted there never hangs the reader), then it must be a
    regular file of at most `limit` bytes, owned by `uid` when given; at most `limit`
    bytes are read. None too when it cannot be opened (gone, not ours to read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (uid is not None and st.st_uid != uid):
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


# ---------------------------------------------------------------- private directories


#: The lock of each private directory of this process (path -> fd), released on removal.
_LOCKS: dict[str, int] = {}


def temp_root() -> str:
    """The directory of temporary files ($TMPDIR, else /tmp)."""
    return tempfile.gettempdir()


def private_dir(parent: str, prefix: str) -> str:
    """A new directory in `parent` of this process only (mode 0700, a random name
    after `prefix`), held under a shared lock (`flock`) while this process lives or
    until `remove_private_dir`: `sweep_private_dirs` never removes it meanwhile."""
    path = None
    try:
        with interrupts_deferred():  # a Ctrl-C inside mkdtemp would leave its directory unnamed
            path = tempfile.mkdtemp(prefix=prefix, dir=parent)
            _LOCKS[path] = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            # Where flock is not supported, nothing takes the lock, so nothing is removed.
            with contextlib.suppress(OSError):
                fcntl.flock(_LOCKS[path], fcntl.LOCK_SH)
    except BaseException:
        if path is not None:
            remove_private_dir(path)
        raise
    return path


def release_private_dir(path: str) -> None:
    """Releases the lock of a directory of `private_dir` that is roscope's output now (renamed
    into place): it is no longer private and is not removed."""
    fd = _LOCKS.pop(path, None)
    if fd is not None:
        os.close(fd)


def remove_private_dir(path: str) -> None:
    """Removes a directory of `private_dir` with what is in it, and releases its lock
    (Ctrl-C held back meanwhile: an interrupt in the middle would leave half of it)."""
    with interrupts_deferred():
        shutil.rmtree(path, ignore_errors=True)
        fd = _LOCKS.pop(path, None)
        if fd is not None:
            os.close(fd)


def sweep_private_dirs(parent: str, prefix: str, min_age: float) -> list[str]:
    """Removes this user's directories of `private_dir` in `parent` whose name starts
    with `prefix`, older than `min_age` seconds, that no process holds (their
    roscope was killed without cleaning up). Returns those removed."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
            if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid()
                    or time.time() - st.st_ctime < min_age):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed
