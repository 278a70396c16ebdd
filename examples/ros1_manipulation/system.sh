#!/usr/bin/env bash
# Starts the example manipulation stack: rosmaster on $ROSCOPE_MASTER_PORT (set by
# `roscope experiment`; a free port otherwise) and the four node processes (sim,
# planner, controller, state_publisher). Runs until SIGINT/SIGTERM, then stops the
# nodes (SIGINT) and the master. Needs `make -C examples/ros1_manipulation` first.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -f "$here/build/py/manip_msgs/__init__.py" ]]; then
  echo "system.sh: the action messages are not generated: run 'make -C $here' first" >&2
  exit 2
fi
port="${ROSCOPE_MASTER_PORT:-$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
export ROS_MASTER_URI="http://127.0.0.1:$port" ROS_IP=127.0.0.1
export PYTHONPATH="$here/build/py:$here${PYTHONPATH:+:$PYTHONPATH}"
export ROS_LOG_DIR="${ROS_LOG_DIR:-${ROSCOPE_SYSTEM_DIR:-/tmp}/ros-log}"
py="${ARM_PYTHON:-/usr/bin/python3}"
pids=()
stop() {
  trap - INT TERM
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null
  done
  kill -INT "$master" 2>/dev/null
  for _ in $(seq 40); do kill -0 "$master" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$master" 2>/dev/null; wait "$master" 2>/dev/null
  exit 0
}
trap stop INT TERM
rosmaster --core -p "$port" -w 1 >/dev/null 2>&1 & master=$!
for n in sim planner controller state_publisher; do
  "$py" "$here/nodes.py" "$n" & pids+=($!)
done
while true; do
  for p in "${pids[@]}"; do
    if ! kill -0 "$p" 2>/dev/null; then echo "system.sh: node process $p ended; stopping" >&2; stop; fi
  done
  sleep 0.2
done
