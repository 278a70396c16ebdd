"""Signals to processes known by identity: a signal goes to a PID only while it is
still the process that was recorded (same boot, same exact start time)."""
from __future__ import annotations

import os
import time

from roscope.processes.identity import same_process


def send(ident: dict, sig: int) -> bool:
    """Sends `sig` to the process `ident` if it is still that process; True if sent."""
    if not same_process(ident):
        return False
    try:
        os.kill(ident["pid"], sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def wait_gone(idents: list[dict], timeout: float) -> list[dict]:
    """Waits until every process is gone; returns those still running after `timeout`."""
    end = time.monotonic() + timeout
    alive = [p for p in idents if same_process(p)]
    while alive and time.monotonic() < end:
        time.sleep(0.1)
        alive = [p for p in alive if same_process(p)]
    return alive
