"""The `roscope` command.

Each subcommand lives in its own module under ``roscope/commands/`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (taking the
parsed args, returning an exit code). Adding a command means adding a module.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback

import roscope.commands as _commands
from roscope import __version__
from roscope.errors import UserError, user_message
from roscope.text import escape

__all__ = ["UserError", "build_parser", "main"]

#: Exit status of a bug in roscope (sysexits' EX_SOFTWARE).
EXIT_BUG = 70


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `argv`, of only the command it names when
    it names one (its first word): a command then imports its own modules only, not
    every other command's (the recorder, the data-flow analysis, the database module:
    about 50 ms, a third of `roscope info` on a 684k-event trace)."""
    names = sorted(m.name for m in pkgutil.iter_modules(_commands.__path__) if not m.name.startswith("_"))
    if argv and argv[0] in names:
        names = [argv[0]]
    parser = argparse.ArgumentParser(
        prog="roscope",
        description="Tracing and latency analysis for ROS 2 and ROS 1 systems.",
    )
    parser.add_argument("--version", action="version", version=f"roscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in names:
        importlib.import_module(f"roscope.commands.{name}").register(sub)
    return parser


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, also when DuckDB turned it into its own exception mid-query."""
    duckdb = sys.modules.get("duckdb")
    return isinstance(exc, KeyboardInterrupt) or (duckdb is not None and isinstance(exc, duckdb.InterruptException))


def main(argv: list[str] | None = None) -> int:
    """Runs one command. Exit status: 0 ok, 1 user error (a message, no traceback),
    2 bad usage (argparse), 70 a bug in roscope (with its traceback), 130 Ctrl-C."""
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
        if _interrupted(exc):
            return 130
        if not isinstance(exc, Exception):  # SystemExit and the like keep their meaning
            raise
        msg = user_message(exc)
        if msg is not None:
            print(f"roscope: error: {escape(msg)}", file=sys.stderr)
            return 1
        traceback.print_exc()
        print(f"roscope: error: this is a bug in roscope {__version__}, please report it "
              "with the command you ran and the traceback above", file=sys.stderr)
        return EXIT_BUG
