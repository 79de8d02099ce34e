#!/usr/bin/env bash
# `prec report -g` / `prec script` vs `perf report -g` / `perf script`
# (Linux perf 6.1) on one large `--call-graph dwarf` file.
#
#   bench/callgraph.sh [CPU_SECONDS]   (default 11: CPU time of the recorded
#                                       workload; at -F 10000 that is
#                                       >= 100k samples)
#
# In one run:
#   * builds prec in debug (large DWARF, deep stacks: a realistic unwinding
#     and symbolization load) and release (the binary measured);
#   * records `perf record --call-graph dwarf -F 10000` (default 8 KB stack
#     copies, so the file is ~8.5 KB per sample, ~1 GB) of the debug prec
#     running `prec report` on a quipper file in a loop until the loop has
#     used CPU_SECONDS of CPU (CPU time, not wall time, sets the sample count
#     of a cpu-clock recording, so a busy machine still gets >= 100k);
#   * wall time and peak RSS (`/usr/bin/time -f '%e %M'`) of
#     `report -g --stdio` and `script` for perf and prec, with the ratios
#     (targets: prec >= 10x faster, RSS <= perf's). perf unwinds every
#     sample with libunwind and takes many minutes: each perf command is
#     capped at PREC_BENCH_CAP seconds (default 3600, shown as ">CAP");
#   * whether the outputs agree, so that a fast but wrong prec cannot look
#     good: the sample lines of `script` (everything but the frames) must be
#     identical; the share of identical call chains is printed, also with
#     the closing `ffffffffffffffff [unknown]` frame of truncated chains
#     (perf's libunwind stepping to a zero return address) left out on both
#     sides; the `report -g` entry rows are compared in order; and the
#     `report --no-children -g none` rows (self overhead, independent of
#     unwinding) must be identical.
# Needs: cargo, perf, /usr/bin/time (Debian package `time`), permission to
# record (root or perf_event_paranoid <= 2), ~1.5 GB in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${1:-11}
FREQ=10000
CAP=${PREC_BENCH_CAP:-3600}
PERF=${PREC_PERF:-/usr/bin/perf}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "need /usr/bin/time (apt-get install time)" >&2; exit 1; }

cargo build -q 2>/dev/null || cargo build
cargo build --release -q 2>/dev/null || cargo build --release
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
DEBUG=$TARGET/debug/prec
PREC=$TARGET/release/prec
INPUT=$PWD/../shared/fixtures/quipper/perf.data.callgraph_and_branch-3.8
[ -f "$INPUT" ] || INPUT=$PWD/fixtures/perf/callgraph-nofp-dwarf.data
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# PREC_BENCH_DATA=FILE keeps the recording there (and reuses it if present).
DATA=${PREC_BENCH_DATA:-$TMP/bench.data}

if [ ! -s "$DATA" ]; then
    # The loop ends once its children used CPU seconds (bash's `times`,
    # second line: children's user and system time as 1m2.345s; run in the
    # loop's shell itself, as a subshell would count only its own children).
    "$PERF" record -q --call-graph dwarf -F "$FREQ" -o "$DATA" -- bash -c '
        while :; do
            "$0" report -i "$1" --stdio --sort comm,dso,sym >/dev/null 2>&1
            times >"$3"
            used=$(awk "NR == 2 { split(\$1, u, /[ms]/); split(\$2, s, /[ms]/);
                                 print int(u[1] * 60 + u[2] + s[1] * 60 + s[2]) }" "$3")
            [ "${used:-0}" -ge "$2" ] && break
        done' "$DEBUG" "$INPUT" "$CPU" "$TMP/times" >/dev/null 2>&1
fi
samples=$("$PERF" report -i "$DATA" --stats 2>/dev/null |
    awk '/SAMPLE events:/ {print $3; exit}')
echo "file: $(du -h "$DATA" | cut -f1), samples: $samples (--call-graph dwarf, -F $FREQ)"
[ "${samples:-0}" -ge 100000 ] || echo "warning: fewer than 100k samples; pass a larger CPU_SECONDS" >&2

