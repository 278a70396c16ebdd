"""What the tests and bench/ share: runners of the systems under test (ros2sim, the ROS 1 and
ROS 2 examples, roscope's CLI), the independent oracles (babeltrace2's reading, ground truth
logs, /proc) and small comparison helpers. No test module imports another test module or
conftest: what two of them need lives here; fixtures live in tests/conftest.py.

Import them as `from tests.support import oracle` (pytest puts the repository root on
sys.path; bench/ scripts run as `python -m bench.NAME` from the repository root)."""
