# Shared by the bench scripts (sourced): timing and ratios. Needs $TIME
# (/usr/bin/time) and $TMP (a scratch directory).

# measure CAP OUT CMD...: runs CMD with stdout to OUT and prints
# "secs rss_kb", or ">CAP rss_kb" when it hit the CAP-second timeout.
measure() {
    local cap=$1 out=$2
    shift 2
    if "$TIME" -f '%e %M' -o "$TMP/t" timeout "$cap" "$@" >"$out" 2>/dev/null; then
        cat "$TMP/t"
    else
        local rc=$?
        if [ "$rc" = 124 ] || grep -q "status 124" "$TMP/t"; then
            echo ">$cap $(tail -1 "$TMP/t" | awk '{print $2}')"
        else
            echo "fail($rc) 0"
        fi
    fi
}

ratio() { # a b -> a/b with one decimal, or "-"
    awk -v a="${1#>}" -v b="${2#>}" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'
}
