"""The system under test of an experiment: its environment, its start and readiness, its
load generators, and its stop (the system, then its loads, then stray processes)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
import xmlrpc.client
from pathlib import Path

from roscope.errors import InputError, UserError
from roscope.experiment import driver_output, output, procs
from roscope.experiment.config import Condition, Experiment, level_text
from roscope.processes import group

PKG_PARENT = str(Path(__file__).resolve().parents[2])   # the directory holding the roscope package


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SystemUnderTest:
    """The system's process group (``system``, None when stopped), the condition it runs
    (``cond``), its environment, directory and CPUs, and its loads."""

    def __init__(self, exp: Experiment, run: Path):
        self.exp, self.run = exp, run
        self.system: group.Started | None = None
        self.cond: str | None = None
        self.dir: Path | None = None
        self.env: dict | None = None
        self.cpus: list[int] | None = None
        self.loads: list[group.Started] = []
        self.load_report: list[dict] = []

    def alive(self) -> bool:
        return self.system is not None and self.system.alive()

    # ---------------------------------------------------------------- environment
    def _base_env(self, cond: Condition) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = PKG_PARENT + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["ROSCOPE_EXPERIMENT_DIR"] = str(self.run.resolve())
        env["ROSCOPE_CONDITION"] = cond.id
        env["ROSCOPE_SCENARIO"] = cond.scenario
        env["ROSCOPE_PARAMS"] = json.dumps(cond.params, sort_keys=True)
        env["ROSCOPE_LEVEL"] = "" if cond.level is None else level_text(cond.level)
        if self.exp.ros == "ros1":
            port = _free_port()
            env.update({"ROS_MASTER_URI": f"http://127.0.0.1:{port}", "ROSCOPE_MASTER_PORT": str(port),
                        "ROS_IP": "127.0.0.1", "ROS_HOSTNAME": "127.0.0.1"})
        return env

    # ---------------------------------------------------------------- system
    def _ready(self, env: dict, deadline: float) -> str | None:
        """None when ready; otherwise why not."""
        ready = self.exp.system["ready"]
        cwd = self.exp.base_dir / self.exp.system["cwd"]
        while time.monotonic() < deadline:
            if not self.system.alive():
                return f"the system exited with status {self.system.popen.returncode} before it was ready"
            ok = True
            if ready["command"]:
                ok = group.run("ready", ready["command"], max(1.0, deadline - time.monotonic()), cwd=cwd, env=env) == 0
            if ok and ready["topic"]:
                ok = self._topic_published(env, ready["topic"])
            if ok:
                if ready["delay"]:
                    time.sleep(ready["delay"])
                return None
            time.sleep(0.2)
        return f"not ready within {self.exp.system['ready']['timeout']:g} s"

    @staticmethod
    def _topic_published(env: dict, topic: str) -> bool:
        uri = env.get("ROS_MASTER_URI")
        if not uri:
            return False
        try:
            code, _msg, topics = xmlrpc.client.ServerProxy(uri).getPublishedTopics("/roscope_experiment", "")
        except (OSError, xmlrpc.client.Error):
            return False
        return code == 1 and any(t == topic for t, _ in topics)

    def start(self, cond: Condition, tdir: Path, extra_env: dict) -> str | None:
        """Starts the system (and, once it is ready, its loads); None, or why it is not ready."""
        env = {**self._base_env(cond), **self.exp.system["env"], **extra_env}
        cpus = procs.pick_cpus(cond.params["cpuset"]["cpus"]) if "cpuset" in cond.params else None
        argv = self.exp.system["start"]
        if shutil.which(argv[0], path=env.get("PATH")) is None and not (self.exp.base_dir / self.exp.system["cwd"] / argv[0]).exists():
            raise InputError(f"{self.exp.path}: system.start: program {argv[0]!r} not found")
        env["ROSCOPE_SYSTEM_DIR"] = str(tdir.resolve())
        if self.exp.ros == "ros1":
            env.setdefault("ROS_LOG_DIR", str(tdir / "ros-log"))
        self.system = group.start("system", argv, cwd=self.exp.base_dir / self.exp.system["cwd"], env=env,
                                  log=tdir / "system.log", cpus=cpus)
        self.env, self.cond, self.dir = env, cond.id, tdir
        self.cpus = cpus
        why = self._ready(env, time.monotonic() + self.exp.system["ready"]["timeout"])
        if why is not None:
            return why
        self.start_loads(cond, tdir)
        return None

    def stop(self, stopped: list) -> dict | None:
        """Stops the system, then its loads, then any stray process (in that order, each with
        all it started); returns the system's stop record, the loads' in self.load_report, and
        adds every process signalled to `stopped`."""
        got = None
        self.load_report = []
        if self.system is not None:
            got = group.stop(self.system, self.exp.system["stop_timeout"])
            stopped += got["stopped"]
            self.system = None
            self.cond = None
        for ld in self.loads:
            st = group.stop(ld, 3.0)
            stopped += st["stopped"]
            rep = {"name": ld.name, "stopped_with": st["signals"], "left": st["left"]}
            if ld.name.startswith("flood") and ld.log is not None:
                sent, _why = driver_output.last_json(ld.log)   # what the flooder sent, and its achieved rate
                rep.update(sent if isinstance(sent, dict) else {})
            self.load_report.append(rep)
        self.loads = []
        strays = group.stop_strays()
        stopped += strays["stopped"]
        if got is not None and strays["signals"]:
            got["strays"] = strays
        if got is not None and self.dir is not None and self.dir.parent.name == "systems":
            # a system kept across trials (restart: per_scenario): its stop is recorded beside its log
            output.write_json(self.dir / "stop.json", {"system": got, "loads": self.load_report,
                                                             "stopped": list(stopped)})
        return got

    # ---------------------------------------------------------------- loads
    def start_loads(self, cond: Condition, tdir: Path) -> None:
        env = dict(self.env)
        for k in ("LD_PRELOAD", "ROSCOPE_RECORD_ID"):   # loads are not part of the traced system
            env.pop(k, None)
        cl = cond.params.get("cpu_load")
        if cl:
            if shutil.which("stress-ng") is None:
                raise UserError("cpu_load needs stress-ng (Debian package stress-ng; scripts/setup.sh installs it)")
            argv = ["stress-ng", "--cpu", str(cl["workers"]), "--cpu-load", level_text(cl["load"]),
                    "--cpu-method", cl["method"], "--timeout", "3600s", "--quiet"]
            if cl.get("cpus"):
                argv = ["taskset", "-c", cl["cpus"], *argv]
            self.loads.append(group.start("cpu_load", argv, env=env, log=tdir / "cpu_load.log"))
        ml = cond.params.get("msg_load")
        if ml:
            if self.exp.ros != "ros1":
                raise InputError(f"{self.exp.path}: msg_load needs 'ros: ros1' (the flood publishers are ROS 1 nodes)")
            for i in range(ml["publishers"]):
                argv = [sys.executable, "-m", "roscope.experiment.flood", "--topic", f"{ml['topic_prefix']}_{i + 1}",
                        "--rate", level_text(ml["rate"]), "--payload", str(ml["payload"]), "--sink"]
                self.loads.append(group.start(f"flood{i + 1}", argv, env=env, log=tdir / f"flood_{i + 1}.log"))
        if self.loads:
            time.sleep(0.5)
            dead = [ld.name for ld in self.loads if not ld.alive()]
            if dead:
                raise UserError(f"load generator(s) {', '.join(dead)} exited at once; see their logs in {tdir}")
