#!/usr/bin/env bash
# Start the example ROS 1 system (rosmaster on a chosen port + the 4 node
# processes) for N seconds, then stop everything cleanly (SIGINT to the nodes,
# then the master). Ground-truth logs go to GTDIR (must not exist or be empty).
#
# usage: system.sh [-d SECONDS] [-p PORT] [-g GTDIR] [-P]
#   defaults: -d 10, -p a free port, -g a new $TMPDIR/ground-truth-<timestamp>-XXXXXX (never the current directory)
#   -P: also run the rospy nodes py/pyrelay.py and py/pylistener.py
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration=10
port=""
gtdir=""
with_py=0
while getopts "d:p:g:Ph" opt; do
  case "$opt" in
    d) duration="$OPTARG" ;;
    p) port="$OPTARG" ;;
    g) gtdir="$OPTARG" ;;
    P) with_py=1 ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
  esac
done
for n in sensors perception planner monitor; do
  if [[ ! -x "$here/build/$n" ]]; then
    echo "system.sh: $here/build/$n is missing: run 'make -C $here' first" >&2
    exit 2
  fi
done
if [[ -z "$port" ]]; then
  port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
fi
if [[ -z "$gtdir" ]]; then
  gtdir="$(mktemp -d "${TMPDIR:-/tmp}/ground-truth-$(date +%Y%m%d-%H%M%S)-XXXXXX")"
fi
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
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n "$master" ]]; then
    kill -INT "$master" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$master" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
  fi
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
# Subscribers first, so that the sources' first messages find them.
if [[ "$with_py" == 1 ]]; then
  for n in pylistener pyrelay; do
    /usr/bin/python3 "$here/py/$n.py" __name:="$n" >"$gtdir/$n.out" 2>&1 &
    pids+=($!)
  done
  sleep 1
fi
for n in monitor planner perception sensors; do
  "$here/build/$n" __name:="$n" >"$gtdir/$n.out" 2>&1 &
  pids+=($!)
  sleep 0.3
done
sleep "$duration"
