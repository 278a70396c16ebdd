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
reports=("$run/report.html")
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
