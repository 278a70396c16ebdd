"""Where `roscope deps` analyses a translation unit: in a child process of its own,
on a thread with a large stack.

libclang's parser and the walk of `function.Function` recurse once per level of
nesting in the source (a chain of `a + a + ...`, of calls `s.f().f()...`, of
blocks). So each translation unit is parsed and walked on a thread whose stack is
`STACK_BYTES` (virtual: only what the recursion touches is used), with libclang
told to parse on the calling thread (`LIBCLANG_NOTHREADS`: its own parsing thread
has 8 MiB, which a 30,000-term expression overflows), and with Python's recursion
limit raised to what the walk's own limit (`function.MAX_NESTING`) needs. And it
runs in a child process: should libclang still crash (a nesting deeper than even
that stack takes), the child dies, not roscope, which names the file.

Children ignore SIGINT: on Ctrl-C the parent stops them (SIGKILL) and goes on
with KeyboardInterrupt.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence

from roscope.deps.function import MAX_NESTING
from roscope.errors import InputError

#: The stack of the thread that parses and walks one translation unit (bytes). libclang
#: takes about 1 KiB per level of a nested expression (a 30,000-term sum needs 32 MiB);
#: the walk, whose nesting stops at MAX_NESTING, far less.
STACK_BYTES = 512 << 20
#: Python's recursion limit in a child: the walk's Python frames per level of nesting
#: (at most 10), with room for the rest.
RECURSION_LIMIT = 10 * MAX_NESTING + 20_000


def run_on_large_stack(fn: Callable, *args):
    """fn(*args) on a thread with a STACK_BYTES stack and RECURSION_LIMIT (what
    it raises is raised here); libclang parses on that thread."""
    os.environ["LIBCLANG_NOTHREADS"] = "1"
    out: dict = {}

    def target():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller's thread
            out["error"] = exc

    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    old_size = threading.stack_size(STACK_BYTES)
    try:
        t = threading.Thread(target=target, name="roscope-deps-unit")
        t.start()
    finally:
        threading.stack_size(old_size)
    try:
        t.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _child(conn, fn: Callable, source: str, args: tuple) -> None:
    """In the child: the result, the user error, or the bug's traceback, sent to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        msg = ("ok", run_on_large_stack(fn, source, *args))
    except InputError as exc:
        msg = ("error", str(exc))
    except RecursionError:
        msg = ("error", f"{source}: code nested too deeply for roscope deps (Python's recursion limit, "
                        f"{RECURSION_LIMIT:,} frames, was reached)")
    except BaseException:  # a bug: its traceback goes to the parent
        msg = ("bug", traceback.format_exc())
    try:
        conn.send(msg)
    finally:
        conn.close()


def _crashed(source: str, exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"signal {-exitcode}"
    else:
        how = f"exit status {exitcode}"
    return (f"{source}: libclang crashed while roscope deps analysed it ({how}); code nested deeper than it can "
            f"parse (an expression of hundreds of thousands of terms) does this")


def run_units(fn: Callable, work: Sequence[tuple], jobs: int, done: Callable[[str, object], None]) -> None:
    """fn(source, *args) for each (source, *args) of `work`, each in a child process,
    `jobs` at a time; done(source, result) as each finishes. An InputError of a
    child is raised here (with its message), as is a child's crash (naming its
    source); a bug in a child is a RuntimeError with the child's traceback."""
    ctx = multiprocessing.get_context("fork")
    pending = list(work)
    running: dict = {}  # the read end of a child's pipe -> (process, source)
    try:
        while pending or running:
            while pending and len(running) < jobs:
                source, *args = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_child, args=(send, fn, source, tuple(args)), daemon=True,
                                name="roscope-deps-worker")
                p.start()
                send.close()
                running[recv] = (p, source)
            for recv in multiprocessing.connection.wait(list(running)):
                p, source = running.pop(recv)
                try:
                    kind, value = recv.recv()
                except EOFError:
                    kind, value = "crash", None
                finally:
                    recv.close()
                p.join()
                if kind == "crash":
                    raise InputError(_crashed(source, p.exitcode))
                if kind == "error":
                    raise InputError(value)
                if kind == "bug":
                    raise RuntimeError(f"roscope deps failed on {source}; the worker's traceback:\n{value}")
                done(source, value)
    finally:
        for recv, (p, _source) in running.items():
            p.kill()
            p.join()
            recv.close()
