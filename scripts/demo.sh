#!/usr/bin/env bash
# What `make demo` runs: the main job on the best input available.
set -euo pipefail
cd "$(dirname "$0")/.."
ROSCOPE=.venv/bin/roscope
TRACES=${TRACES:-../shared/traces}
OUT=${OUT:-demo-out}
mkdir -p "$OUT"

if [ -x examples/ros1_pipeline/run.sh ] && [ -d "$TRACES" ] || [ -x examples/ros1_pipeline/run.sh ]; then
  if [ -x examples/ros1_pipeline/run.sh ]; then
    run_dir="$OUT/ros1-pipeline-$(date +%Y%m%d-%H%M%S)"
    echo "== recording the ROS 1 example pipeline for 10 s into $run_dir"
    examples/ros1_pipeline/run.sh --seconds 10 --output "$run_dir" || echo "(recording the example failed; continuing with the shared traces)"
    if [ -d "$run_dir" ]; then
      $ROSCOPE info "$run_dir"
    fi
  fi
fi

for t in ros2/autoware-carla-galactic ros2/pingpong-rolling-2021 ros1/nodes-pipeline-melodic; do
  if [ -d "$TRACES/$t" ]; then
    echo
    echo "== roscope info $TRACES/$t"
    $ROSCOPE info "$TRACES/$t"
  fi
done
if [ -d "$TRACES/ros2/pingpong-rolling-2021" ]; then
  echo
  echo "== roscope dump (first 5 events) $TRACES/ros2/pingpong-rolling-2021"
  $ROSCOPE dump -n 5 "$TRACES/ros2/pingpong-rolling-2021"
fi
