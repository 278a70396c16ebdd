"""Runs an experiment: per condition, per trial, the system, the loads, the driver;
records each trial's result atomically as soon as it ends, so that an interrupted run
keeps every finished trial and `--resume` runs only what is missing."""
from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import resource
import signal
import sys
import time
from pathlib import Path

from roscope import files
from roscope.errors import InputError, user_message
from roscope.experiment import driver_output, output, procs
from roscope.experiment import profile as prof
from roscope.experiment.config import Condition, Experiment, bisect_condition, conditions
from roscope.experiment.system import PKG_PARENT, SystemUnderTest
from roscope.processes import group, signals
from roscope.processes.identity import identity, same_process
from roscope.record import RecordOptions, start_session, stop_session
from roscope.text import escape
from roscope.version import __version__

#: LTTng's daemons (read only, for the tracing overhead; never signalled).
LTTNG_DAEMONS = ("lttng-sessiond", "lttng-consumerd", "lttng-runas")
#: How often the CPU monitor samples the system's processes (s).
MONITOR_INTERVAL = 0.5
#: At most this many numbers of a driver's JSON become metrics when none are declared.
MAX_METRICS = 256


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _version(argv: list[str]) -> str | None:
    try:
        r = group.output("version", argv, timeout=5)
        return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr).strip() else None
    except OSError:
        return None


def _dpkg_version(package: str) -> str | None:
    try:
        r = group.output("dpkg-query", ["dpkg-query", "-W", "-f=${Version}", package], timeout=5)
    except OSError:
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _git(cwd: Path) -> dict | None:
    try:
        head = group.output("git", ["git", "-C", str(cwd), "rev-parse", "HEAD"], timeout=5)
        if head.returncode != 0:
            return None
        dirty = group.output("git", ["git", "-C", str(cwd), "status", "--porcelain", "--untracked-files=no"], timeout=10)
        if dirty.returncode != 0:
            return None
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except OSError:
        return None


def host_manifest(exp: Experiment) -> dict:
    u = platform.uname()
    return {
        "host": u.node, "kernel": f"{u.system} {u.release} {u.version}", "machine": u.machine,
        "cpu_count": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)),
        "versions": {"roscope": __version__, "python": platform.python_version(),
                     "stress-ng": _version(["stress-ng", "--version"]), "lttng": _version(["lttng", "--version"]),
                     "ros_distro": os.environ.get("ROS_DISTRO"), "python3-rospy": _dpkg_version("python3-rospy")},
        "git": {"roscope": _git(Path(__file__).resolve().parent), "experiment": _git(exp.base_dir)},
    }


def prepare(exp: Experiment, out: str | None, resume: bool) -> Path:
    """The results directory: new (refused if it exists and is not empty), or resumed (the same
    experiment file content, or refused)."""
    if out is None:
        if resume:
            raise InputError("--resume needs -o DIR (the results directory to complete)")
        out = f"experiment-{exp.name}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run = Path(out)
    files.check(run, directory=True, inputs=[exp.path], what="results directory")
    if resume:
        man = output.read_json(run / output.MANIFEST)
        if man is None:
            raise InputError(f"{run}: nothing to resume (no {output.MANIFEST})")
        man = output.check_manifest(run / output.MANIFEST, man)
        invocations = man.get("invocations")
        if not isinstance(invocations, list) or not all(isinstance(i, dict) for i in invocations):
            raise InputError(f"{run / output.MANIFEST}: not the manifest of an experiment run: 'invocations' is not a list of objects")
        last = (invocations or [{}])[-1]
        if man.get("state") == "running" and _still_running(last):
            raise InputError(f"{run}: is being written by roscope experiment (pid {last['pid']}); resume it once that has ended")
        if man.get("experiment", {}).get("digest") != exp.digest():
            raise InputError(f"{run}: was run with another experiment file content ({man['experiment'].get('path')}); "
                             "resume it with the same file, or start a new directory")
        return run
    if run.exists() and any(run.iterdir()):
        raise InputError(f"{run}: exists and is not empty; results are never overwritten (give a new -o, or --resume)")
    man = {"experiment": {"name": exp.name, "path": str(exp.path.resolve()), "digest": exp.digest(), "config": exp.raw},
           "metrics": exp.metrics, "state": "running", "started": _now(), "finished": None, "invocations": [],
           **host_manifest(exp)}
    made = not run.exists()
    # All or nothing: a directory without its manifest could be neither resumed nor reused.
    with signals.deferred():
        try:
            run.mkdir(parents=True, exist_ok=True)
            (run / "trials").mkdir()
            output.write_json(run / output.MANIFEST, man)
        except BaseException:
            for undo in (lambda: (run / output.MANIFEST).unlink(), lambda: (run / "trials").rmdir(),
                         lambda: run.rmdir() if made else None):
                with contextlib.suppress(OSError):
                    undo()
            raise
    return run


