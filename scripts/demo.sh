#!/usr/bin/env bash
# What `make demo` runs: record the real ROS 1 example pipeline for about 10 s with
# roscope's tracer, then the analyses on it; the same for the real ROS 2 example
# (examples/ros2_pipeline, rclpy on Jazzy and on Kilted from PyPI, .ros2/ of make
# setup); then the same analyses on the real ROS 2 traces in ../shared/traces.
set -euo pipefail
cd "$(dirname "$0")/.."
ROSCOPE=".venv/bin/roscope"
TRACES=${TRACES:-../shared/traces}
OUT=${OUT:-demo-out}
mkdir -p "$OUT"
run="$OUT/ros1-pipeline-$(date +%Y%m%d-%H%M%S)"

echo "== recording the ROS 1 example pipeline (examples/ros1_pipeline) for 10 s into $run"
examples/ros1_pipeline/run.sh -d 10 -o "$run"
trace="$run/trace"
echo
echo "== roscope info $trace"
$ROSCOPE info "$trace"
echo
echo "== roscope load $trace -o $run/run.duckdb"
$ROSCOPE load "$trace" -o "$run/run.duckdb"
echo
echo "== roscope stats"
$ROSCOPE stats "$run/run.duckdb"
echo
echo "== roscope flow: sensors to the plan (partial-sync fusion, periodic-async planner)"
$ROSCOPE flow "$run/run.duckdb" --from '^/(lidar|imu|camera)$' --to '^/plan$'
echo
echo "== roscope executor"
$ROSCOPE executor "$run/run.duckdb"

# The real ROS 2 example, under each distro `make setup` installed: `roscope record` finds the
# pip-installed ROS 2 the command runs with (the environment first on PATH, as when activated).
ros2_reports=()
for distro in jazzy kilted; do
  env=".ros2/$distro"
  [ -x "$env/bin/python" ] || { echo "== (ROS 2 $distro from PyPI is not installed in $env: skipped)"; continue; }
  r2="$OUT/ros2-pipeline-$distro-$(date +%Y%m%d-%H%M%S)"
  echo
  echo "== recording the ROS 2 example pipeline (examples/ros2_pipeline) on $distro for 10 s into $r2"
  PATH="$PWD/$env/bin:$PATH" VIRTUAL_ENV="$PWD/$env" $ROSCOPE record -o "$r2/trace" -- \
    python3 examples/ros2_pipeline/launch.py -d 10 -g "$r2/ground-truth"
  echo
  echo "== roscope info $r2/trace"
  $ROSCOPE info "$r2/trace"
  $ROSCOPE load "$r2/trace" -o "$r2/run.duckdb"
  echo
  echo "== roscope stats ($distro): callbacks, topics, services (/plan_path, the /follow action's goal and result)"
  $ROSCOPE stats "$r2/run.duckdb"
  echo
  echo "== roscope flow ($distro): sensors to the controller's commands, through the service and the action"
  $ROSCOPE flow "$r2/run.duckdb" --from '^/(lidar|imu)$' --to '^/cmd$'
  $ROSCOPE report "$r2/run.duckdb" -o "$r2/report.html" --from '^/(lidar|imu)$' --to '^/cmd$' >/dev/null
  ros2_reports+=("$r2/report.html")
done

for t in ros2/caret-end-to-end-cyclonedds ros2/pingpong-rolling-2021; do
  if [ -d "$TRACES/$t" ]; then
    echo
    echo "== roscope stats $TRACES/$t"
    $ROSCOPE stats "$TRACES/$t"
  fi
done
e2e="$TRACES/ros2/caret-end-to-end-cyclonedds"
if [ -d "$e2e" ]; then
  echo
  echo "== roscope flow $e2e --from /topic1 --to /topic3 (sensor -> filter -> fusion: real flows)"
  $ROSCOPE flow "$e2e" --from '^/topic1$' --to '^/topic3$'
  echo
  echo "== roscope flow $e2e --from /drive --to /topic4 (through a periodic timer)"
  $ROSCOPE flow "$e2e" --from '^/drive$' --to '^/topic4$'
fi

echo
echo "== roscope report: one HTML page per system (opens offline in any browser)"
reports=("$run/report.html" "${ros2_reports[@]}")
$ROSCOPE report "$run/run.duckdb" -o "$run/report.html" --from '^/(lidar|imu|camera)$' --to '^/plan$' >/dev/null
if [ -d "$e2e" ]; then
  $ROSCOPE report "$e2e" -o "$OUT/caret-end-to-end-report.html" --force --from '^/topic1$' --to '^/topic3$' >/dev/null
  reports+=("$OUT/caret-end-to-end-report.html")
  $ROSCOPE export "$e2e" --perfetto "$OUT/caret-end-to-end.pftrace" --force >/dev/null
  echo "   Perfetto timeline (open it in the Perfetto UI): $(realpath "$OUT/caret-end-to-end.pftrace")"
fi
echo
echo "demo: outputs in $run (trace, ground truth, run.duckdb)"
echo "demo: reports:"
for r in "${reports[@]}"; do echo "  $(realpath "$r")"; done
