# roscope: the two commands that matter are `make demo` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
TRACES ?= ../shared/traces
export PATH := $(CURDIR)/$(VENV)/bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build demo test test-rust bench fuzz clean

setup:
	bash scripts/setup.sh

build: setup

demo: setup
	bash scripts/demo.sh

test: setup
	cargo test --release -q -p roscope-ctf
	$(PY) -m pytest -q tests

test-rust:
	cargo test --release -p roscope-ctf

bench: setup
	$(PY) bench/decode.py
	$(PY) bench/load.py
	$(PY) bench/flow.py

fuzz:
	bash crates/ctf/fuzz/run.sh

clean:
	rm -rf target $(VENV) python/roscope/*.so
