#!/usr/bin/env bash
# `prec report` vs `perf report` (Linux perf 6.1) on a large call-graph file.
#
#   bench/report.sh [SECONDS]   (default 8: workload length; at -F 20000
#                                that is >= 100k samples)
#
# In one run:
#   * builds prec in debug (large DWARF: a realistic symbolization load) and
#     release (the binary measured);
#   * records `perf record -g -F 20000` of the debug prec running
#     `prec report` on a quipper file in a loop for SECONDS;
#   * wall time and peak RSS (`/usr/bin/time -f '%e %M'`) of
#     `report --stdio --sort comm,dso,sym` and `--sort srcline` for prec
#     and perf, with the ratios (targets: prec >= 10x faster for
#     comm,dso,sym, >= 50x for srcline, RSS <= perf's). perf's srcline is
#     capped at 600 s (shown as ">600").
# Needs: cargo, perf, /usr/bin/time (Debian package `time`), permission to
# record (root or perf_event_paranoid <= 2).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-8}
PERF=${PREC_PERF:-/usr/bin/perf}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "need /usr/bin/time (apt-get install time)" >&2; exit 1; }

cargo build -q 2>/dev/null || cargo build
cargo build --release -q 2>/dev/null || cargo build --release
DEBUG=$PWD/target/debug/prec
PREC=$PWD/target/release/prec
INPUT=$PWD/../shared/fixtures/quipper/perf.data.callgraph_and_branch-3.8
[ -f "$INPUT" ] || INPUT=$PWD/fixtures/perf/callgraph-nofp-dwarf.data
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DATA=$TMP/bench.data

"$PERF" record -q -g -F 20000 -o "$DATA" -- sh -c \
    "end=\$((\$(date +%s) + $SECS)); while [ \$(date +%s) -lt \$end ]; do \
     '$DEBUG' report -i '$INPUT' --stdio --sort comm,dso,sym >/dev/null 2>&1; done" \
    >/dev/null 2>&1
samples=$("$PERF" report -i "$DATA" --stdio --sort pid 2>/dev/null |
    awk '/^# Samples:/ {print $3; exit}')
echo "file: $(du -h "$DATA" | cut -f1), samples: $samples (perf's rounding)"

. bench/lib.sh

printf '%-14s %10s %10s %10s %12s %12s %8s\n' key "perf s" "prec s" speedup "perf RSS kB" "prec RSS kB" "RSS %"
for key in comm,dso,sym srcline; do
    cap=600
    read -r ps pr < <(measure $cap "$TMP/out" "$PERF" report -i "$DATA" --stdio --sort "$key")
    read -r qs qr < <(measure $cap "$TMP/out" "$PREC" report -i "$DATA" --stdio --sort "$key")
    printf '%-14s %10s %10s %10s %12s %12s %8s\n' "$key" "$ps" "$qs" \
        "$(ratio "$ps" "$qs")x" "$pr" "$qr" "$(awk -v a="$qr" -v b="$pr" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')"
done
