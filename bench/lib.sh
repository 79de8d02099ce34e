# Shared by the bench scripts (sourced): timing and ratios. Needs $TIME
# (/usr/bin/time) and $TMP (a scratch directory).

# tree_rss PID: kB resident in the processes below PID's child (PID is
# /usr/bin/time, its child `timeout`): the command and everything it runs.
tree_rss() {
    ps -e -o pid=,ppid=,rss= | awk -v root="$1" '
        { parent[$1] = $2; rss[$1] = $3 }
        END {
            depth[root] = 0
            do {
                grew = 0
                for (p in parent)
                    if (!(p in depth) && (parent[p] in depth)) { depth[p] = depth[parent[p]] + 1; grew = 1 }
            } while (grew)
            for (p in depth) if (depth[p] >= 2) sum += rss[p]
            print sum + 0
        }'
}

# measure CAP OUT CMD...: runs CMD with stdout to OUT and prints
# "secs rss_kb", or ">CAP rss_kb" when it hit the CAP-second timeout.
# rss_kb is the larger of the command's own peak (/usr/bin/time) and the
# peak, sampled every 0.2 s, of the command with its child processes:
# perf report's source lines live in the `addr2line` processes it forks,
# which /usr/bin/time misses when the cap kills perf before it reaps them.
measure() {
    local cap=$1 out=$2
    shift 2
    "$TIME" -f '%e %M' -o "$TMP/t" timeout "$cap" "$@" >"$out" 2>/dev/null &
    local pid=$! tree=0 now
    while kill -0 "$pid" 2>/dev/null; do
        now=$(tree_rss "$pid")
        [ "$now" -gt "$tree" ] && tree=$now
        sleep 0.2
    done
    local rc=0
    wait "$pid" || rc=$?
    local secs own
    read -r secs own < <(tail -1 "$TMP/t")
    [ "$tree" -gt "${own:-0}" ] 2>/dev/null && own=$tree
    if [ "$rc" = 0 ]; then
        echo "$secs $own"
    elif [ "$rc" = 124 ] || grep -q "status 124" "$TMP/t"; then
        echo ">$cap $own"
    else
        echo "fail($rc) 0"
    fi
}

ratio() { # a b -> a/b with one decimal, or "-"
    awk -v a="${1#>}" -v b="${2#>}" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'
}
