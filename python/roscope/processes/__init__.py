"""The processes roscope starts, and the identity of a process.

``identity``: what the kernel says about a process in ``/proc`` (one parser of
``/proc/PID/stat``), and a process's identity -- its PID, the exact start time
(field 22 of ``/proc/PID/stat``, clock ticks since boot) and the boot id
(``/proc/sys/kernel/random/boot_id``) -- so that a recorded PID is trusted only
while it is still the same process.

This package does not import roscope._core: `roscope record` works before the
Rust core is built.
"""
