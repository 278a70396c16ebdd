"""The `roscope` command.

Each subcommand lives in its own module under ``roscope/commands/`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (taking the
parsed args, returning an exit code). Adding a command means adding a module.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

import roscope.commands as _commands
from roscope import __version__
from roscope.errors import UserError, interrupted, user_message
from roscope.extras import missing_message
from roscope.text import escape

__all__ = ["UserError", "build_parser", "main"]

#: Exit status of a bug in roscope (sysexits' EX_SOFTWARE).
EXIT_BUG = 70


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `argv`, of only the command it names when
    it names one (its first word): a command then imports its own modules only, not
    every other command's (the recorder, the data-flow analysis, the database module:
    about 50 ms, a third of `roscope info` on a 684k-event trace)."""
    named = _command(argv[0]) if argv else None
    parser = argparse.ArgumentParser(
        prog="roscope",
        description="Tracing and latency analysis for ROS 2 and ROS 1 systems.",
    )
    parser.add_argument("--version", action="version", version=f"roscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in [named] if named else [importlib.import_module(f"roscope.commands.{n}") for n in _command_names()]:
        module.register(sub)
    return parser


def _command_names() -> list[str]:
    """The name of every command: the public modules of `roscope.commands`."""
    import pkgutil  # here: only --help and an unknown command list them (pkgutil imports inspect: ~6 ms)

    return sorted(m.name for m in pkgutil.iter_modules(_commands.__path__) if not m.name.startswith("_"))


def _command(name: str):
    """The module of the command `name`, or None if no command has that name."""
    if not name.isidentifier() or name.startswith("_"):
        return None
    module = f"roscope.commands.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:  # a module the command imports is missing: that error stands
            raise
        return None


def main(argv: list[str] | None = None) -> int:
    """Runs one command. Exit status: 0 ok, 1 user error (a message, no traceback),
    2 bad usage (argparse), 70 a bug in roscope (with its traceback), 130 Ctrl-C.

    Ctrl-C is 130 however it shows: a KeyboardInterrupt, DuckDB's exception in its
    place (errors.interrupted), an error raised on the way out of an interrupted
    query, or nothing at all (DuckDB may consume the interrupt and finish its query):
    the handler installed here notes every SIGINT. Run as the program (`argv` None),
    SIGINT is ignored once the command is done, so that one arriving while Python
    and DuckDB free their memory does not end the process by the signal."""
    top = argv is None
    got: list[int] = []

    def on_sigint(signum, _frame):
        got.append(signum)
        raise KeyboardInterrupt

    # Only where Python's own handler is installed (not in a job started with SIGINT ignored).
    ours = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    old = signal.signal(signal.SIGINT, on_sigint) if ours else None
    try:
        code = _run(argv, got)
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.SIG_IGN if top else old)
    return 130 if got else code


def _run(argv: list[str] | None, got: list[int]) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(argv)  # imports the command's modules: Ctrl-C often lands here
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        return 130
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # `roscope dump ... | head`: the reader went away; that is not an error.
        try:
            sys.stdout = None  # type: ignore[assignment]
        except Exception:
            pass
        return 0
    except BaseException as exc:
        if got or interrupted(exc):  # Ctrl-C, also as DuckDB's exception mid-query, or an error it caused
            return 130
        if not isinstance(exc, Exception):  # SystemExit and the like keep their meaning
            raise
        msg = user_message(exc) or missing_message(exc, getattr(args, "command", None))
        if msg is not None:
            print(f"roscope: error: {escape(msg)}", file=sys.stderr)
            return 1
        import traceback  # here: only a bug prints one

        traceback.print_exc()
        print(f"roscope: error: this is a bug in roscope {__version__}, please report it "
              "with the command you ran and the traceback above", file=sys.stderr)
        return EXIT_BUG
