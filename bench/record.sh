#!/usr/bin/env bash
# Recording overhead of `prec record` vs `perf record` (Linux perf 6.1).
#
#   bench/record.sh [SCALE] [RUNS]   (default SCALE 4: hot3 runs ~3-5 s;
#                                    RUNS 3: each timing is the best of RUNS,
#                                    as VM timings are noisy)
#
# In one run, on a CPU-bound workload (fixtures' hot3 at SCALE):
#   * wall time of the bare workload, of `prec record` and of `perf record`
#     at -F 1000 and at -F max (perf_event_max_sample_rate), with the
#     overhead over the bare run and the prec/perf ratio;
#   * samples, LOST records and data bytes of each file (via perf report);
#   * `prec record -- true` vs `perf record -- true` (start-up + finish cost).
# Needs: cargo, gcc, perf, permission to record (root or paranoid <= 2).
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-4}
RUNS=${2:-3}
PERF=${PREC_PERF:-/usr/bin/perf}

cargo build --release -q 2>/dev/null || cargo build --release
PREC=$PWD/target/release/prec
FIX=$PWD/target/bench-fixtures
fixtures/build.sh "$FIX" >/dev/null
HOT3=$FIX/hot3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
# wall seconds of one run of a command (stdout/stderr discarded)
wall1() {
    local t0 t1
    t0=$(now)
    "$@" >/dev/null 2>&1
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
# best wall time of RUNS runs
wall() {
    local best="" t
    for _ in $(seq "$RUNS"); do
        t=$(wall1 "$@")
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
    done
    echo "$best"
}
# samples lost_records data_bytes of a perf.data
stats() {
    local f=$1 s l d
    s=$(PERF_PAGER=cat "$PERF" report --stats -i "$f" 2>/dev/null | awk '/ SAMPLE events:/ {print $3; exit}')
    l=$(PERF_PAGER=cat "$PERF" report --stats -i "$f" 2>/dev/null | awk '/ LOST events:/ {print $3; exit}')
    d=$(PERF_PAGER=cat "$PERF" report --header-only -i "$f" 2>/dev/null | awk '/# data size/ {print $5; exit}')
    echo "${s:-0} ${l:-0} ${d:-0}"
}

MAX=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
printf 'workload: hot3 %s   cpus: %s   max sample rate: %s Hz\n' "$SCALE" "$(nproc)" "$MAX"
BASE=$(wall "$HOT3" "$SCALE")
printf 'bare run: %.3f s (best of %s)\n\n' "$BASE" "$RUNS"
printf '%-8s %-5s %9s %9s %9s %7s %12s\n' "freq" "tool" "wall(s)" "overhead" "samples" "lost" "data bytes"
for F in 1000 "$MAX"; do
    TP=$(wall "$PREC" record -q -F "$F" -o "$TMP/prec.data" -- "$HOT3" "$SCALE")
    read -r SP LP DP < <(stats "$TMP/prec.data")
    TF=$(wall "$PERF" record -q -F "$F" -o "$TMP/perf.data" -- "$HOT3" "$SCALE")
    read -r SF LF DF < <(stats "$TMP/perf.data")
    OP=$(echo "($TP - $BASE) / $BASE * 100" | bc -l)
    OF=$(echo "($TF - $BASE) / $BASE * 100" | bc -l)
    printf '%-8s %-5s %9.3f %8.1f%% %9s %7s %12s\n' "$F" prec "$TP" "$OP" "$SP" "$LP" "$DP"
    printf '%-8s %-5s %9.3f %8.1f%% %9s %7s %12s\n' "$F" perf "$TF" "$OF" "$SF" "$LF" "$DF"
    printf '%-8s ratio prec/perf wall: %.3f\n' "$F" "$(echo "$TP / $TF" | bc -l)"
done

echo
N=5
TP=0; TF=0
for _ in $(seq $N); do
    TP=$(echo "$TP + $(wall1 "$PREC" record -q -o "$TMP/t1.data" -- true)" | bc -l)
    TF=$(echo "$TF + $(wall1 "$PERF" record -q -o "$TMP/t2.data" -- true)" | bc -l)
done
printf 'record -- true (mean of %d): prec %.3f s, perf %.3f s, ratio prec/perf %.3f\n' \
    "$N" "$(echo "$TP / $N" | bc -l)" "$(echo "$TF / $N" | bc -l)" "$(echo "$TP / $TF" | bc -l)"
