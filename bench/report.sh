#!/usr/bin/env bash
# `prec report` vs `perf report` (Linux perf 6.1) on large call-graph files.
#
#   bench/report.sh [SECONDS]   (default 8: workload length; at -F 20000
#                                that is >= 100k samples)
#
# In one run:
#   * builds prec in release (the binary measured) and twice in debug
#     (large DWARF: a realistic symbolization load), once as cargo builds it
#     by default and once with frame pointers;
#   * records `perf record -g -F 20000` of each debug prec running
#     `prec report` on a quipper file in a loop for SECONDS;
#   * wall time and peak RSS (`/usr/bin/time -f '%e %M'`, the fastest of 3
#     runs) of `report --stdio --sort comm,dso,sym` and `--sort srcline`
#     for prec and perf, with the ratios (targets: prec >= 10x faster for
#     comm,dso,sym, >= 50x for srcline, RSS <= perf's), and whether the
#     outputs are identical. perf's srcline is capped at 600 s (shown as
#     ">600", then run once), and runs on the file without frame pointers.
#
# Why two recordings: `-g` walks frame pointers, and Rust (like most
# distributions' C) omits them by default, so the first file's chains are
# what a user gets without them: 2-4 frames, mostly wrong return
# addresses. The second file has the real, deep stacks that someone
# profiling with `-g` builds for.
#
# Needs: cargo, perf, /usr/bin/time (Debian package `time`), permission to
# record (root or perf_event_paranoid <= 2).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-8}
PERF=${PREC_PERF:-/usr/bin/perf}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "need /usr/bin/time (apt-get install time)" >&2; exit 1; }

TARGET=${CARGO_TARGET_DIR:-$PWD/target}
cargo build -q 2>/dev/null || cargo build
cargo build --release -q 2>/dev/null || cargo build --release
RUSTFLAGS="-C force-frame-pointers=yes" CARGO_TARGET_DIR=$TARGET/bench-fp cargo build -q 2>/dev/null ||
    RUSTFLAGS="-C force-frame-pointers=yes" CARGO_TARGET_DIR=$TARGET/bench-fp cargo build
PREC=$TARGET/release/prec
INPUT=$PWD/../shared/fixtures/quipper/perf.data.callgraph_and_branch-3.8
[ -f "$INPUT" ] || INPUT=$PWD/fixtures/perf/callgraph-nofp-dwarf.data
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

. bench/lib.sh

record() { # DEBUG_BINARY OUT
    "$PERF" record -q -g -F 20000 -o "$2" -- sh -c \
        "end=\$((\$(date +%s) + $SECS)); while [ \$(date +%s) -lt \$end ]; do \
         '$1' report -i '$INPUT' --stdio --sort comm,dso,sym >/dev/null 2>&1; done" \
        >/dev/null 2>&1
    local samples
    samples=$("$PERF" report -i "$2" --stdio --sort pid 2>/dev/null |
        awk '/^# Samples:/ && !n {print $3; n = 1}')
    echo "$(basename "$2"): $(du -h "$2" | cut -f1), samples: $samples (perf's rounding)"
}

best() { # RUNS OUT CMD...: the fastest of RUNS runs (one when it hits the cap)
    local runs=$1 out=$2 t r bt="" br=0
    shift 2
    for _ in $(seq "$runs"); do
        read -r t r < <(measure 600 "$out" "$@")
        case $t in '>'*|fail*) echo "$t $r"; return;; esac
        if [ -z "$bt" ] || awk -v a="$t" -v b="$bt" 'BEGIN { exit !(a < b) }'; then bt=$t br=$r; fi
    done
    echo "$bt $br"
}

row() { # LABEL DATA KEY
    local ps pr qs qr
    read -r ps pr < <(best 3 "$TMP/perf.out" "$PERF" report -i "$2" --stdio --sort "$3")
    read -r qs qr < <(best 3 "$TMP/prec.out" "$PREC" report -i "$2" --stdio --sort "$3")
    # Both end with a random tip.
    local same=no
    if cmp -s <(grep -v '^# (Tip:' "$TMP/perf.out") <(grep -v '^# (Tip:' "$TMP/prec.out"); then
        same=yes
    fi
    case $ps in '>'*) same=-;; esac
    SPEEDUP=$(ratio "$ps" "$qs")
    RSS_PCT=$(awk -v a="$qr" -v b="$pr" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')
    CAPPED=no
    case $ps in '>'*) CAPPED=yes;; esac
    printf '%-26s %10s %10s %9s %12s %12s %6s %6s\n' "$1" "$ps" "$qs" \
        "${SPEEDUP}x" "$pr" "$qr" "$RSS_PCT" "$same"
}

# verdict WHAT RATIO TARGET: "met" when RATIO >= TARGET.
verdict() {
    awk -v r="$2" -v t="$3" -v w="$1" 'BEGIN { printf "  %-56s %s\n", w, (r + 0 >= t ? "met" : "NOT met") }'
}

NOFP=$TMP/nofp.data
FP=$TMP/fp.data
record "$TARGET/debug/prec" "$NOFP"
record "$TARGET/bench-fp/debug/prec" "$FP"
printf '%-26s %10s %10s %9s %12s %12s %6s %6s\n' "file / key" "perf s" "prec s" speedup \
    "perf RSS kB" "prec RSS kB" "RSS %" same
row "fp.data comm,dso,sym" "$FP" comm,dso,sym
FP_SPEEDUP=$SPEEDUP FP_RSS=$RSS_PCT
row "nofp.data comm,dso,sym" "$NOFP" comm,dso,sym
NOFP_SPEEDUP=$SPEEDUP NOFP_RSS=$RSS_PCT
row "nofp.data srcline" "$NOFP" srcline
SRC_SPEEDUP=$SPEEDUP SRC_RSS=$RSS_PCT SRC_CAPPED=$CAPPED

echo
echo "targets (prec vs perf):"
verdict "comm,dso,sym >= 10x (deep stacks: fp.data): ${FP_SPEEDUP}x" "$FP_SPEEDUP" 10
verdict "comm,dso,sym >= 10x (short chains: nofp.data): ${NOFP_SPEEDUP}x" "$NOFP_SPEEDUP" 10
verdict "srcline >= 50x: ${SRC_SPEEDUP}x" "$SRC_SPEEDUP" 50
for pct in "fp.data comm,dso,sym:$FP_RSS" "nofp.data comm,dso,sym:$NOFP_RSS" "nofp.data srcline:$SRC_RSS"; do
    verdict "peak RSS <= perf's, ${pct%%:*}: ${pct##*:}%" "$(awk -v p="${pct##*:}" 'BEGIN { print (p <= 100) }')" 1
done
if [ "$SRC_CAPPED" = yes ]; then
    echo "  (perf's srcline hit the 600 s cap: its time and RSS are lower bounds;"
    echo "   its RSS still grows then, as its addr2line processes parse more units)"
fi