def _still_running(invocation: dict) -> bool:
    """The roscope of an invocation still runs: by identity (PID, exact start time, boot id);
    for manifests of older versions, by PID and command line."""
    if isinstance(invocation.get("process"), dict):
        return same_process(invocation["process"])
    pid = invocation.get("pid")
    return isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and "experiment" in procs.cmdline(pid)


def _update_manifest(run: Path, **changes) -> dict:
    man = output.read_json(run / output.MANIFEST) or {}
    man.update(changes)
    output.write_json(run / output.MANIFEST, man)
    return man


class Runner:
    def __init__(self, exp: Experiment, run: Path, log=sys.stderr, profile: bool = False):
        self.exp, self.run, self.log, self.profile = exp, run, log, profile
        self.results = {r["trial_id"]: r for r in output.trial_results(run)}
        self.sut = SystemUnderTest(exp, run)
        self.driver: group.Started | None = None
        self.session: str | None = None
        self.seq = max((r.get("seq", 0) for r in self.results.values()), default=0)
        self.stopped: list[dict] = []   # the processes stopped since the trial began
        self.breaking: dict = output.check_breaking_points(run / "breaking_points.json",
                                                           output.read_json(run / "breaking_points.json"))

    def say(self, msg: str) -> None:
        print(f"roscope experiment: {escape(msg)}", file=self.log, flush=True)

    # ---------------------------------------------------------------- tracing
    def stop_system(self) -> dict | None:
        """Stops the system, its loads and strays; every process signalled goes to self.stopped."""
        return self.sut.stop(self.stopped)

    def _trace_start(self, tdir: Path) -> dict:
        name = f"roscope-exp-{os.getpid()}-{self.seq + 1}"
        state = start_session(RecordOptions(output=str(tdir / "trace"), name=name))
        self.session = name
        env = {"ROSCOPE_RECORD_ID": state["name"]}
        if state.get("tracer"):
            env["LD_PRELOAD"] = state["tracer"]
        if state.get("rospy_hook"):
            env["PYTHONPATH"] = state["rospy_hook"] + ":" + PKG_PARENT + (
                ":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
        return env

    def _trace_stop(self) -> dict | None:
        if self.session is None:
            return None
        name, self.session = self.session, None
        man = stop_session(name)
        return {"events_discarded": man.get("events_discarded"), "packets_lost": man.get("packets_lost"),
                "state": man.get("state")}

    # ---------------------------------------------------------------- the driver
    def _run_driver(self, cond: Condition, tid: str, index: int, tdir: Path) -> dict:
        d = self.exp.driver
        env = {**self.sut.env, **d["env"], "ROSCOPE_TRIAL_ID": tid, "ROSCOPE_TRIAL_INDEX": str(index),
               "ROSCOPE_TRIAL_DIR": str(tdir.resolve())}
        cpus = self.sut.cpus if ("cpuset" in cond.params and cond.params["cpuset"]["driver"]) else None
        with files.new_file(tdir / "driver.stdout") as so, files.new_file(tdir / "driver.stderr") as se:
            t0 = time.monotonic()
            drv = self.driver = group.start("driver", d["command"], cwd=self.exp.base_dir / d["cwd"], env=env,
                                            stdout=so, stderr=se, cpus=cpus)
        deadline = t0 + d["timeout"]
        died = None
        while drv.popen.poll() is None:
            if time.monotonic() > deadline:
                break
            if self.sut.system is not None and not self.sut.system.alive():
                died = self.sut.system.popen.returncode
                break
            time.sleep(0.05)
        wall = time.monotonic() - t0
        out = {"wall_ms": wall * 1e3, "returncode": drv.popen.poll()}
        # the driver, if it still runs, and whatever it started and left running (a daemon)
        with signals.deferred():
            out["stop"] = group.stop(drv, 2.0)
            self.driver = None
            self.stopped += out["stop"]["stopped"]
        if out["returncode"] is None:
            out["status"] = "timeout" if died is None else "system_died"
            out["reason"] = (f"the driver ran past its timeout of {d['timeout']:g} s" if died is None
                             else f"the system exited (status {died}) while the driver ran")
            return out
        if self.sut.system is not None and not self.sut.system.alive():
            out.update(status="system_died", reason=f"the system exited (status {self.sut.system.popen.returncode}) during the trial")
            return out
        obj, why = driver_output.last_json(tdir / "driver.stdout")
        rc = out["returncode"]
        if isinstance(obj, dict) and obj.get("status") not in (None, "success", "ok"):
            kind = _short(obj["status"], 64)
            out.update(status=kind, reason=_short(obj.get("reason") or f"the driver reported {kind}"))
        elif rc != 0:
            how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
            out.update(status="driver_crash", reason=f"the driver ended with {how}")
        elif not isinstance(obj, dict):
            out.update(status="driver_crash", reason="the driver exited 0 without a JSON object on its last stdout line"
                       + (f": {why}" if why else ""))
        else:
            out["status"] = "success"
        out["driver"] = obj if isinstance(obj, dict) else None
        return out

    # ---------------------------------------------------------------- one trial
    def trial(self, cond: Condition, index: int) -> dict:
        tid = f"{cond.id}_{index:03d}"
        if tid in self.results:
            return self.results[tid]
        tdir = self.run / "trials" / tid
        if tdir.exists():   # an attempt that was interrupted: kept aside, never overwritten
            n = 1
            while (self.run / "trials" / f"{tid}.aborted-{n}").exists():
                n += 1
            files.rename_new(tdir, self.run / "trials" / f"{tid}.aborted-{n}")
        tdir.mkdir(parents=True)
        self.say(f"trial {tid}")
        r = {"trial_id": tid, "scenario": cond.scenario, "condition": cond.id, "level": cond.level,
             "sweep_param": cond.sweep_param, "index": index, "params": cond.params, "started": _now(), "metrics": {}}
        per_trial = self.exp.system["restart"] == "per_trial"
        self.stopped = []
        try:
            trace_env = self._trace_start(tdir) if self.exp.tracing else {}
            if per_trial or self.sut.cond != cond.id or self.sut.system is None or not self.sut.system.alive():
                if self.sut.system is not None:
                    r["previous_system_stop"] = self.stop_system()
                sdir = tdir if per_trial else self._system_dir(cond)
                why = self.sut.start(cond, sdir, trace_env)
                r["system_log"] = str((sdir / "system.log").relative_to(self.run))
                if why is not None:
                    r.update(status="system_not_ready", reason=why)
            if "status" not in r:
                self._drive(cond, index, tid, tdir, r)
        except KeyboardInterrupt:
            r.update(status=output.INTERRUPTED, reason="roscope was interrupted (SIGINT or SIGTERM) during the trial")
            raise
        finally:
            with signals.deferred():   # a second Ctrl-C waits until all is stopped
                self._end_trial(r, tdir, per_trial)
        if self.exp.tracing and r.get("status") == "success":
            self._add_trace_metrics(tdir, r)
        self._score(r)
        r["finished"] = _now()
        self.seq += 1
        r["seq"] = self.seq
        if r["status"] != "success":
            _diagnostics(tdir, r, self.run)
        output.write_json(tdir / "result.json", r)
        self.results[tid] = r
        output.write_tables(self.run, list(self.results.values()))
        self.say(f"trial {tid}: {r['status']}" + (f" ({r.get('reason')})" if r["status"] != "success" else ""))
        return r

    def _end_trial(self, r: dict, tdir: Path, per_trial: bool) -> None:
        """Stops, in order, what this trial leaves running: the driver (after an interrupt), the
        system, its loads, stray processes; ends the trace; lists every process stopped in
        r["stopped"]. An interrupted trial's result.json is written here (it is not a result:
        `--resume` runs the trial again)."""
        interrupted = r.get("status") == output.INTERRUPTED
        if self.driver is not None:
            st = group.stop(self.driver, 2.0)
            self.driver = None
            self.stopped += st["stopped"]
            r["driver_stop"] = st
        if per_trial or interrupted or r.get("status") == "system_not_ready":
            r["system_stop"] = self.stop_system()
            if self.sut.load_report:
                r["loads"] = self.sut.load_report
                rates = [x["rate_achieved"] for x in self.sut.load_report if _is_finite(x.get("rate_achieved"))]
                if rates:
                    r["flood_rate_achieved_hz"] = sum(rates) / len(rates)
        if interrupted:   # anything else roscope started (a profiler), and what it made
            for rec in group.stop_everything():
                self.stopped += rec["stopped"]
        r["trace"] = self._trace_stop()
        r["stopped"] = self.stopped
        self.stopped = []
        if interrupted:
            r["finished"] = _now()
            output.write_json(tdir / "result.json", r)

    def _system_dir(self, cond: Condition) -> Path:
        d = self.run / "systems" / cond.id
        n = 1
        while d.exists():
            n += 1
            d = self.run / "systems" / f"{cond.id}.{n}"
        d.mkdir(parents=True)
        return d

    def _drive(self, cond: Condition, index: int, tid: str, tdir: Path, r: dict) -> None:
        cpus = self.sut.cpus
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        lt0 = procs.cpu_ticks_by_comm(LTTNG_DAEMONS) if self.exp.tracing else None
        with procs.Monitor(self.sut.system, MONITOR_INTERVAL) as mon:
            if cpus:
                r["cpuset_at_start"] = procs.verify_cpuset(self.sut.system, cpus)
            perf = None
            if self.profile:
                perf = prof.start(self.sut.system, tdir)
            try:
                drv = self._run_driver(cond, tid, index, tdir)
            finally:
                if self.profile:
                    r["profile"] = prof.finish(perf, tdir)
            if cpus:
                r["cpuset"] = procs.verify_cpuset(self.sut.system, cpus, mon)
                r["cpuset"]["verified"] = r["cpuset"]["verified"] and r["cpuset_at_start"]["verified"]
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        # roscope's own CPU time (this process: its monitor, its polling) over the same window as the system's
        r["harness_cpu_s"] = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
        r["system_cpu_s"] = mon.cpu_seconds()
        if lt0 is not None:   # LTTng's daemons over the same window (they serve every session on the machine)
            r["lttng_cpu_s"] = (procs.cpu_ticks_by_comm(LTTNG_DAEMONS) - lt0) / procs.CLK_TCK
        r["system_processes"] = mon.report()
        r.update(status=drv["status"], wall_ms=drv["wall_ms"], driver_returncode=drv["returncode"])
        left = drv["stop"]["stopped"]   # the driver had exited: these are what it started
        if drv["returncode"] is not None and left:
            r.setdefault("warnings", []).append(
                f"the driver left {len(left)} process(es) running after it exited; stopped: "
                + ", ".join(f"PID {p['pid']} ({p['comm']})" for p in left))
        if drv.get("reason"):
            r["reason"] = drv["reason"]
        if cpus and not r["cpuset"]["verified"] and r["status"] == "success":
            r.update(status="cpuset_not_verified", reason="a process of the system ran outside its cpuset")
        self._driver_metrics(drv, r)

    def _driver_metrics(self, drv: dict, r: dict) -> None:
        """The driver's numbers as metrics: the declared ones, or (none declared) every finite
        number it printed, at most MAX_METRICS. A number that is not finite is left out, with
        a warning."""
        obj = drv.get("driver")
        if not isinstance(obj, dict):
            obj, _why = driver_output.last_json(self.run / "trials" / r["trial_id"] / "driver.stdout")
        obj = obj if isinstance(obj, dict) else {}
        flat = {k: v for k, v in obj.items() if k != "metrics"}
        if isinstance(obj.get("metrics"), dict):
            flat.update(obj["metrics"])
        bad = sorted(k for k, v in flat.items() if _is_number(v) and not math.isfinite(v))
        if bad:
            r.setdefault("warnings", []).append(f"the driver printed numbers that are not finite, left out: "
                                                f"{', '.join(_short(k, 80) for k in bad[:10])}")
        declared = self.exp.metrics
        for name, m in declared.items():
            if m["from"] == "driver" and _is_finite(flat.get(m["key"])):
                r["metrics"][name] = float(flat[m["key"]])
            elif m["from"] == "wall" and drv.get("wall_ms") is not None:
                r["metrics"][name] = drv["wall_ms"]
        if not declared:
            got = [(_short(k, 200), float(v)) for k, v in flat.items() if _is_finite(v)]
            if len(got) > MAX_METRICS:
                r.setdefault("warnings", []).append(f"the driver printed {len(got)} numbers: the first {MAX_METRICS} "
                                                    "are kept as metrics (declare metrics to choose)")
            r["metrics"].update(got[:MAX_METRICS])

    def _add_trace_metrics(self, tdir: Path, r: dict) -> None:
        # Here, not at the top: the analyses (DuckDB, the core) only once a trial's trace is measured.
        from roscope.experiment.tracemetrics import trace_metrics

        try:
            vals, warns = trace_metrics(tdir / "trace", self.exp.metrics)
        except Exception as e:  # noqa: BLE001 - an unreadable trace is this trial's finding
            if user_message(e) is None:
                raise
            vals, warns = {}, [f"trace metrics: {user_message(e)}"]
        r["metrics"].update(vals)
        if warns:
            r["warnings"] = warns

    def _score(self, r: dict) -> None:
        """Weighted score: sum(weight * value / budget) / sum(weight) over the metrics with both
        (1.0 = on budget on average; lower is better); None when one of them is missing."""
        num = den = 0.0
        over = []
        for name, m in self.exp.metrics.items():
            v = r["metrics"].get(name)
            if m.get("budget") and v is not None and (v > m["budget"] if m["better"] == "lower" else v < m["budget"]):
                over.append(name)
            if m.get("weight") is None or not m.get("budget"):
                continue
            if v is None:
                num = None
                break
            ratio = v / m["budget"] if m["better"] == "lower" else m["budget"] / v if v else float("inf")
            num += m["weight"] * ratio
            den += m["weight"]
        r["score"] = num / den if num is not None and den > 0 else None
        r["over_budget"] = over

    # ---------------------------------------------------------------- the plan
    def run_all(self) -> None:
        try:
            for sc in self.exp.scenarios:
                n = sc["trials"] or self.exp.trials
                for cond in conditions(sc):
                    for i in range(1, n + 1):
                        self.trial(cond, i)
                    if self.exp.system["restart"] == "per_scenario":
                        self.stop_system()
                if "breaking_point" in sc:
                    self.bisect(sc)
        finally:
            with signals.deferred():
                self.stop_system()
                group.stop_everything()
                if self.session is not None:
                    self._trace_stop()

    def _level_fails(self, sc: dict, level) -> bool:
        bp = sc["breaking_point"]
        cond = bisect_condition(sc, level)
        rs = [self.trial(cond, i) for i in range(1, bp["trials"] + 1)]
        if self.exp.system["restart"] == "per_scenario":
            self.stop_system()
        rates = [r["flood_rate_achieved_hz"] for r in rs if r.get("flood_rate_achieved_hz") is not None]
        self._achieved = sum(rates) / len(rates) if rates else None
        return sum(r["status"] != "success" for r in rs) > bp["max_failures"]

    def bisect(self, sc: dict) -> dict:
        """First failing level between low and high: a level fails when more than max_failures
        of its trials fail; bisection until the passing and failing levels are within the
        resolution (integer levels when low and high are integers)."""
        bp = sc["breaking_point"]
        integer = isinstance(bp["low"], int) and isinstance(bp["high"], int)
        tried = []

        def test(level):
            f = self._level_fails(sc, level)
            tried.append({"level": level, "failed": f, "flood_rate_achieved_hz": self._achieved})
            return f

        res = {"scenario": sc["name"], "param": bp["param"], "low": bp["low"], "high": bp["high"],
               "trials_per_level": bp["trials"], "max_failures": bp["max_failures"], "tried": tried}
        if test(bp["low"]):
            res.update(breaking_point=bp["low"], highest_passing=None,
                       note="the lowest level already fails")
        elif not test(bp["high"]):
            res.update(breaking_point=None, highest_passing=bp["high"],
                       note="no failure up to the highest level tried")
        else:
            good, bad = bp["low"], bp["high"]
            while bad - good > bp["resolution"]:
                mid = (good + bad) / 2
                if integer:
                    mid = int(round(mid))
                    if mid in (good, bad):
                        break
                if test(mid):
                    bad = mid
                else:
                    good = mid
            res.update(breaking_point=bad, highest_passing=good,
                       note=f"first failing level within {bp['resolution']:g}")
        self.breaking[sc["name"]] = res
        output.write_json(self.run / "breaking_points.json", self.breaking)
        self.say(f"breaking point of {sc['name']} ({bp['param']}): {res['breaking_point']} ({res['note']})")
        return res


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_finite(v) -> bool:
    return _is_number(v) and math.isfinite(v)


def _short(v, n: int = driver_output.TEXT_MAX) -> str:
    t = str(v)
    return t if len(t) <= n else t[:n] + "..."


def _diagnostics(tdir: Path, r: dict, run: Path) -> None:
    """A failed trial's diagnostics in one file (the logs stay beside it)."""
    parts = [f"trial {r['trial_id']}: {r['status']}", f"reason: {r.get('reason')}",
             f"driver exit status: {r.get('driver_returncode')}", ""]
    for name in ("driver.stdout", "driver.stderr"):
        parts += [f"--- last lines of {name}", *driver_output.tail(tdir / name).split("\n"), ""]
    if r.get("system_log"):
        parts += [f"--- last lines of the system log ({r['system_log']})",
                  *driver_output.tail(run / r["system_log"]).split("\n"), ""]
    parts.append("--- processes of the system seen during the trial")
    for p in r.get("system_processes", []):
        parts.append(f"  {p['pid']} {p['comm']}: {p['cmdline']}")
    if r.get("system_stop"):
        parts.append(f"--- system stop: {r['system_stop']}")
    output.atomic_write(tdir / "diagnostics.txt", "\n".join(escape(x) for x in parts) + "\n")


def run(exp: Experiment, out: str | None, resume: bool, log=sys.stderr, profile: bool = False) -> Path:
    """Runs (or resumes) an experiment into its results directory. SIGINT/SIGTERM stop what
    was started, mark the manifest 'interrupted' and raise KeyboardInterrupt."""
    if profile:
        prof.check()
    run_dir = prepare(exp, out, resume)
    man = output.read_json(run_dir / output.MANIFEST)
    man["invocations"].append({"started": _now(), "pid": os.getpid(), "process": identity(os.getpid()), "resume": resume,
                               "profile": profile, "argv": sys.argv})
    man["state"] = "running"
    output.write_json(run_dir / output.MANIFEST, man)

    def on_term(signum, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    state = "failed"
    try:
        Runner(exp, run_dir, log, profile).run_all()
        state = "complete"
    except KeyboardInterrupt:
        state = "interrupted"
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
        with contextlib.suppress(Exception):
            man = output.read_json(run_dir / output.MANIFEST)
            man["invocations"][-1]["finished"] = _now()
            man["invocations"][-1]["state"] = state
            _update_manifest(run_dir, state=state, finished=_now() if state == "complete" else None,
                             invocations=man["invocations"])
    return run_dir
