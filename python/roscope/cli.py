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

import roscope.commands as _commands
from roscope import __version__


class UserError(Exception):
    """An error caused by the user's input: printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roscope",
        description="Tracing and latency analysis for ROS 2 and ROS 1 systems.",
    )
    parser.add_argument("--version", action="version", version=f"roscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(_commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"roscope.commands.{mod.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
    except (UserError, OSError, ValueError) as exc:
        print(f"roscope: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
