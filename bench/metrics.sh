#!/bin/bash
# metrics.sh - what a GET /metrics scrape costs as the jobs the scheduler
# holds grow. Prints figures; asserts nothing (docs/scale.md "Metrics").
#
#   bench/metrics.sh [--jobs "0 10000 100000"] [--scrapes K]
#                    [--baseline BUILD_DIR]
#
# A fresh lockstepd with no nodes; jobs that can never start (16 GPUs
# per node, wait_for_nodes) are submitted in batches of 1,000 up to each
# count of --jobs; at each, K (default 20) scrapes one after the other
# over one keep-alive connection on the Unix socket: p50 and max. With
# --baseline, the same with that build's lockstepd first (a fresh
# scheduler of its own), and each figure is printed beside it.
set -u
JOBS="0 10000 100000" SCRAPES=20 BASELINE=
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --scrapes) SCRAPES=$2; shift 2 ;;
    --baseline) BASELINE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    *) sed -n 2,13p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SCALE_PY=$SRC_DIR/bench/scale.py
NEVER='{"version":1,"argv":["true"],"gpus_per_node":16,"wait_for_nodes":true}'
declare -A FIG=()

sp() { "$PY" "$SCALE_PY" "$1" "$TEST_DIR/sched/sock" "${@:2}"; }

# run TAG: a fresh scheduler from $LOCKSTEPD, the figures as FIG[TAG.N].
run() {
    local have=0 want line
    kill_scheduler
    rm -rf "$TEST_DIR/sched"
    start_scheduler >/dev/null || exit 1
    for want in $JOBS; do
        [ "$want" -gt "$have" ] && sp batch $((want - have)) "$NEVER" >/dev/null
        have=$want
        line=$(sp scrape "$SCRAPES")
        echo "  [$1 jobs=$want] $line"
        FIG[$1.$want]=$(echo "$line" | sed 's/.*scrape_p50_ms=\([0-9.]*\).*/\1/')
    done
    kill_scheduler
}

if [ -n "$BASELINE" ]; then
    LOCKSTEPD=$BASELINE/scheduler/lockstepd run base
fi
LOCKSTEPD=$BUILD_DIR/scheduler/lockstepd run this

printf '%-10s %12s %12s %8s\n' jobs base_p50_ms this_p50_ms ratio
for want in $JOBS; do
    printf '%-10s %12s %12s %8s\n' "$want" "${FIG[base.$want]:--}" \
        "${FIG[this.$want]}" "$(awk -v b="${FIG[base.$want]:-0}" \
        -v t="${FIG[this.$want]}" 'BEGIN { print (b > 0 ? sprintf("%.2f", t / b) : "-") }')"
done
