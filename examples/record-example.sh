#!/usr/bin/env bash
# Records one example ROS 1 system (its system.sh) with `roscope record` into a fresh
# directory; what each example's run.sh runs.
#
# usage: record-example.sh EXAMPLE_DIR DEFAULT_SECONDS DEFAULT_PREFIX [-d SECONDS] [-o DIR]
#   -d  how long the system runs (default DEFAULT_SECONDS)
#   -o  directory to create (default ./DEFAULT_PREFIX-<time>); it gets
#         DIR/trace/          the LTTng trace + roscope-manifest.json
#         DIR/ground-truth/   the nodes' ground-truth logs (*.jsonl)
# Builds the tracer and the example first. Exits with roscope record's status.
set -euo pipefail
example="$(cd "$1" && pwd)"; duration="$2"; prefix="$3"; shift 3
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=""
while getopts "d:o:h" opt; do
  case "$opt" in
    d) duration="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $(basename "$example")/run.sh [-d SECONDS (default $duration)] [-o DIR (default ./$prefix-<time>)]" >&2
       exit 2 ;;
  esac
done
out="${out:-$PWD/$prefix-$(date +%Y%m%d-%H%M%S)}"
if [[ -e "$out" ]]; then
  echo "run.sh: $out exists already; refusing to overwrite it" >&2
  exit 2
fi
make -s -C "$repo/instrument/ros1"
make -s -C "$example"
mkdir -p "$out"
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
  if [[ -x "$repo/.venv/bin/python" ]]; then py="$repo/.venv/bin/python"; else py=/usr/bin/python3; fi
fi
if command -v roscope >/dev/null 2>&1 && [[ -z "${PYTHON:-}" ]]; then
  rec=(roscope record)
else
  export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
  rec=("$py" -m roscope record)
fi
"${rec[@]}" -o "$out/trace" -- "$example/system.sh" -d "$duration" -g "$out/ground-truth"
echo "run.sh: trace in $out/trace, ground truth in $out/ground-truth" >&2
