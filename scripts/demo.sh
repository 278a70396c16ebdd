#!/usr/bin/env bash
# What `make demo` runs: record the real ROS 1 example pipeline for about 10 s with
# roscope's tracer, then the analyses on it; then the same analyses on the real
# ROS 2 traces in ../shared/traces.
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

for t in ros2/caret-end-to-end-cyclonedds ros2/pingpong-rolling-2021; do
  if [ -d "$TRACES/$t" ]; then
    echo
    echo "== roscope stats $TRACES/$t"
    $ROSCOPE stats "$TRACES/$t"
  fi
done
if [ -d "$TRACES/ros2/caret-end-to-end-cyclonedds" ]; then
  echo
  echo "== roscope flow $TRACES/ros2/caret-end-to-end-cyclonedds --from /topic1 --to /drive"
  $ROSCOPE flow "$TRACES/ros2/caret-end-to-end-cyclonedds" --from '^/topic1$' --to '^/drive$'
fi
echo
echo "demo: outputs in $run (trace, ground truth, run.duckdb)"
