#!/usr/bin/env python3
"""The live source of `roscope watch`, chosen by measurement: LTTng session rotation into trace
chunks against the lttng-relayd live protocol, read by babeltrace2 or by roscope's own client
(docs/watch.md, "Live source").

Each case runs in a private mount namespace (`unshare --mount`, tmpfs on /var/run/lttng and
/dev/shm) with its own lttng-sessiond (and lttng-relayd for the live protocol), so that the
daemons' CPU is this case's alone and no other session on the machine sees its events. A paced
emitter (tests/fixtures fx_emit `rate R S`: R roscope_fx:tick events per second, in bursts every
millisecond) runs for --duration seconds into a per-UID channel of 8 x 1 MiB sub-buffers (what
`roscope record` uses), and a reader takes the events as they come:

  rotate-P   `lttng enable-rotation --timer P` (monitor timer 100 ms); the reader polls
             OUT/archives every 10 ms and decodes each new chunk with roscope's Rust reader
             (`roscope._core.Trace(...).read_batches()`): what `roscope watch` does;
  live-P     `lttng create --live=P` through a relay daemon on free local ports; the reader is
             babeltrace2's lttng-live source (`babeltrace2 -c src.ctf.lttng-live -c sink.text.pretty`
             with cycle times, text on a pipe), the reference viewer of that protocol;
  roscope-live-P  the same live session read by roscope's own client of the protocol
             (`roscope._core.LiveClient`, polled every 20 ms; each mini chunk it writes decoded
             with roscope's Rust reader): what `roscope watch --source live` does.

Measured per case: events read (against the number emitted), the latency of each event from its
own timestamp (CLOCK_MONOTONIC, the trace clock) to the moment the reader had decoded it (p50,
p99, max; the events of the last chunk or packet, which `lttng stop` flushes at once, are left
out), and the CPU time (utime + stime from /proc, per second of the run) of lttng-sessiond, its
consumer daemon(s), lttng-relayd, the reader and the emitter. Writes
bench/results/watch_source.json and prints a table.

    python3 bench/watch_source.py [--rate 50000] [--duration 60] [--cases rotate-1s live-1s ...]

Needs root (mount namespaces), LTTng 2.13 and babeltrace2; run with a Python that imports
roscope (PYTHONPATH=python) and numpy.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
EMIT = os.path.join(REPO, "tests", "fixtures", "build", "fx_emit")
CASES = {
    "rotate-1s": ("rotate", 1_000_000),
    "rotate-500ms": ("rotate", 500_000),
    "rotate-250ms": ("rotate", 250_000),
    "live-1s": ("live", 1_000_000),
    "live-100ms": ("live", 100_000),
    "roscope-live-100ms": ("roscope-live", 100_000),
    "roscope-live-50ms": ("roscope-live", 50_000),
}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of a process, in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def children(pid: int) -> list[int]:
    """Every descendant of `pid` (the session daemon's consumer daemons)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = []
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            tasks = []
        for t in tasks:   # a child belongs to the thread that started it
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
        out += kids
        todo += kids
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lttng(*args: str) -> None:
    p = subprocess.run(["lttng", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"lttng {' '.join(args)}: {p.stderr.strip()}")


def percentiles(lat_ns) -> dict:
    import numpy as np
    a = np.asarray(lat_ns, dtype=np.int64)
    if not len(a):
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    return {"p50_ms": float(np.percentile(a, 50)) / 1e6, "p99_ms": float(np.percentile(a, 99)) / 1e6,
            "max_ms": float(a.max()) / 1e6}


class Daemons:
    """This namespace's lttng-sessiond (and lttng-relayd), started in the foreground as children."""

    def __init__(self, out: str, relay: bool):
        self.procs: list[subprocess.Popen] = []
        env = {**os.environ, "LTTNG_HOME": out}
        self.sessiond = subprocess.Popen(["lttng-sessiond", "--no-kernel"], env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        self.procs.append(self.sessiond)
        for _ in range(100):
            if subprocess.run(["lttng", "list"], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        self.relayd = None
        self.ports = (free_port(), free_port(), free_port())
        if relay:
            c, d, v = self.ports
            self.relayd = subprocess.Popen(["lttng-relayd", "-C", f"tcp://127.0.0.1:{c}", "-D", f"tcp://127.0.0.1:{d}",
                                            "-L", f"tcp://127.0.0.1:{v}", "-o", os.path.join(out, "relayd")],
                                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append(self.relayd)
            time.sleep(0.5)

    def cpu(self) -> dict:
        cons = children(self.sessiond.pid)
        return {"sessiond": cpu_s(self.sessiond.pid), "consumerd": sum(cpu_s(p) for p in cons),
                "relayd": cpu_s(self.relayd.pid) if self.relayd else 0.0}

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def decode_ts(d: str):
    """Every event's time in the trace directory `d`, decoded by roscope's reader."""
    import numpy as np
    import pyarrow as pa
    from roscope import _core
    tr = _core.Trace([d])
    ts = []
    while (batches := tr.read_batches()) is not None:
        for _trace, _ev, t in batches:
            ts.append(np.asarray(pa.table(t).column("ts").to_numpy(), dtype=np.int64))
    return np.concatenate(ts) if ts else np.zeros(0, dtype=np.int64)


def roscope_live_reader(addr: str, sess: str, out: str, stop_after: float, result: dict) -> None:
    """roscope's own live client (`_core.LiveClient`, as `roscope watch --source live` uses it):
    polls every 20 ms, decodes each mini chunk with roscope's reader; latency as the rotate
    reader's (the events of a mini chunk: now minus their time)."""
    import numpy as np
    from roscope import _core
    c = _core.LiveClient(addr)
    c.attach(sess, 20.0)
    lat: list = []
    late: list = []   # chunks whose oldest event was read over 250 ms late: (s from the first event, ms, events)
    first = None
    n = chunks = 0
    last_upto = -1
    deadline = time.monotonic() + stop_after
    while time.monotonic() < deadline:
        d = os.path.join(out, f"mini-{chunks}")
        packets, _b, ended, upto, _after = c.poll(d)
        if packets:
            chunks += 1
            arr = decode_ts(d)
            # the events handed over by this poll (a straddling packet comes again with the next)
            arr = arr[(arr > last_upto) & (arr <= (upto if upto is not None else np.iinfo(np.int64).max))]
            last_upto = upto if upto is not None else last_upto
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            lat.append(now - arr)
            if len(arr):
                first = arr.min() if first is None else first
                if now - arr.min() > 250_000_000:   # where the tail is: its chunk's time into the run
                    late.append((round((arr.min() - first) / 1e9, 3), round((now - arr.min()) / 1e6, 1), len(arr)))
            n += len(arr)
            shutil.rmtree(d)
        if ended:
            break
        time.sleep(0.02)
    result["events"] = n
    result["chunks"] = chunks
    result["late_chunks"] = late
    result["lat"] = np.concatenate(lat) if lat else []


def rotate_reader(out: str, stop_after: float, result: dict) -> None:
    """Polls OUT/archives and decodes each new chunk with roscope's reader; the events'
    latencies go into result["lat"] (the last chunk's into result["last_lat"])."""
    import numpy as np
    seen: set[str] = set()
    arch = os.path.join(out, "trace", "archives")
    lat: list = []
    last = None
    n = 0
    deadline = time.monotonic() + stop_after
    while time.monotonic() < deadline:
        names = sorted(os.listdir(arch), key=lambda s: int(s.rsplit("-", 1)[1])) if os.path.isdir(arch) else []
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            arr = decode_ts(os.path.join(arch, name))
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            n += len(arr)
            if last is not None:
                lat.append(last)
            last = now - arr
        if result.get("stopped") and len(seen) and n >= result.get("expect", 0):
            break
        time.sleep(0.01)
    result["events"] = n
    result["chunks"] = len(seen)
    result["lat"] = np.concatenate(lat) if lat else []


def live_reader(url: str) -> subprocess.Popen:
    return subprocess.Popen(["babeltrace2", "-c", "src.ctf.lttng-live",
                             f"--params=inputs=[\"{url}\"],session-not-found-action=\"end\"",
                             "-c", "sink.text.pretty", "--params=clock-cycles=true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_live(proc: subprocess.Popen, result: dict) -> None:
    """Each line of babeltrace2's text starts with [CYCLES]: the event's time; its latency is
    the time the line was read (every 10th line is timed: reading all of them is the load)."""
    import numpy as np
    lat, n = [], 0
    for line in proc.stdout:
        n += 1
        if n % 10 == 0 and line.startswith(b"["):
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            lat.append(now - int(line[1:line.index(b"]")]))
    result["events"] = n
    result["lat"] = np.asarray(lat, dtype=np.int64)


def run_case(name: str, rate: int, duration: float, out: str) -> dict:
    kind, period_us = CASES[name]
    for d in ("/var/run/lttng", "/dev/shm"):
        os.makedirs(d, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "none", d], check=True)
    os.environ["LTTNG_HOME"] = out
    daemons = Daemons(out, relay=kind != "rotate")
    sess = "watchsource"
    result: dict = {"case": name, "rate": rate, "duration_s": duration}
    reader = None
    try:
        if kind == "rotate":
            lttng("create", sess, f"--output={os.path.join(out, 'trace')}")
        else:
            c, d, _v = daemons.ports
            lttng("create", sess, f"--live={period_us}", f"--ctrl-url=tcp://127.0.0.1:{c}", f"--data-url=tcp://127.0.0.1:{d}")
        chan = ["enable-channel", "-u", "c", "--subbuf-size=1M", "--num-subbuf=8", f"--session={sess}"]
        if kind == "rotate":
            chan.append("--monitor-timer=100000")
        lttng(*chan)
        lttng("enable-event", "-u", "roscope_fx:*", "-c", "c", f"--session={sess}")
        lttng("add-context", "-u", "-c", "c", "-t", "vpid", "-t", "vtid", "-t", "procname", f"--session={sess}")
        if kind == "rotate":
            lttng("enable-rotation", f"--session={sess}", f"--timer={period_us}us")
        lttng("start", sess)
        res: dict = {}
        if kind == "roscope-live":   # attached before the emitter starts, as babeltrace2 is
            import threading
            th = threading.Thread(target=roscope_live_reader, args=(f"127.0.0.1:{daemons.ports[2]}", sess, out, duration + 60, res))
            th.start()
            time.sleep(1.0)
        if kind == "live":
            host = socket.gethostname()
            reader = live_reader(f"net://127.0.0.1:{daemons.ports[2]}/host/{host}/{sess}")
            time.sleep(1.0)
        cpu0 = daemons.cpu()
        t0 = time.monotonic()
        emitter = subprocess.Popen([EMIT, "rate", str(rate), str(int(duration))], env={**os.environ, "LTTNG_UST_REGISTER_TIMEOUT": "-1"})
        import threading
        if kind == "rotate":
            th = threading.Thread(target=rotate_reader, args=(out, duration + 60, res))
        elif kind == "live":
            th = threading.Thread(target=read_live, args=(reader, res))
        self_cpu0 = time.process_time()
        reader_cpu0 = cpu_s(reader.pid) if reader is not None else 0.0
        if kind != "roscope-live":
            th.start()
        _pid, _status, ru = os.wait4(emitter.pid, 0)
        emitter.returncode = 0
        wall = time.monotonic() - t0
        cpu1 = daemons.cpu()
        # the reader's CPU until the emitter stopped (the rotate reader is a thread of this process)
        reader_cpu = (time.process_time() - self_cpu0) if reader is None else cpu_s(reader.pid) - reader_cpu0
        res["stopped"] = True
        res["expect"] = rate * int(duration)
        lttng("stop", sess)
        lttng("destroy", sess)
        th.join(120)
        if reader is not None:
            reader.wait(30)
        result.update({k: res.get(k) for k in ("events", "chunks", "late_chunks") if k in res})
        result["latency"] = percentiles(res.get("lat", []))
        result["cpu_percent"] = {k: round(100 * (cpu1[k] - cpu0[k]) / wall, 2) for k in cpu1}
        result["cpu_percent"]["reader"] = round(100 * reader_cpu / wall, 2)
        result["cpu_percent"]["emitter"] = round(100 * (ru.ru_utime + ru.ru_stime) / wall, 2)
        result["wall_s"] = round(wall, 2)
    finally:
        if reader is not None and reader.poll() is None:
            reader.kill()
        daemons.stop()
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_case":
        _, _, name, rate, duration, out = sys.argv
        res = run_case(name, int(rate), float(duration), out)
        print("RESULT " + json.dumps(res), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=50_000)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    a = ap.parse_args()
    if not os.path.exists(EMIT):
        subprocess.run(["make", "-s", "-C", os.path.dirname(os.path.dirname(EMIT))], check=True)
    results = []
    for name in a.cases:
        out = tempfile.mkdtemp(prefix=f"watch-source-{name}-")
        p = subprocess.run(["unshare", "--mount", "--fork", "--", sys.executable, os.path.abspath(__file__), "_case", name,
                            str(a.rate), str(a.duration), out], capture_output=True, text=True)
        line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
        if p.returncode != 0 or not line:
            sys.exit(f"case {name} failed: {p.stderr.strip()[-2000:]}")
        res = json.loads(line[-1][7:])
        results.append(res)
        shutil.rmtree(out, ignore_errors=True)
        print(json.dumps(res), flush=True)
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    with open(os.path.join(BENCH, "results", "watch_source.json"), "w") as f:
        json.dump({"rate": a.rate, "duration_s": a.duration, "load_average": os.getloadavg(), "cases": results}, f, indent=1)
    print(f"\n{'case':<14} {'events':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  CPU % (sessiond consumerd relayd reader)")
    for r in results:
        lt, c = r["latency"], r["cpu_percent"]
        print(f"{r['case']:<14} {r['events']:>10} {lt['p50_ms']:>8.1f} {lt['p99_ms']:>8.1f} {lt['max_ms']:>8.1f}  "
              f"{c['sessiond']:.1f} {c['consumerd']:.1f} {c['relayd']:.1f} {c.get('reader', float('nan')):.1f}")


if __name__ == "__main__":
    main()
