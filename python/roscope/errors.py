"""roscope's error hierarchy: who is at fault decides how an error is shown.

- ``RoscopeError``: base of every error roscope raises on purpose.
- ``UserError(RoscopeError)``: the user's input or environment is wrong (a path,
  an argument, a trace, a database, a full disk). The CLI prints
  ``roscope: error: <message>`` without a traceback and exits 1. The message
  names the file or argument and says what is wrong.
  - ``InputError(UserError)``: a path or argument given by the user is wrong
    (missing, not a trace, bad regex, no topic matches, out of range).
  - ``DatabaseError(UserError)``: a DuckDB database cannot be opened, read or
    written (locked by another process, corrupt, not a roscope database, schema
    of another version, read-only, disk full).

``user_message(exc)`` says whether an exception is a user error and gives the
message to print: UserError, ``roscope._core.TraceError`` (an unreadable trace),
OSErrors about a file (``FileNotFoundError``, ``PermissionError``, a full
disk, ...), and DuckDB errors that blame the database or the machine (locked,
corrupt, disk full; worded by `database_error`). Anything else that escapes a
command is a bug in roscope: the CLI prints its traceback, asks to report it,
and exits 70.

``database_error(exc, path)`` is the one mapping of a DuckDB error to a clear
message, and ``is_environment_error(exc)`` says whether a DuckDB error blames the
database or the machine. This module is the lowest of the package: it imports
nothing of roscope (nor DuckDB: an error of DuckDB's means DuckDB is loaded).
"""
from __future__ import annotations

import errno
import re
import sys


class RoscopeError(Exception):
    """Base of the errors roscope raises on purpose."""


class UserError(RoscopeError):
    """The user's input or environment is wrong: shown without a traceback."""


class InputError(UserError):
    """A path or argument the user gave is wrong (missing, not a trace, bad regex, out of range)."""


class NoTopicMatch(InputError):
    """A topic regex matches none of the trace's topics (yet: `roscope watch` waits for them)."""


class DatabaseError(UserError):
    """A database cannot be opened, read or written (locked, corrupt, not roscope's, read-only, disk full)."""


#: OSError numbers that say something about the user's files or machine, not about roscope.
_ENVIRONMENT_ERRNOS = {
    errno.ENOENT, errno.EACCES, errno.EPERM, errno.EEXIST, errno.EISDIR, errno.ENOTDIR, errno.ENOSPC,
    errno.EROFS, errno.EDQUOT, errno.ENAMETOOLONG, errno.ELOOP, errno.EMFILE, errno.ENFILE, errno.EXDEV,
    errno.ENOTEMPTY, errno.EBUSY, errno.ETXTBSY, errno.EFBIG, errno.EIO,
}


_USER_OSERRORS = (FileNotFoundError, PermissionError, FileExistsError, IsADirectoryError, NotADirectoryError)


def _describe_oserror(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.filename is not None and exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


def user_message(exc: BaseException) -> str | None:
    """The message to print if `exc` is the user's (or the environment's) fault, else None (a bug)."""
    if isinstance(exc, UserError):
        return str(exc)
    # The core raised it only if it is loaded (a missing extension raised nothing).
    core = sys.modules.get("roscope._core")
    if core is not None and isinstance(exc, core.TraceError):
        return str(exc)
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb"):
        if isinstance(exc, duckdb.OutOfMemoryException):
            # A query that no step gives more memory (memory.within_memory) needed more than the budget.
            return (f"DuckDB ran out of its memory budget ({exc}); give it more with --memory "
                    "(e.g. --memory 1G; 0: DuckDB's own, 80% of RAM)")
        return str(database_error(exc, None, "read")) if is_environment_error(exc) else None
    if isinstance(exc, OSError) and (
        isinstance(exc, _USER_OSERRORS) or exc.errno in _ENVIRONMENT_ERRNOS or exc.filename is not None
    ):
        # Raised with a message of ours (FileNotFoundError("x: no such file")): no errno, print it as is.
        return _describe_oserror(exc) if exc.errno is not None and exc.strerror else str(exc)
    return None


# DuckDB error texts (duckdb 1.x) -> what the user should hear.
_LOCK = re.compile(r"Conflicting lock is held in (?P<prog>.*?) \(PID (?P<pid>\d+)\)")
_CORRUPT = ("corrupt database file", "not a valid duckdb database", "could not read enough bytes",
            "checksum", "invalid database header", "missing magic bytes")


def database_error(exc: BaseException, path: str | None, doing: str = "open", for_writing: bool = False) -> DatabaseError:
    """The one mapping of a DuckDB error to a clear message naming `path` (None:
    the database at hand): locked (by which process), corrupt, full disk,
    permission, read-only, missing directory; otherwise DuckDB's own message.
    `for_writing`: roscope was opening it to write (then any reader locks it too)."""
    path = "the database" if path is None else path
    msg = str(exc)
    low = msg.lower()
    m = _LOCK.search(msg)
    if m or "could not set lock" in low:
        who = f"process {m['pid']} ({m['prog']})" if m else "another process"
        if for_writing:  # a reader holds it as well as a writer would: say nothing about which
            return DatabaseError(f"{path}: the database is locked by {who}, which has it open; roscope needs it "
                                 "alone to write into it; wait until it finishes, or stop it")
        return DatabaseError(f"{path}: the database is locked by {who}, which has it open for writing; "
                             "wait until it finishes, or stop it")
    if "no space left" in low or "disk is full" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: the disk is full")
    if "permission denied" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: permission denied")
    if "read-only file system" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: the file system is read-only")
    if "read-only mode" in low or "read only mode" in low:
        return DatabaseError(f"{path}: the database is open read-only; open it with "
                             "roscope.open(path, read_only=False) to store results in it")
    if "no such file or directory" in low:
        return DatabaseError(f"{path}: cannot {doing} the database: no such file or directory")
    if any(k in low for k in _CORRUPT):
        return DatabaseError(f"{path}: corrupt or truncated database, or not a DuckDB file ({msg}); "
                             "load the trace again")
    if "version" in low and ("storage" in low or "serialization" in low):
        return DatabaseError(f"{path}: written by another DuckDB version ({msg}); load the trace again")
    return DatabaseError(f"{path}: cannot {doing} the database: {msg}")


def is_environment_error(exc: BaseException) -> bool:
    """Whether a DuckDB exception says the database or the machine is at fault
    (locked, corrupt, disk full, permission, read-only, interrupted I/O), not roscope."""
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, (duckdb.IOException, duckdb.PermissionException)):
        return True
    low = str(exc).lower()
    return any(k in low for k in _CORRUPT) or "read-only mode" in low or "no space left" in low


def interrupted(exc: BaseException | None) -> bool:
    """Whether `exc` is Ctrl-C, also when DuckDB turned it into its own exception:
    SIGINT mid-query makes DuckDB stop the query and raise `InterruptException`, or a
    plain RuntimeError "Query interrupted" (it consumed the KeyboardInterrupt), or,
    when the signal hit Python code DuckDB called (an Arrow scan), a DuckDB error
    quoting the KeyboardInterrupt. Followed through `__cause__`/`__context__`, so
    an error raised while handling the interrupt is one too."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, KeyboardInterrupt):
            return True
        duckdb = sys.modules.get("duckdb")
        if duckdb is not None and isinstance(exc, duckdb.InterruptException):
            return True
        if type(exc) is RuntimeError and str(exc) == "Query interrupted":
            return True
        if duckdb is not None and isinstance(exc, duckdb.Error) and "KeyboardInterrupt" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
