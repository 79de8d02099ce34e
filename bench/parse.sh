#!/bin/sh
# Parser throughput: prec-format's reader against `perf report --stats`
# (which also reads and parses every record) on a large synthetic file.
#   bench/parse.sh [FILE]   (default /tmp/prec-bench-big.data, made if missing)
set -eu
cd "$(dirname "$0")/.."
FILE=${1:-/tmp/prec-bench-big.data}
PERF=${PERF:-perf}

cargo build --release -q -p prec-format --example gen_big --example parse_bench
EX=target/release/examples
if [ ! -s "$FILE" ]; then
    echo "generating $FILE (512 MB)"
    "$EX/gen_big" "$FILE" 512
fi
# Warm the page cache for both readers.
cat "$FILE" > /dev/null

now() { date +%s.%N; }

echo "== prec-format (parse_bench)"
t0=$(now)
"$EX/parse_bench" "$FILE"
t1=$(now)

echo "== perf report --stats"
t2=$(now)
"$PERF" report --stats -i "$FILE" > /dev/null 2>&1
t3=$(now)

awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v size="$(stat -c %s "$FILE")" 'BEGIN {
    prec = b - a; perf = d - c
    printf "prec parse_bench (both passes, incl. load): %.3f s\n", prec
    printf "perf report --stats:                         %.3f s (%.0f MB/s)\n", perf, size / 1e6 / perf
    printf "ratio perf/prec: %.2fx\n", perf / prec
}'
