"""The processes roscope starts (record's command and perf, an experiment's system,
loads, driver and profiler), and the identity of a process. Every process roscope
starts is started, found and stopped through this package.

- ``identity``: what the kernel says about a process in ``/proc`` (the one parser of
  ``/proc/PID/stat``), and a process's identity: its PID, its exact start time
  (field 22 of ``/proc/PID/stat``, clock ticks since boot) and the boot id
  (``/proc/sys/kernel/random/boot_id``). A recorded PID is trusted only while all
  three match.
- ``signals``: a signal reaches a process only after its identity was checked
  (through a pidfd, so a PID reused meanwhile cannot get it).
- ``cgroup``: a cgroup v2 per started command, when the machine allows it.
- ``tracking``: cgroup v2, or else a child subreaper with sessions and process groups.
- ``group``: ``start``, ``stop``, ``stop_in_order``: a command and all it made.

This package does not import roscope._core: `roscope record` works before the
Rust core is built.
"""
