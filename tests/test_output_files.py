"""Issue 31: one writer for every output (roscope.files).

1. The source walk: no module of python/roscope but roscope/files.py opens a file for
   writing, makes a temporary name or renames a file into place (read from the source
   with `ast`); the few calls that hand a path to a library writer (DuckDB, Parquet)
   are listed with the private directory their path comes from. The walk is shown to
   find every kind of write on a snippet that has each.
2. The output matrix: every verb that writes, with every output flag, run as the real
   `roscope` command against a device node (`mknod c 1 3`, the null device's numbers),
   a FIFO, a symbolic link to another file, temporary names planted as symbolic links
   (the old `.OUT.tmp-PID`, `OUT.tmp-PID`, `OUT.tmp` and DuckDB's `.wal` beside them,
   for the PID of the very process: the shell plants them, then `exec`s roscope) and
   one of the command's inputs, with and without --force. Refused targets: exit 1,
   one line on stderr naming the target, the node / FIFO / link / input unchanged
   (type, inode, device numbers, link text, bytes), nothing else made. Planted names:
   the output is written (exit 0) and neither the planted links nor their target
   change. Expected values come from os.lstat / os.readlink / file bytes, never from
   roscope. The planted cases of `record` (LTTng) and `spark load` (Spark) are marked
   and run by their own tests.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import shutil
import stat
import subprocess

import pytest

from tests.support.shared import TRACES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "python", "roscope")
WRITER = os.path.join(PACKAGE, "files.py")
PINGPONG = os.path.join(TRACES, "ros2", "pingpong-rolling-2021")
STREAM = "ust/uid/1000/64-bit/ros2_0"  # one of pingpong's stream files

# ----------------------------------------------------------------- 1. the source walk

#: open()-like calls and where their mode argument is (position, keyword).
OPENERS = {"open": 1, "io.open": 1, "builtins.open": 1, "os.fdopen": 1, "gzip.open": 1, "bz2.open": 1,
           "lzma.open": 1, "codecs.open": 1}
#: Calls that write, whatever their arguments.
WRITERS = {"os.replace", "os.rename", "os.renames", "os.link", "os.symlink", "os.mkfifo", "os.mknod", "os.truncate",
           "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.copyfileobj"}
#: Method names that write a file whatever their receiver (pathlib, DuckDB, pyarrow, pandas).
METHODS = {"write_text", "write_bytes", "rename", "symlink_to", "hardlink_to", "touch", "write_parquet", "write_csv",
           "to_parquet", "to_csv", "write_table", "savefig", "mkstemp", "mkdtemp", "NamedTemporaryFile",
           "TemporaryFile", "SpooledTemporaryFile", "TemporaryDirectory"}
#: os.open flags that write.
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
#: Library writers given a path that roscope.files made private: (module, function, method) -> where the path comes from.
ALLOWED = {
    ("roscope/loading.py", "_write_outputs", "write_parquet"): "files.Staged.path: a private directory beside the file",
    ("roscope/dataset.py", "_export", "write_parquet"): "the run's directory from files.private_dir",
    ("roscope/dataset.py", "_write_run_row", "write_parquet"): "the run's directory from files.private_dir",
}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"  # a call, a subscript...: Path(p).open is "?.open"


def _mode(call: ast.Call, pos: int) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value
    return call.args[pos] if len(call.args) > pos else None


def writes(source: str, rel: str) -> list[str]:
    """Every place in `source` that writes a file, as 'rel:line: what'."""
    tree = ast.parse(source, rel)
    found = []
    funcs: list[tuple[int, int, str]] = [(n.lineno, n.end_lineno, n.name) for n in ast.walk(tree)
                                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def where(line: int) -> str:
        inner = [f for f in funcs if f[0] <= line <= f[1]]
        return min(inner, key=lambda f: f[1] - f[0])[2] if inner else ""

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if "tempfile" in mods:
                found.append(f"{rel}:{node.lineno}: imports tempfile")
            continue
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        last = name.rsplit(".", 1)[-1]
        what = None
        path_open = (last == "open" and isinstance(node.func, ast.Attribute) and name not in OPENERS and name != "os.open"
                     and not name.endswith(("opening.open", "dataset.open", "ds.open", "roscope.open",
                                                   "opener.open")))  # urllib's OpenerDirector: reads a URL
        if name in OPENERS or path_open:  # open(path, mode) or Path(...).open(mode)
            mode = _mode(node, 0 if path_open else OPENERS[name])
            if mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                                         and not set(mode.value) & set("wax+")):
                what = f"{name}(mode={ast.unparse(mode)})"
        elif name == "os.open":
            flags = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "") for n in ast.walk(node.args[1])} \
                if len(node.args) > 1 else set()
            if flags & WRITE_FLAGS or not flags:
                what = f"os.open({ast.unparse(node.args[1]) if len(node.args) > 1 else ''})"
        elif name in WRITERS:
            what = name
        elif isinstance(node.func, ast.Attribute) and last in METHODS:
            if (rel, where(node.lineno), last) not in ALLOWED:
                what = f".{last}()"
        if what:
            found.append(f"{rel}:{node.lineno}: {what}")
    return found


def test_only_roscope_files_writes_files():
    found = []
    for d, subdirs, names in os.walk(PACKAGE):
        subdirs[:] = [s for s in subdirs if s != "__pycache__"]
        for n in sorted(names):
            path = os.path.join(d, n)
            if n.endswith(".py") and path != WRITER:
                rel = os.path.relpath(path, os.path.dirname(PACKAGE))
                found += writes(open(path, encoding="utf-8").read(), rel)
    assert found == [], "files written outside roscope/files.py:\n" + "\n".join(found)


def test_the_walk_finds_every_kind_of_write():
    """The walk above can fail: each line of this snippet is one write it must find."""
    snippet = '''
import tempfile
from pathlib import Path
def f(p, rel, pq, t, mode):
    open(p, "w")
    open(p, mode="ab")
    open(p, "r+")
    open(p, mode)
    Path(p).open("x")
    os.fdopen(3, "wb")
    os.open(p, os.O_WRONLY | os.O_CREAT)
    Path(p).write_text("x")
    Path(p).write_bytes(b"x")
    os.replace(p, p)
    os.rename(p, p)
    os.link(p, p)
    shutil.copyfile(p, p)
    shutil.move(p, p)
    Path(p).rename(p)
    rel.write_parquet(p)
    pq.write_table(t, p)
    tempfile.mkstemp()
'''
    found = writes(snippet, "snippet.py")
    lines = {int(f.split(":")[1]) for f in found}
    assert lines == set(range(2, 3)) | set(range(5, 23)), found
    harmless = 'def g(p):\n    open(p)\n    open(p, "rb")\n    os.open(p, os.O_RDONLY)\n    "a".replace("a", "b")\n'
    assert writes(harmless, "harmless.py") == []


# ----------------------------------------------------------------- 2. the output matrix


@dataclasses.dataclass
class Out:
    """One verb's output flag: `argv` with {T} (the target), {tmp}, {trace} (a copy of
    pingpong), {db} (pingpong's database), {src} (a C++ file), {exp} (an experiment
    file), {run} (an experiment's results); `directory`: the output is a directory;
    `force`: the verb has --force; `input`: the target that is one of its inputs."""

    id: str
    argv: list[str]
    directory: bool = False
    force: bool = True
    input: str | None = None


OUTPUTS = [
    Out("report-o", ["report", "{db}", "-o", "{T}"], input="{db}"),
    Out("export-perfetto", ["export", "{db}", "--perfetto", "{T}"], input="{db}"),
    Out("deps-o", ["deps", "{src}", "-o", "{T}"], input="{src}"),
    Out("load-o", ["load", "{trace}", "-o", "{T}"], input="{trace}/" + STREAM),
    Out("load-parquet", ["load", "{trace}", "-o", "{tmp}/side.duckdb", "--parquet", "{T}"], directory=True,
        input="{trace}"),
    Out("load-dataset", ["load", "{trace}", "--dataset", "{T}"], directory=True, input="{trace}/ds"),
    Out("spark-load-dataset", ["spark", "load", "{trace}", "--dataset", "{T}"], directory=True, input="{trace}/ds"),
    Out("record-o", ["record", "--no-preload", "--name", "out-matrix-{pid}", "-o", "{T}", "--", "true"],
        directory=True, force=False),
    Out("experiment-run-o", ["experiment", "run", "{exp}", "-o", "{T}"], directory=True, force=False, input="{exp}"),
    Out("experiment-report-html", ["experiment", "report", "{run}", "--html", "{T}"], force=False,
        input="{run}/manifest.json"),
]
KINDS = ["device", "fifo", "symlink", "planted", "input"]
#: Planted cases that need a service: run by their own tests, with their marks.
ELSEWHERE = {("record-o", "planted"), ("spark-load-dataset", "planted")}


def _cases(select=lambda o, k: True):
    out = []
    for o in OUTPUTS:
        for k in KINDS:
            if k == "input" and o.input is None:
                continue  # `record` reads no file of the user's
            for force in ([False, True] if o.force else [False]):
                if select(o, k):
                    out.append(pytest.param(o, k, force, id=f"{o.id}-{k}-{'force' if force else 'no-force'}"))
    return out


MATRIX = _cases(lambda o, k: (o.id, k) not in ELSEWHERE)
EXPERIMENT = 'name: e\ntrials: 1\nsystem: {start: [sleep, "30"]}\ndriver: {command: ["true"]}\nscenarios:\n  - {name: s}\n'


def md5(path) -> str:
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def tree(d) -> dict:
    """Every entry under `d`: relative path -> (type bits, inode, bytes' md5 for files, link text for links)."""
    out = {}
    for root, dirs, names in os.walk(d):
        for n in dirs + names:
            p = os.path.join(root, n)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            extra = md5(p) if stat.S_ISREG(st.st_mode) else os.readlink(p) if stat.S_ISLNK(st.st_mode) else st.st_rdev
            out[os.path.relpath(p, d)] = (kind, st.st_ino, extra)
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory, roscope_cmd) -> dict:
    """What the cases copy: pingpong's database (`roscope load`), an experiment's results."""
    d = tmp_path_factory.mktemp("outputs-made")
    db = d / "pingpong.duckdb"
    p = subprocess.run([*roscope_cmd, "load", PINGPONG, "-o", str(db)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (d / "exp.yaml").write_text(EXPERIMENT)
    p = subprocess.run([*roscope_cmd, "experiment", "run", str(d / "exp.yaml"), "-o", str(d / "run")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and (d / "run" / "manifest.json").is_file(), p.stderr
    return {"db": db, "run": d / "run"}


def _setup(tmp, made) -> dict:
    trace = tmp / "trace"
    shutil.copytree(PINGPONG, trace)
    for root, dirs, names in os.walk(trace):  # the shared originals are read-only
        for n in dirs + names:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    shutil.copyfile(made["db"], tmp / "pingpong.duckdb")
    shutil.copytree(made["run"], tmp / "run")
    (tmp / "node.cpp").write_text("static int state;\nvoid on_message() { state = 1; }\nint read() { return state; }\n")
    (tmp / "exp.yaml").write_text(EXPERIMENT)
    (tmp / "victim.txt").write_text("the file a link points to\n")
    (tmp / "victim-dir").mkdir()
    return {"tmp": str(tmp), "trace": str(trace), "db": str(tmp / "pingpong.duckdb"), "src": str(tmp / "node.cpp"),
            "exp": str(tmp / "exp.yaml"), "run": str(tmp / "run"), "T": str(tmp / "target"), "pid": str(os.getpid())}


def _planted_names(target: str) -> list[str]:
    """Temporary names an attacker could predict (what report, export, load and record
    used or their libraries add), for the PID `$$` of the shell that execs roscope."""
    d, n = os.path.split(target)
    return [os.path.join(d, x) for x in (f".{n}.tmp-$$", f"{n}.tmp-$$", f"{n}.tmp", f".{n}.tmp", f"{n}.tmp.wal",
                                         f"{n}.wal", f".{n}.tmp.wal")]


def run_case(o: Out, kind: str, force: bool, tmp, made, roscope_cmd) -> None:
    ctx = _setup(tmp, made)
    target = ctx["T"]
    victim = str(tmp / ("victim-dir" if o.directory else "victim.txt"))
    if kind == "device":
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        os.symlink(victim, target)
    elif kind == "input":
        target = ctx["T"] = o.input.format_map(ctx)
    argv = [a.format_map(ctx) for a in o.argv] + (["--force"] if force else [])
    env = dict(os.environ, XDG_STATE_HOME=str(tmp / "state"))
    before = tree(tmp)
    if kind == "planted":
        plant = "".join(f'ln -s "$V" "{p}"; ' for p in _planted_names(target))
        cmd = ["sh", "-c", f'V="$1"; shift; {plant}exec "$@"', "sh", victim, *roscope_cmd, *argv]
    else:
        cmd = [*roscope_cmd, *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    after = tree(tmp)
    assert "Traceback" not in p.stderr and p.returncode >= 0, p.stderr
    if kind == "planted":
        assert p.returncode == 0, p.stderr
        st = os.lstat(target)
        assert (stat.S_ISDIR if o.directory else stat.S_ISREG)(st.st_mode), "no output made"
        for k, v in before.items():  # the victim and everything that was there: unchanged
            assert after.get(k) == v, f"{k} changed"
        planted = sorted(k for k in after if k not in before and os.path.islink(tmp / k))
        assert len(planted) == len(_planted_names(target))
        for k in planted:
            assert os.readlink(tmp / k) == victim, k
        leftovers = [k for k in after if k not in before and k not in planted and ".tmp" in os.path.basename(k)
                     and not k.startswith(("run/", "trace/"))]
        assert leftovers == [], leftovers
        return
    assert p.returncode == 1, f"exit {p.returncode}; stderr:\n{p.stderr}"
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roscope: error: "), p.stderr
    assert target in lines[0] or os.path.relpath(target) in lines[0], lines[0]
    assert after == before, {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                             if before.get(k) != after.get(k)}
    if kind == "device":
        st = os.lstat(target)
        assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    elif kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    elif kind == "symlink":
        assert os.readlink(target) == victim


needs_traces = pytest.mark.skipif(not os.path.isdir(PINGPONG), reason=f"no shared traces at {TRACES}")


@needs_traces
@pytest.mark.parametrize("out, kind, force", MATRIX)
def test_output_matrix(out, kind, force, tmp_path, made, roscope_cmd):
    run_case(out, kind, force, tmp_path, made, roscope_cmd)


@needs_traces
@pytest.mark.lttng
@pytest.mark.parametrize("out, kind, force", _cases(lambda o, k: (o.id, k) == ("record-o", "planted")))
def test_record_output_past_planted_names(out, kind, force, tmp_path, made, roscope_cmd, lttng_ready):
    run_case(out, kind, force, tmp_path, made, roscope_cmd)


@needs_traces
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("out, kind, force", _cases(lambda o, k: (o.id, k) == ("spark-load-dataset", "planted")))
def test_spark_load_past_planted_names(out, kind, force, tmp_path, made, roscope_cmd):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    run_case(out, kind, force, tmp_path, made, roscope_cmd)


def test_the_matrix_covers_every_writing_verb_and_flag():
    """Every verb and output flag of the issue's list, with every kind and --force where the verb has it."""
    ids = {o.id for o in OUTPUTS}
    assert ids == {"report-o", "export-perfetto", "deps-o", "load-o", "load-parquet", "load-dataset",
                   "spark-load-dataset", "record-o", "experiment-run-o", "experiment-report-html"}
    total = len(_cases())
    assert total == len(MATRIX) + len(ELSEWHERE) + sum(1 for o in OUTPUTS if o.force and (o.id, "planted") in ELSEWHERE)
    assert total == 84, total
