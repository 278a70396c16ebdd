# roscope: the two commands that matter are `make demo` and `make test`.
#   make setup      install everything (scripts/setup.sh), build the Rust core into .venv
#   make lint       cargo fmt --check, clippy -D warnings, ruff
#   make test-fast  Rust tests + the quick pytest tier (no LTTng, no ROS 1 or 2, nothing slow): README says how long
#   make test       setup, lint, Rust tests, the whole pytest suite (what CI runs: .ci/run)
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
TRACES ?= ../shared/traces
export PATH := $(CURDIR)/$(VENV)/bin:$(HOME)/.cargo/bin:$(PATH)

# The quick tier: tests needing only the shared traces (markers in pyproject.toml).
FAST_TESTS := -m "not lttng and not ros1 and not ros2 and not slow"
# What records nothing live (the quick tier and the slow tests on recorded traces, Spark):
# `make test` runs it on both cores; the rest records live systems and measures time, alone.
UNRECORDED := -m "not lttng and not ros1 and not ros2"
RECORDED := -m "lttng or ros1 or ros2"
RUFF_PATHS := python tests bench tools examples instrument scripts
# The Rust core in the package; rebuilt when a Rust source or manifest is newer.
CORE_SO  := python/roscope/_core.abi3.so
RUST_SRC := Cargo.toml Cargo.lock pyproject.toml $(shell find crates -path crates/ctf/fuzz -prune -o \( -name '*.rs' -o -name Cargo.toml \) -print)

.PHONY: setup build core demo lint test test-fast test-rust bench fuzz clean experiment dist

setup:
	bash scripts/setup.sh

build: setup

core: $(CORE_SO)

$(CORE_SO): $(RUST_SRC)
	@[ -x $(VENV)/bin/maturin ] || { echo "make: $(VENV) is not set up: run 'make setup' first" >&2; exit 1; }
	$(VENV)/bin/maturin develop --release -q
	@touch $@

# The release build (docs/install.md): the wheel (the Rust core in release, the tracers' sources as
# package data) and the sdist, into dist/. Built with the interpreter of make core, so that cargo
# reuses its compiled dependencies.
dist:
	@[ -x $(VENV)/bin/maturin ] || { echo "make: $(VENV) is not set up: run 'make setup' first" >&2; exit 1; }
	rm -rf dist
	$(VENV)/bin/maturin build --release -q -i $(PY) --out dist
	$(VENV)/bin/maturin sdist --out dist
	@ls -l dist

demo: setup
	bash scripts/demo.sh

# Every check runs, even after a failing one; the target fails if any did.
lint:
	@st=0; \
	echo "lint: cargo fmt --all --check"; cargo fmt --all --check || st=1; \
	echo "lint: cargo clippy --workspace --all-targets -- -D warnings"; \
	  cargo clippy -q --workspace --all-targets -- -D warnings || st=1; \
	echo "lint: ruff check $(RUFF_PATHS)"; $(VENV)/bin/ruff check $(RUFF_PATHS) || st=1; \
	exit $$st

# Rust tests in the debug profile: on 2 cores a cold `cargo test --workspace`
# builds in ~8 s in debug against ~60 s in release (LTO), and the tests are small.
test-rust:
	cargo test -q --workspace

test-fast: core test-rust
	$(PY) -m pytest -q -n 2 --dist loadfile $(FAST_TESTS) tests

# In this order (also under make -j): install, lint, Rust tests, every pytest tier.
# What records nothing live (the quick tier and the slow tests on recorded traces) runs on
# both cores, a file per worker (pytest-xdist); then everything that records live systems
# and measures time, alone. Both run; the target fails if either failed.
test: setup
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-rust
	@st=0; \
	echo "test: what records nothing live (the quick tier and slow tests on recorded traces), on 2 workers"; \
	  $(PY) -m pytest -q -n 2 --dist loadfile --durations=15 $(UNRECORDED) tests || st=1; \
	echo "test: live recordings of ROS 1 and ROS 2 systems, alone"; \
	  $(PY) -m pytest -q --durations=25 $(RECORDED) tests || st=1; \
	exit $$st

bench: setup
	$(PY) bench/decode.py
	$(PY) bench/load.py
	$(PY) -m bench.flow
	$(PY) -m bench.flow_truth

fuzz:
	bash crates/ctf/fuzz/run.sh

# issue 13's small suite on the example ROS 1 manipulation stack (docs/experiment.md);
# results in examples/ros1_manipulation/results/<time>/ (EXPERIMENT_OUT=DIR to choose).
EXPERIMENT_OUT ?= examples/ros1_manipulation/results/$(shell date +%Y%m%d-%H%M%S)
experiment: setup
	$(MAKE) -s -C instrument/ros1
	$(MAKE) -s -C examples/ros1_manipulation
	$(VENV)/bin/roscope experiment run examples/ros1_manipulation/experiment.yaml -o $(EXPERIMENT_OUT)

clean:
	rm -rf target $(VENV) python/roscope/*.so dist
