#!/bin/bash
# scale.sh - lockstepd under N simulated agents (bench/sim.c). Prints
# figures; asserts nothing. docs/scale.md says what each figure means.
#
#   bench/scale.sh [--nodes N] [--base B] [--per-proc P] [--sweep S]
#                  [--pending "1000 10000"] [--idle-s SECS]
#
# For N (default 1000) and the baseline B (default 100), each on a fresh
# lockstepd (the plain build, its own temporary directory and free port,
# production heartbeat 1 s and node timeout 10 s) with N agents simulated
# by ceil(N / P) lockstep-sim processes (P default 2500):
#   - idle: scheduler CPU% and RSS, loop lag p99, over SECS (default 10)
#   - dispatch: 20 one-node jobs one after the other, submit -> every rank
#     running (the attempt's running_ms), p50 and p99
#   - sweep: S (default 1000) one-node jobs submitted at once -> all ended
#   - gang: one min(N,1000)-node x 8-rank job, submit -> all ranks running
# Then, at N only, the queue: jobs that cannot start (16 GPUs per node on
# 8-GPU nodes, wait_for_nodes, priority -1) are added up to each count of
# --pending; at each: dispatch of 10 one-node jobs past them, idle CPU% and
# loop lag, and the longest "scheduling pass took" the scheduler logged
# (it logs passes over 100 ms; GET /metrics has no pass-time figure).
# Every figure is printed beside its baseline and the ratio.
set -u
N=1000 BASE=100 PER=2500 SWEEP=1000 PENDING="1000 10000" IDLE_S=10
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) N=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --per-proc) PER=$2; shift 2 ;;
    --sweep) SWEEP=$2; shift 2 ;;
    --pending) PENDING=$2; shift 2 ;;
    --idle-s) IDLE_S=$2; shift 2 ;;
    *) sed -n 2,24p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
SCALE_PY=$SRC_DIR/bench/scale.py
ulimit -n "$(ulimit -Hn)" 2>/dev/null
HEARTBEAT_MS=1000
declare -A FIG=()
SIM_PIDS=()

sp() { "$PY" "$SCALE_PY" "$1" "$TEST_DIR/sched/sock" "${@:2}"; }

# record TAG LINE: keep each key=value of LINE as FIG[TAG.key].
record() {
    local tag=$1 kv
    echo "  [$tag] $2"
    for kv in $2; do FIG[$tag.${kv%%=*}]=${kv#*=}; done
}

stop_sims() {
    local pid
    for pid in "${SIM_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${SIM_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    SIM_PIDS=()
}

# cluster N: a fresh scheduler and N simulated agents.
cluster() {
    local n=$1 first=1 k
    stop_sims
    kill_scheduler
    rm -rf "$TEST_DIR/sched"
    start_scheduler >/dev/null || exit 1
    while [ "$first" -le "$n" ]; do
        k=$((n - first + 1 < PER ? n - first + 1 : PER))
        "$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
            --nodes "$k" --first "$first" --gpus 8 --rank-time 1000 \
            --log-rate 1 --ramp-ms $((k * 2)) --report-ms 10000 \
            >>"$TEST_DIR/sim-$n-$first.log" 2>&1 &
        SIM_PIDS+=($!)
        EXTRA_PIDS+=($!)
        first=$((first + k))
    done
    record "$n" "$(sp wait-up "$n" 300)"
}

measure() {
    local n=$1 gang=$(($1 < 1000 ? $1 : 1000))
    echo "# N=$n: $(((n + PER - 1) / PER)) lockstep-sim process(es)"
    cluster "$n"
    sleep 3
    record "$n" "$(sp idle "$SCHED_PID" "$IDLE_S")"
    record "$n" "$(sp dispatch 20)"
    record "$n" "$(sp sweep "$SWEEP")"
    record "$n" "$(sp gang "$gang" 8)"
    record "$n" "$(sp idle "$SCHED_PID" "$IDLE_S" | sed 's/^/after_/; s/ / after_/g')"
    echo "  [$n] sim: $(tail -n 1 "$TEST_DIR/sim-$n-1.log")"
}

max_pass_ms() {
    grep -o 'scheduling pass took [0-9]*' "$TEST_DIR/sched/log" |
        awk '{ if ($4 > m) m = $4 } END { print m + 0 }'
}

queue() {
    local have=0 want
    for want in $PENDING; do
        sp submit $((want - have)) \
            '{"version":1,"argv":["sim"],"gpus_per_node":16,"wait_for_nodes":true,"priority":-1}' >/dev/null
        have=$want
        record "q$want" "$(sp idle "$SCHED_PID" "$IDLE_S") $(sp dispatch 10) max_pass_ms=$(max_pass_ms)"
    done
}

row() { # FIGURE BASE_VALUE VALUE
    "$PY" -c '
import sys
f, b, v = sys.argv[1:4]
try:
    r = "%.2f" % (float(v) / float(b))
except (ValueError, ZeroDivisionError):
    r = "-"
print("%-30s | %12s | %12s | %6s" % (f, b, v, r))
' "$@"
}

measure "$BASE"
measure "$N"
[ -n "$PENDING" ] && queue
stop_sims

echo
printf '%-30s | %12s | %12s | %6s\n' figure "N=$BASE" "N=$N" ratio
for k in up_after_s cpu_pct rss_mb loop_lag_p99_le_ms dispatch_p50_ms \
    dispatch_p99_ms sweep_submit_s sweep_total_s sweep_jobs_per_s \
    gang_nodes gang_running_ms after_cpu_pct after_rss_mb \
    after_loop_lag_p99_le_ms; do
    row "$k" "${FIG[$BASE.$k]:-}" "${FIG[$N.$k]:-}"
done
if [ -n "$PENDING" ]; then
    first=${PENDING%% *}
    echo
    printf '%-30s | %12s | %12s | %6s\n' "queue (N=$N)" "pending=$first" "pending=last" ratio
    for want in ${PENDING#"$first"}; do
        for k in cpu_pct rss_mb loop_lag_p99_le_ms dispatch_p50_ms \
            dispatch_p99_ms max_pass_ms; do
            row "$k (q=$want)" "${FIG[q$first.$k]:-}" "${FIG[q$want.$k]:-}"
        done
    done
fi
