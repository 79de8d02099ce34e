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
OUT=$("$EX/parse_bench" "$FILE")
echo "$OUT"

echo "== perf report --stats"
t0=$(now)
"$PERF" report --stats -i "$FILE" > /dev/null 2>&1
t1=$(now)

# prec's time: the records()+parse_record pass (file already in memory);
# perf's: the whole command (it maps the file and walks every record).
prec=$(echo "$OUT" | awk '/^records\+parse:/ { print $2 }')
awk -v p="$prec" -v a="$t0" -v b="$t1" -v size="$(stat -c %s "$FILE")" 'BEGIN {
    perf = b - a
    printf "prec records()+parse_record: %.3f s (%.0f MB/s)\n", p, size / 1e6 / p
    printf "perf report --stats:         %.3f s (%.0f MB/s)\n", perf, size / 1e6 / perf
    printf "ratio prec/perf time: %.2f (%s)\n", p / perf, (p < perf ? "prec faster" : "perf faster")
}'
