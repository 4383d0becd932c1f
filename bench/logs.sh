#!/bin/bash
# logs.sh - the scheduler absorbing a flood of rank output. Prints
# figures; asserts nothing (docs/scale.md "Log shipping").
#
#   bench/logs.sh [--nodes N] [--log-rate R] [--secs S] [--per-proc P]
#                 [--baseline BUILD_DIR]
#
# A fresh lockstepd (production heartbeat 1 s, node timeout 10 s) and N
# (default 300) agents simulated by lockstep-sim (bench/sim.c), one
# N-node x 8-rank job whose ranks each log R (default 10) lines a second
# as the real agent ships them (one POST /v1/agent/logs per rank and
# round). Over S (default 30) seconds from when it runs: the lines/s the
# scheduler accepted and the requests that failed (refused or timed out)
# per 5 s (the sims' reports, averaged), the sims' status round trip p99
# (the largest of their averages), the scheduler's CPU, its loop lag p99
# (GET /metrics, lockstep_loop_lag_seconds: the bucket bound it falls
# under), and the node_lost events of the whole run (no node is killed:
# each is a false positive).
# With --baseline, the same is measured first with that build's lockstepd
# (e.g. main's, built in a temporary worktree), the sims being this
# build's, and each figure is printed beside it.
set -u
N=300 LOG_RATE=10 SECS=30 PER=2500 BASELINE=
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) N=$2; shift 2 ;;
    --log-rate) LOG_RATE=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --per-proc) PER=$2; shift 2 ;;
    --baseline) BASELINE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    *) echo "usage: $0 [--nodes N] [--log-rate R] [--secs S] [--per-proc P] [--baseline BUILD_DIR]" >&2
        exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SCALE_PY=$SRC_DIR/bench/scale.py
ulimit -n "$(ulimit -Hn)" 2>/dev/null
HEARTBEAT_MS=1000
declare -A FIG=()

sp() { "$PY" "$SCALE_PY" "$1" "$TEST_DIR/sched/sock" "${@:2}"; }

# sum_sims TAG KEY K: KEY averaged over each sim's last K reports (5 s
# each), summed over the sims (max: the largest instead).
sum_sims() {
    local f
    for f in "$TEST_DIR"/sim-"$1"-*.log; do
        grep '^sim:' "$f" | tail -n "$3" | grep -o " $2=[0-9.]*" | cut -d= -f2 |
            awk '{ s += $1; n++ } END { print n ? s / n : 0 }'
    done | awk -v m="${4:-sum}" '{ s += $1; if ($1 > x) x = $1 }
        END { printf "%.0f\n", m == "max" ? x : s }'
}

# run TAG LOCKSTEPD: the whole measurement with that scheduler binary.
run() {
    local tag=$1 id line kv
    stop_sims
    kill_scheduler
    rm -rf "$TEST_DIR/sched"
    # All the simulated agents connect from 127.0.0.1: no cap per address
    # (real agents each have their own; the cap would shed them here).
    LOCKSTEPD=$2 start_scheduler -o master_port_count=1000 \
        -o max_connections_per_peer=0 >/dev/null || exit 1
    start_sims "$N" "$PER" "$tag" --gpus 8 --rank-time 360000000 \
        --log-rate "$LOG_RATE" --report-ms 5000
    sp wait-up "$N" 300 >/dev/null || exit 1
    id=$(sp submit 1 "{\"version\":1,\"argv\":[\"sim\"],\"nodes\":$N,\"ranks_per_node\":8,\"max_restarts\":0}" | sed 's/.*ids=//')
    wait_job_state "$id" RUNNING 300 || exit 1
    line="$(sp idle "$SCHED_PID" "$SECS")"
    line="$line lines_per_s=$(sum_sims "$tag" log_lines/s $((SECS / 5)))"
    line="$line status_rtt_p99_ms=$(sum_sims "$tag" rtt_p99_ms $((SECS / 5)) max)"
    line="$line failed_per_5s=$(sum_sims "$tag" errors $((SECS / 5)))"
    line="$line lost_events=$(db_query "SELECT count(*) FROM events WHERE kind = 'node_lost'")"
    echo "  [$tag] $line"
    for kv in $line; do FIG[$tag.${kv%%=*}]=${kv#*=}; done
    stop_sims
    kill_scheduler
}

echo "# logs: $N nodes x 8 ranks, $LOG_RATE lines/s a rank ($((N * 8 * LOG_RATE)) lines/s offered), ${SECS} s"
[ -n "$BASELINE" ] && run before "$BASELINE/scheduler/lockstepd"
run after "$LOCKSTEPD"
printf '%-22s %12s %12s\n' figure before after
for k in lines_per_s loop_lag_p99_le_ms status_rtt_p99_ms cpu_pct rss_mb \
    failed_per_5s lost_events; do
    printf '%-22s %12s %12s\n' "$k" "${FIG[before.$k]:--}" "${FIG[after.$k]:--}"
done
