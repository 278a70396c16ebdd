#!/usr/bin/env bash
# record.sh OUTDIR [N]: records N (default 10,000,000) roscope_bench events
# from bench_emit into the LTTng trace OUTDIR, losing none: per-UID buffers of
# 8 x 4 MiB in blocking mode (--blocking-timeout=inf, the app waits for the
# consumer instead of discarding).  Then checks with babeltrace2 that the trace
# holds N events and no discarded-events/packets messages, and writes
# OUTDIR/recorded.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: record.sh OUTDIR [N]}"
n="${2:-10000000}"
make -s -C "$here" >/dev/null
pgrep -x lttng-sessiond >/dev/null || { lttng-sessiond --daemonize --no-kernel; sleep 0.5; }
rm -rf "$out"
session="roscope-bench-$$-$RANDOM"
cleanup() { lttng destroy "$session" >/dev/null 2>&1 || true; }
trap cleanup EXIT
lttng create "$session" --output "$out" >/dev/null
lttng enable-channel -u -s "$session" --subbuf-size 4M --num-subbuf 8 --blocking-timeout=inf chan >/dev/null
lttng enable-event -u -s "$session" -c chan 'roscope_bench:*' >/dev/null
lttng add-context -u -s "$session" -c chan -t vpid -t vtid -t procname >/dev/null
lttng start "$session" >/dev/null
t0=$(date +%s.%N)
LTTNG_UST_ALLOW_BLOCKING=1 LTTNG_UST_REGISTER_TIMEOUT=-1 "$here/build/bench_emit" "$n" 2
t1=$(date +%s.%N)
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
trap - EXIT
counts="$(babeltrace2 "$out" -c sink.utils.counter --params=step=+0)"
events=$(awk '/ Event messages/ {print $1}' <<<"$counts")
disc_ev=$(awk '/ Discarded event messages/ {print $1}' <<<"$counts")
disc_pk=$(awk '/ Discarded packet messages/ {print $1}' <<<"$counts")
bytes=$(du -sb "$out" | cut -f1)
printf '{"events": %s, "requested": %s, "discarded_event_messages": %s, "discarded_packet_messages": %s, "bytes": %s, "emit_seconds": %s}\n' \
  "$events" "$n" "$disc_ev" "$disc_pk" "$bytes" "$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" > "$out/recorded.json"
cat "$out/recorded.json"
if [ "$events" != "$n" ] || [ "$disc_ev" != 0 ] || [ "$disc_pk" != 0 ]; then
  echo "record.sh: the trace lost events (babeltrace2: $events events of $n, $disc_ev discarded-events and $disc_pk discarded-packets messages)" >&2
  exit 1
fi
