#!/usr/bin/env bash
# Record the unannotated example system with `roscope record` into a fresh directory.
#
# usage: run.sh [-d SECONDS] [-o DIR]
#   -d  how long the system runs (default 5)
#   -o  directory to create (default ./roscope-unannotated-<time>); it gets
#         DIR/trace/          the LTTng trace + roscope-manifest.json
#         DIR/ground-truth/   the nodes' ground-truth logs (*.jsonl)
# Builds the tracer and the example first. Exits with roscope record's status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
duration=5
out=""
while getopts "d:o:h" opt; do
  case "$opt" in
    d) duration="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
  esac
done
out="${out:-$PWD/roscope-unannotated-$(date +%Y%m%d-%H%M%S)}"
if [[ -e "$out" ]]; then
  echo "run.sh: $out exists already; refusing to overwrite it" >&2
  exit 2
fi
make -s -C "$repo/instrument/ros1"
make -s -C "$here"
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
"${rec[@]}" -o "$out/trace" -- "$here/system.sh" -d "$duration" -g "$out/ground-truth"
echo "run.sh: trace in $out/trace, ground truth in $out/ground-truth" >&2
