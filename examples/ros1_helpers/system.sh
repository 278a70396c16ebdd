#!/usr/bin/env bash
# Start the helpers example system (rosmaster on a chosen port + its 3 node
# processes) for N seconds, then stop everything cleanly (SIGINT to the nodes,
# then the master). Ground-truth logs go to GTDIR (must not exist or be empty).
#
# usage: system.sh [-d SECONDS] [-p PORT] [-g GTDIR]
#   defaults: -d 5, -p a free port, -g a new $TMPDIR/ground-truth-<timestamp>-XXXXXX (never the current directory)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration=5
port=""
gtdir=""
while getopts "d:p:g:h" opt; do
  case "$opt" in
    d) duration="$OPTARG" ;;
    p) port="$OPTARG" ;;
    g) gtdir="$OPTARG" ;;
    *) sed -n '2,7p' "$0"; exit 2 ;;
  esac
done
# Consumers first, so that the sources' first messages find their subscribers.
nodes=(planner fusion sources)
for n in "${nodes[@]}"; do
  if [[ ! -x "$here/build/$n" ]]; then
    echo "system.sh: $here/build/$n is missing: run 'make -C $here' first" >&2
    exit 2
  fi
done
if [[ -z "$port" ]]; then
  port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
fi
gtdir="${gtdir:-$(mktemp -d "${TMPDIR:-/tmp}/ground-truth-$(date +%Y%m%d-%H%M%S)-XXXXXX")}"
if [[ -e "$gtdir" && -n "$(ls -A "$gtdir" 2>/dev/null)" ]]; then
  echo "system.sh: ground-truth directory $gtdir exists and is not empty; refusing to overwrite" >&2
  exit 2
fi
mkdir -p "$gtdir"
export ROSCOPE_GT_DIR="$gtdir"
export ROS_MASTER_URI="http://127.0.0.1:$port"
export ROS_IP=127.0.0.1
export ROS_LOG_DIR="$gtdir/ros-log"

pids=()
master=""
stop() {  # SIGINT, up to 5 s, then SIGKILL
  kill -INT "$1" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  trap - EXIT INT TERM
  # Sources first: the rest of the system then drains what they published.
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop "${pids[i]}"; done
  if [[ -n "$master" ]]; then stop "$master"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rosmaster --core -p "$port" >"$gtdir/rosmaster.log" 2>&1 &
master=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
echo "system.sh: master $ROS_MASTER_URI, ground truth in $gtdir" >&2
for n in "${nodes[@]}"; do
  "$here/build/$n" __name:="$n" >"$gtdir/$n.out" 2>&1 &
  pids+=($!)
  sleep 0.3
done
sleep "$duration"
