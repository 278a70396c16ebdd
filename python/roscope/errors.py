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
corrupt, disk full; worded by ``roscope.db.database_error``). Anything else
that escapes a command is a bug in roscope: the CLI prints its traceback, asks
to report it, and exits 70.
"""
from __future__ import annotations

import errno


class RoscopeError(Exception):
    """Base of the errors roscope raises on purpose."""


class UserError(RoscopeError):
    """The user's input or environment is wrong: shown without a traceback."""


class InputError(UserError):
    """A path or argument the user gave is wrong (missing, not a trace, bad regex, out of range)."""


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
    try:
        from roscope import _core

        if isinstance(exc, _core.TraceError):
            return str(exc)
    except ImportError:  # the extension is missing: then nothing raised a TraceError
        pass
    if type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb"):
        import duckdb

        from roscope import db

        if isinstance(exc, duckdb.OutOfMemoryException):
            # A query that no step gives more memory (db.within_memory) needed more than the budget.
            return (f"DuckDB ran out of its memory budget ({exc}); give it more with --memory "
                    "(e.g. --memory 1G; 0: DuckDB's own, 80% of RAM)")
        return str(db.database_error(exc, None, "read")) if db.is_environment_error(exc) else None
    if isinstance(exc, OSError) and (
        isinstance(exc, _USER_OSERRORS) or exc.errno in _ENVIRONMENT_ERRNOS or exc.filename is not None
    ):
        # Raised with a message of ours (FileNotFoundError("x: no such file")): no errno, print it as is.
        return _describe_oserror(exc) if exc.errno is not None and exc.strerror else str(exc)
    return None
