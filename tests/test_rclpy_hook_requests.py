"""The rclpy hook's request events (instrument/ros2/rclpy/roscope_rclpy.py `_Requests`, issue 39):
a client's `rmw_send_request` is emitted before its write once the client's numbering is known,
so that it precedes the server's take and answer; the expected events below are worked out by
hand from the numbers a fake rmw gives."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / "instrument" / "ros2" / "rclpy" / "roscope_rclpy.py"


@pytest.fixture
def hook():
    spec = importlib.util.spec_from_file_location("roscope_rclpy_under_test", HOOK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # without roscope's tracer library loaded it only defines things
    return mod


def _run(hook, numbers, handle=7):
    """Sends one request per number the fake rmw gives (None: the write raises); returns the
    log of ("emit", seq) and ("write", seq) in the order they happened."""
    log, r = [], hook._Requests()

    def emit(h, _req, seq):
        assert h == handle
        log.append(("emit", seq))

    for n in numbers:
        def write(n=n):
            if n is None:
                log.append(("write", "failed"))
                raise RuntimeError("write failed")
            log.append(("write", n))
            return n
        try:
            assert r.send(handle, object(), write, emit) == n
        except RuntimeError:
            assert n is None
    return log


def test_after_the_first_request_each_send_event_comes_before_its_write(hook):
    assert _run(hook, [1, 2, 3]) == [("write", 1), ("emit", 1), ("emit", 2), ("write", 2), ("emit", 3), ("write", 3)]


def test_a_numbering_not_as_expected_is_emitted_after_the_write_from_then_on(hook):
    # 1, then 5 where 2 was expected: the event of 2 went out before the write (it cannot be
    # recalled), the request's own number after it; the client is no longer predicted.
    assert _run(hook, [1, 5, 6]) == [("write", 1), ("emit", 1), ("emit", 2), ("write", 5), ("emit", 5),
                                     ("write", 6), ("emit", 6)]


def test_after_a_failed_write_the_number_is_learned_again(hook):
    assert _run(hook, [1, None, 2, 3]) == [("write", 1), ("emit", 1), ("emit", 2), ("write", "failed"),
                                           ("write", 2), ("emit", 2), ("emit", 3), ("write", 3)]


def test_clients_are_numbered_apart(hook):
    log, r = [], hook._Requests()
    emit = lambda h, _q, s: log.append((h, s))  # noqa: E731
    for h, n in [(1, 1), (2, 1), (1, 2), (2, 2)]:
        r.send(h, object(), lambda n=n: n, emit)
    assert log == [(1, 1), (2, 1), (1, 2), (2, 2)]
