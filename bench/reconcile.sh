#!/bin/bash
# reconcile.sh - scheduler restart -> every agent reconciled. Prints
# figures; asserts nothing. docs/scale.md says what each figure means.
#
#   bench/reconcile.sh [--nodes N] [--jobs J] [--job-nodes K]
#                      [--ranks-per-node R] [--trials T] [--signal SIG]
#
# A lockstepd of the build (its own temporary directory and free port,
# production timing: heartbeat 1 s, node timeout 10 s, lease 5 s, through
# tests/lib/harness.sh, which kills everything by PID at the end) with N
# (16) agents simulated by one lockstep-sim over the real protocol
# (docs/scale.md). First with no job (the baseline), then with J (8) jobs
# of K (5) nodes x R (25) ranks running (1,000 ranks; a rank of the
# simulator runs for a day), T (5) times each: lockstepd is killed with
# SIG (KILL; TERM for an orderly stop) and started again at once on the
# same state, and the trial measures from that start:
#   serving_ms     until lockstepd listens with its state loaded (the
#                  "lockstepd ... started" line of its log)
#   reconciled_ms  until every node has sent a status since the start
#                  (the scheduler compared it with what it holds: the
#                  node's ranks are adopted, or the missing ones fail)
#                  and is UP
#   cpu_ms         the new lockstepd's CPU (user + system) until then
# and then counts the jobs still RUNNING on attempt 1 with every rank
# running, and the jobs restarted or failed (restarted, which must be 0).
# The medians and maxima over the trials are printed beside the
# baseline's with the ratio. The simulator retries a failed status every
# 1000 ms (a real agent backs off from 100 ms to a quarter of the lease),
# which bounds reconciled_ms from below.
set -u
N=16 JOBS=8 JOB_NODES=5 RPN=25 TRIALS=5 SIG=KILL
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) N=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --job-nodes) JOB_NODES=$2; shift 2 ;;
    --ranks-per-node) RPN=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --signal) SIG=$2; shift 2 ;;
    *) sed -n 2,30p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
SCALE_PY=$SRC_DIR/bench/scale.py
HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000
declare -A FIG=()

sp() { "$PY" "$SCALE_PY" "$1" "$TEST_DIR/sched/sock" "${@:2}"; }
now_ms() { date +%s%3N; }

# restart: stop lockstepd with $SIG, start it again (in this shell, which
# keeps its pid), measure into ./trial.
restart() {
    local t0
    kill -"$SIG" "$SCHED_PID" 2>/dev/null
    wait "$SCHED_PID" 2>/dev/null
    SCHED_PID=
    t0=$(now_ms)
    start_scheduler >/dev/null || exit 1
    sp reconcile "$N" "$t0" "$TEST_DIR/sched/log" 60 "$SCHED_PID" \
        >"$TEST_DIR/trial"
}

# trials TAG: TRIALS restarts; FIG[TAG.figure] = "median max".
trials() {
    local tag=$1 k line s r c
    local -a serving=() reconciled=() cpu=()
    for k in $(seq 1 "$TRIALS"); do
        restart
        line=$(cat "$TEST_DIR/trial")
        echo "  [$tag $k] $line"
        for kv in $line; do
            case $kv in
            serving_ms=*) serving+=("${kv#*=}") ;;
            reconciled_ms=*) reconciled+=("${kv#*=}") ;;
            cpu_ms=*) cpu+=("${kv#*=}") ;;
            restarted=*) FIG[$tag.restarted]=${kv#*=} ;;
            ranks_running=*) FIG[$tag.ranks_running]=${kv#*=} ;;
            esac
        done
        # Let every node settle (heartbeats, long polls) before the next.
        sleep 3
    done
    s=$(printf '%s\n' "${serving[@]}" | sort -n)
    r=$(printf '%s\n' "${reconciled[@]}" | sort -n)
    FIG[$tag.serving_p50]=$(echo "$s" | sed -n "$(((TRIALS + 1) / 2))p")
    FIG[$tag.serving_max]=$(echo "$s" | tail -n 1)
    FIG[$tag.reconciled_p50]=$(echo "$r" | sed -n "$(((TRIALS + 1) / 2))p")
    FIG[$tag.reconciled_max]=$(echo "$r" | tail -n 1)
    c=$(printf '%s\n' "${cpu[@]}" | sort -n)
    FIG[$tag.cpu_p50]=$(echo "$c" | sed -n "$(((TRIALS + 1) / 2))p")
    FIG[$tag.cpu_max]=$(echo "$c" | tail -n 1)
}

row() { # FIGURE BASE_VALUE VALUE
    "$PY" -c '
import sys
f, b, v = sys.argv[1:4]
try:
    r = "%.2f" % (float(v) / float(b))
except (ValueError, ZeroDivisionError):
    r = "-"
print("%-22s | %12s | %12s | %6s" % (f, b, v, r))
' "$@"
}

echo "# $(nproc) cores, $(uname -r), lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
echo "# $N simulated agents; SIG$SIG, restarted at once; $TRIALS trials each"
start_scheduler >/dev/null || exit 1
"$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
    --nodes "$N" --gpus 8 --cpus 256 --rank-time 86400000 \
    --report-ms 60000 >>"$TEST_DIR/sim.log" 2>&1 &
EXTRA_PIDS+=($!)
sp wait-up "$N" 60 >/dev/null || { echo "the agents did not come up"; exit 1; }

echo "# baseline: no job"
trials idle
echo "# $JOBS jobs of $JOB_NODES nodes x $RPN ranks"
sp submit "$JOBS" "{\"version\":1,\"argv\":[\"sim\"],\"nodes\":$JOB_NODES,\"ranks_per_node\":$RPN,\"max_restarts\":0,\"max_infra_restarts\":0}" >/dev/null
sp wait-running "$JOBS" 120 | sed 's/^/  /'
trials ranks

echo
printf '%-22s | %12s | %12s | %6s\n' figure "no job" \
    "${FIG[ranks.ranks_running]:-?} ranks" ratio
for k in serving_p50 serving_max reconciled_p50 reconciled_max cpu_p50 \
    cpu_max; do
    row "${k%_*}_ms ${k##*_}" "${FIG[idle.$k]:-}" "${FIG[ranks.$k]:-}"
done
echo "jobs restarted or failed after the last restart: ${FIG[ranks.restarted]:-?}"
