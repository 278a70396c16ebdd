"""roscope's benchmarks, a package so that a script imports its siblings (`from bench.scale import
measured`) and the tests' helpers (`from tests.support import big_trace`) by one name; those run
as modules from the repository root: `.venv/bin/python -m bench.flow` (bench/README.md)."""
