#!/usr/bin/env bash
# Record the helpers example system with `roscope record` into a fresh directory.
#
# usage: run.sh [-d SECONDS] [-o DIR]
#   -d  how long the system runs (default 5)
#   -o  directory to create (default ./roscope-helpers-<time>); it gets
#         DIR/trace/          the LTTng trace + roscope-manifest.json
#         DIR/ground-truth/   the nodes' ground-truth logs (*.jsonl)
# Builds the tracer and the example first. Exits with roscope record's status.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../record-example.sh" "$here" 5 roscope-helpers "$@"
