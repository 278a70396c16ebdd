"""roscope's test suite, a package so that its helpers are imported by one name from the tests and
from bench/ alike (`from tests.support import oracle`); pytest puts the repository root on
sys.path for it (rootdir-relative module names: tests.test_x)."""
