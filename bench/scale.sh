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
# Then, at N only, on a fresh cluster whose ranks run until cancelled
# (--faults, on by default; docs/scale.md "Faults, logs, restart"):
#   - logs (a cluster of its own): one min(N,1000)-node x 8-rank job
#     whose ranks each log --log-rate (10) lines a second: the lines/s
#     the scheduler accepted, its CPU and loop lag meanwhile
#   - node loss: --victims (10) extra one-node agents (own processes) each
#     run a one-node job while the N nodes are taken; all are killed -9
#     at once: kill -> node LOST, kill -> the job's next attempt running
#     (on one of as many spare one-node agents), p50 and p99
#   - gang after a loss: a (N+1)-node x 8-rank job over the N nodes and
#     one more victim; the victim is killed: -> every rank of the next
#     attempt running
#   - false positives: node_lost events of nodes that were not killed
#   - the mixed queue: --mixed (100000) jobs of mixed shapes (1, 2 or 8
#     GPUs on one node, 4 whole nodes, CPU only) queued behind the taken
#     cluster (batches); the passes then, and once the cluster is freed
#     (lockstep_sched_pass_duration_seconds)
#   - restart: kill -9 of lockstepd with those records and nodes ->
#     serving again, -> every agent reconciled
# (--no-faults leaves these out; --faults-only runs them alone.)
#
#   bench/scale.sh --gang-only "1000 300" [--baseline BUILD_DIR]
#
# measures only the gang (submit -> all ranks running, and the scheduler's
# CPU seconds meanwhile: less at the mercy of the machine's load) on a
# fresh cluster of each size; with --baseline, that build's lockstepd first, then this
# one's, in the same run (the same lockstep-sim drives both).
set -u
N=1000 BASE=100 PER=2500 SWEEP=1000 PENDING="1000 10000" IDLE_S=10
VICTIMS=10 LOG_RATE=10 MIXED=100000 FAULTS=1 GANG_ONLY= BASELINE=
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) N=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --per-proc) PER=$2; shift 2 ;;
    --sweep) SWEEP=$2; shift 2 ;;
    --pending) PENDING=$2; shift 2 ;;
    --idle-s) IDLE_S=$2; shift 2 ;;
    --victims) VICTIMS=$2; shift 2 ;;
    --log-rate) LOG_RATE=$2; shift 2 ;;
    --mixed) MIXED=$2; shift 2 ;;
    --no-faults) FAULTS=0; shift ;;
    --faults-only) FAULTS=2; shift ;;
    --gang-only) GANG_ONLY=$2; shift 2 ;;
    --baseline) BASELINE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    *) sed -n 2,49p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
SCALE_PY=$SRC_DIR/bench/scale.py
ulimit -n "$(ulimit -Hn)" 2>/dev/null
HEARTBEAT_MS=1000
declare -A FIG=()

sp() { "$PY" "$SCALE_PY" "$1" "$TEST_DIR/sched/sock" "${@:2}"; }