. bench/lib.sh
pct() { # part whole -> percentage
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "-" }'
}

rows=()
run() { # KEY NAME ARGS...: measures perf and prec with the same arguments
    local key=$1 name=$2
    shift 2
    read -r ps pr < <(measure "$CAP" "$TMP/perf.$key" "$PERF" "$@" -i "$DATA")
    read -r qs qr < <(measure "$CAP" "$TMP/prec.$key" "$PREC" "$@" -i "$DATA")
    rows+=("$(printf '%-16s %10s %10s %10s %12s %12s %8s' "$name" "$ps" "$qs" \
        "$(ratio "$ps" "$qs")x" "$pr" "$qr" \
        "$(awk -v a="$qr" -v b="$pr" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')")")
}
run report "report -g" report -g --stdio
run script script script

printf '%-16s %10s %10s %10s %12s %12s %8s\n' command "perf s" "prec s" speedup "perf RSS kB" "prec RSS kB" "RSS %"
printf '%s\n' "${rows[@]}"

echo
echo "agreement:"
# script: sample lines (not starting with a tab) must be identical.
grep -v $'^\t' "$TMP/perf.script" >"$TMP/perf.heads" || true
grep -v $'^\t' "$TMP/prec.script" >"$TMP/prec.heads" || true
if cmp -s "$TMP/perf.heads" "$TMP/prec.heads"; then
    echo "  script sample lines: identical ($(grep -c . "$TMP/perf.heads") samples)"
else
    echo "  script sample lines: DIFFER ($(diff "$TMP/perf.heads" "$TMP/prec.heads" | grep -c '^[<>]') lines)"
fi
# script: whole call chains, one per sample, compared in order.
chains() { # FILE [drop-ff] -> one line per sample
    awk -v drop="${2:-}" 'BEGIN { RS = ""; FS = "\n" }
        { s = ""; for (i = 2; i <= NF; i++) {
              if (drop != "" && i == NF && $i ~ /^\tffffffffffffffff \[unknown\]/) continue
              s = s "|" $i }
          print s }' "$1"
}
chain_agreement() { # [drop-ff] -> "equal total"
    paste -d $'\x1f' <(chains "$TMP/perf.script" "${1:-}") <(chains "$TMP/prec.script" "${1:-}") |
        awk -F $'\x1f' '{ n++; if ($1 == $2) e++ } END { print e + 0, n + 0 }'
}
read -r eq n < <(chain_agreement)
echo "  script call chains identical to perf's: $eq of $n ($(pct "$eq" "$n") %)"
read -r eq n < <(chain_agreement drop)
echo "  ... without perf's closing ffffffffffffffff frame: $eq of $n ($(pct "$eq" "$n") %)"
# report -g: the entry rows (Children, Self, comm, dso, sym).
entries() { grep -E '^ +[0-9.]+% +[0-9.]+%' "$1" || true; }
read -r eq n < <(paste -d $'\x1f' <(entries "$TMP/perf.report") <(entries "$TMP/prec.report") |
    awk -F $'\x1f' '{ n++; if ($1 == $2) e++ } END { print e + 0, n + 0 }')
echo "  report -g entry rows identical (same position): $eq of $n"
# report --no-children -g none: self overhead only, no unwinding (not timed).
"$PERF" report -i "$DATA" --stdio --no-children -g none 2>/dev/null | grep -v '^#' >"$TMP/perf.self" || true
"$PREC" report -i "$DATA" --stdio --no-children -g none 2>/dev/null | grep -v '^#' >"$TMP/prec.self" || true
if cmp -s "$TMP/perf.self" "$TMP/prec.self"; then
    echo "  report --no-children -g none: identical ($(grep -c . "$TMP/perf.self") lines)"
else
    echo "  report --no-children -g none: DIFFER ($(diff "$TMP/perf.self" "$TMP/prec.self" | grep -c '^[<>]') lines)"
fi
