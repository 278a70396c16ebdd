#!/usr/bin/env bash
# Runs every fuzz target of roscope-ctf for a given time, one process at a time.
#
#   bash crates/ctf/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 300 (metadata + stream + trace = 15 minutes).
# Needs the nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
#
# The committed corpora (corpus/<target>) are only read: new inputs go to
# work/<target> (not committed). With MERGE=1 the work corpus is minimized
# back into corpus/<target> at the end (cargo fuzz cmin).
# Crashes, timeouts and out-of-memory inputs are written to artifacts/<target>/.
# Exit status: 0 when no target found anything.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
secs="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(metadata stream trace)
export PATH="$HOME/.cargo/bin:$PATH"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "run.sh: needs 'cargo +nightly fuzz' (rustup toolchain install nightly; cargo install cargo-fuzz)" >&2
    exit 2
fi

declare -A maxlen=([metadata]=32768 [stream]=16385 [trace]=32768)
status=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "artifacts/$t"
    log="work/$t.log"
    echo "== fuzzing '$t' for ${secs}s (log: $here/$log)"
    cargo +nightly fuzz run -s none "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="${maxlen[$t]:-16384}" \
        -workers=1 -print_final_stats=1 -print_pcs=0 >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    units=$(ls "work/$t" | wc -l)
    line="$t: exit $rc, ${execs:-?} executions (${speed:-?}/s), ${cov:-cov: ?}, work corpus ${units} inputs"
    if [ $rc -ne 0 ]; then
        status=1
        line="$line -- FOUND A PROBLEM: $(grep -m1 -E 'panicked|ERROR: libFuzzer|deadly signal|SUMMARY' "$log")"
        grep -E 'Test unit written to' "$log" | tail -1
    fi
    echo "$line"
    summary+=("$line")
    if [ "${MERGE:-0}" = 1 ] && [ $rc -eq 0 ]; then
        cp -n "work/$t"/* "corpus/$t"/ 2>/dev/null || true
        cargo +nightly fuzz cmin -s none "$t" "corpus/$t" -- -max_len="${maxlen[$t]:-16384}" -rss_limit_mb=2048 >"work/$t.cmin.log" 2>&1
        echo "$t: corpus/$t now $(ls "corpus/$t" | wc -l) inputs, $(du -sh "corpus/$t" | cut -f1)"
    fi
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