# record TAG LINE: keep each key=value of LINE as FIG[TAG.key].
record() {
    local tag=$1 kv
    echo "  [$tag] $2"
    for kv in $2; do FIG[$tag.${kv%%=*}]=${kv#*=}; done
}

# cluster N [RANK_MS [LOG_RATE]]: a fresh scheduler and N simulated
# agents whose ranks run RANK_MS (1000) and log LOG_RATE lines/s (1).
cluster() {
    local n=$1 rank_ms=${2:-1000} rate=${3:-1}
    stop_sims
    kill_scheduler
    rm -rf "$TEST_DIR/sched"
    start_scheduler -o master_port_count=1000 -o max_connections_per_peer=0 >/dev/null || exit 1
    start_sims "$n" "$PER" "$n" --gpus 8 --rank-time "$rank_ms" \
        --log-rate "$rate" --report-ms 5000
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
    sp passes | sed 's/.*pass_max_le_ms=//'
}

queue() {
    local have=0 want
    for want in $PENDING; do
        sp batch $((want - have)) \
            '{"version":1,"argv":["sim"],"gpus_per_node":16,"wait_for_nodes":true,"priority":-1}' >/dev/null
        have=$want
        record "q$want" "$(sp idle "$SCHED_PID" "$IDLE_S") $(sp dispatch 10) max_pass_ms=$(max_pass_ms)"
    done
}

# one_node PREFIX K: start a lockstep-sim of one node, PREFIXK, whose
# ranks run until cancelled; its pid in ONE_PID.
one_node() {
    "$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
        --nodes 1 --first "$2" --prefix "$1" --gpus 8 --rank-time 360000000 \
        --report-ms 60000 >>"$TEST_DIR/sim-$1$2.log" 2>&1 &
    ONE_PID=$!
    EXTRA_PIDS+=($!)
}

sum_log_lines() { # the sims' latest log_lines/s, summed
    local f
    for f in "$TEST_DIR"/sim-"$N"-*.log; do
        tail -n 1 "$f" | grep -o 'log_lines/s=[0-9]*' | cut -d= -f2
    done | awk '{ s += $1 } END { print s + 0 }'
}

# faults: node loss, a gang after a loss, logs, the mixed queue and a
# restart, at N (see the top of this file).
faults() {
    local gang=$(($N < 1000 ? $N : 1000)) k jobs= pids= id node left
    local -A vic=()
    echo "# logs at N=$N: a ${gang}-node x 8-rank job logging $LOG_RATE lines/s a rank"
    cluster "$N" 360000000 "$LOG_RATE"
    id=$(sp submit 1 "{\"version\":1,\"argv\":[\"sim\"],\"nodes\":$gang,\"ranks_per_node\":8,\"max_restarts\":0}" | sed 's/.*ids=//')
    wait_job_state "$id" RUNNING 300 || exit 1
    record faults "$(sp idle "$SCHED_PID" 11 | sed 's/^/log_/; s/ / log_/g')"
    record faults "log_lines_per_s=$(sum_log_lines) log_ranks=$((gang * 8)) log_rate=$LOG_RATE"
    echo "# faults at N=$N: $VICTIMS victims, $((VICTIMS + 1)) spares"
    cluster "$N" 360000000 0
    for k in $(seq 1 $((VICTIMS + 1))); do
        one_node vic "$k"; vic[vic$k]=$ONE_PID
        one_node zsp "$k"
    done
    record faults "$(sp wait-up $((N + 2 * VICTIMS + 2)) 300 | sed 's/^/all_/; s/ / all_/')"
    # The N nodes taken (names sim*, before vic* and zsp*), then one job
    # on each of V of the V+1 victims; their agents are the ones killed.
    id=$(sp submit 1 "{\"version\":1,\"argv\":[\"sim\"],\"nodes\":$N,\"gpus_per_node\":8}" | sed 's/.*ids=//')
    wait_job_state "$id" RUNNING 300 || exit 1
    for k in $(seq 1 "$VICTIMS"); do
        jobs+=${jobs:+,}$(submit_id --gpus-per-node 8 --max-infra-restarts 5 -- sim)
    done
    for j in ${jobs//,/ }; do
        wait_job_state "$j" RUNNING 120 || exit 1
        node=$(ls_cli show "$j" --json | jget 'j["attempts"][-1]["nodes"][0]["node"]')
        pids+=${pids:+,}${vic[$node]}
        unset "vic[$node]"
    done
    left=${!vic[*]}
    record faults "$(sp loss "$jobs" "$pids")"
    ls_cli cancel "$id" ${jobs//,/ } >/dev/null
    # A gang over the N nodes and the victim left.
    id=$(sp submit 1 "{\"version\":1,\"argv\":[\"sim\"],\"nodes\":$((N + 1)),\"ranks_per_node\":8,\"gpus_per_node\":8,\"max_infra_restarts\":5}" | sed 's/.*ids=//')
    wait_job_state "$id" RUNNING 300 || exit 1
    record faults "$(sp loss "$id" "${vic[$left]}" | sed 's/loss_n=1 //; s/lost_p50_ms/gang_lost_ms/; s/ lost_p99_ms=[0-9]*//; s/recovered/gang_recovered/; s/recover_p50_ms/gang_recover_ms/; s/ recover_p99_ms=[0-9]*//')"
    # The mixed queue behind the taken cluster, then freed.
    record faults "$(sp batch "$MIXED" '[{"argv":["sim"],"gpus_per_node":1},{"argv":["sim"],"gpus_per_node":2,"ranks_per_node":2},{"argv":["sim"],"gpus_per_node":8,"ranks_per_node":8},{"argv":["sim"],"nodes":4,"gpus_per_node":8,"ranks_per_node":8},{"argv":["sim"],"cpus_per_rank":4}]' | sed 's/batch_per_s/mixed_submit_per_s/')"
    sleep 2
    record faults "$(sp passes | sed 's/passes=/queued_passes=/; s/pass_mean_ms/queued_pass_mean_ms/; s/pass_max_le_ms/queued_pass_max_le_ms/')"
    ls_cli cancel "$id" >/dev/null
    sleep 10
    record faults "$(sp passes | sed 's/passes=/freed_passes=/; s/pass_mean_ms/freed_pass_mean_ms/; s/pass_max_le_ms/freed_pass_max_le_ms/')"
    record faults "$(sp idle "$SCHED_PID" "$IDLE_S" | sed 's/^/mixed_/; s/ / mixed_/g')"
    record faults "$(sp falsepos vic)"
    # Restart: kill -9 with every record and node, and back.
    k=$(db_query "SELECT count(*) FROM jobs")
    record faults "restart_jobs=$k restart_nodes=$((N + 2 * VICTIMS + 2))"
    local t0
    t0=$(date +%s.%N)
    kill_scheduler
    start_scheduler -o master_port_count=1000 -o max_connections_per_peer=0 >/dev/null || exit 1
    record faults "$(sp restart-wait "$t0" $((N + VICTIMS + 1)))"
    stop_sims
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

# gang_only: each size of GANG_ONLY, a fresh cluster and one gang of
# that many nodes x 8 ranks, with the baseline's lockstepd and this one's.
gang_only() {
    local n bin tag mine=$LOCKSTEPD
    for n in $GANG_ONLY; do
        for tag in before after; do
            case $tag in
            before) [ -n "$BASELINE" ] || continue
                bin=$BASELINE/scheduler/lockstepd ;;
            after) bin=$mine ;;
            esac
            echo "# gang $n x 8, $tag ($bin)"
            # Ranks that outlive the launch: with measure's 1 s, a gang
            # slower than that has its first ranks ending before its last
            # start, and never has every rank running at once. No log
            # lines: at 2,000 x 8 ranks their shipping alone saturates
            # the scheduler (one request per rank a second).
            LOCKSTEPD=$bin cluster "$n" 3600000 0
            sleep 3
            record "$tag$n" "$(sp gang "$n" 8 "$SCHED_PID")"
        done
        row "gang_running_ms ($n x 8)" "${FIG[before$n.gang_running_ms]:-}" \
            "${FIG[after$n.gang_running_ms]:-}"
        row "gang_cpu_s ($n x 8)" "${FIG[before$n.gang_cpu_s]:-}" \
            "${FIG[after$n.gang_cpu_s]:-}"
    done
    stop_sims
    kill_scheduler
}
if [ -n "$GANG_ONLY" ]; then
    gang_only
    exit 0
fi

if [ "$FAULTS" != 2 ]; then
    measure "$BASE"
    measure "$N"
    [ -n "$PENDING" ] && queue
    stop_sims
fi
[ "$FAULTS" != 0 ] && faults

[ "$FAULTS" = 2 ] || {
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
}
if [ "$FAULTS" != 0 ]; then
    echo
    echo "faults, logs, the mixed queue and a restart at N=$N:"
    for k in log_lines_per_s log_ranks log_cpu_pct log_loop_lag_p99_le_ms \
        loss_n lost_p50_ms lost_p99_ms \
        recovered recover_p50_ms recover_p99_ms gang_lost_ms gang_recover_ms \
        false_positives submitted mixed_submit_per_s queued_passes \
        queued_pass_mean_ms queued_pass_max_le_ms freed_passes \
        freed_pass_mean_ms freed_pass_max_le_ms mixed_cpu_pct mixed_rss_mb \
        restart_jobs restart_nodes restart_serving_s restart_reconciled_s; do
        printf '  %-28s %s\n' "$k" "${FIG[faults.$k]:-}"
    done
fi
