#!/bin/bash
# logread.sh - `lockstep logs JOB` of a job of many ranks: the time and
# the requests it takes, against a baseline CLI (e.g. one that reads rank
# by rank). Prints figures; asserts nothing (docs/scale.md "Reading many
# ranks' output").
#
#   bench/logread.sh [--ranks R] [--lines K] [--sim N] [--reps M]
#                    [--baseline BUILD_DIR [--no-before]]
#
# A fresh lockstepd and either one real agent running a
# one-node job of R (default 256) ranks that each print K (default 5)
# lines, or (--sim N) N nodes simulated by lockstep-sim (bench/sim.c)
# running an N-node x 8-rank job whose ranks ship 10 lines a second for
# 3 s. Once the job has SUCCEEDED and its output is all in: M (default
# 3) reads of the whole output; with --baseline, first on the baseline's
# scheduler with its CLI (before), then on this build's with the baseline
# CLI (an old CLI against a new scheduler) and its own (--no-before: not
# the baseline's scheduler, whose reads of a big job take long); the
# median wall time, the GET /v1/jobs/{}/logs requests each read made
# (the scheduler's own count), and whether the reads of one job printed
# the same bytes (a simulated job's output differs from run to run).
set -u
RANKS=256 LINES=5 SIM_N=0 REPS=3 BASELINE= BEFORE=1
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --lines) LINES=$2; shift 2 ;;
    --sim) SIM_N=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --baseline) BASELINE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --no-before) BEFORE=; shift ;;
    *) sed -n 2,21p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
ulimit -n "$(ulimit -Hn)" 2>/dev/null

logs_requests() {
    curl -s "$LOCKSTEP_URL/metrics" | sed -n \
        's/^lockstep_http_request_duration_seconds_count{method="GET",route="\/v1\/jobs\/{}\/logs"} //p' |
        grep . || echo 0
}

# read_once CLI OUT: one whole read; prints "ms requests".
read_once() {
    local r0 t0 t1
    r0=$(logs_requests)
    t0=$(date +%s%N)
    "$1" logs "$ID" >"$2" || echo "logs failed" >&2
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000000)) $(($(logs_requests) - r0))"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# setup: a fresh scheduler ($LOCKSTEPD) running the job to its end, its
# output all in (two reads a second apart print the same); ID, WORLD.
setup() {
    local prev= pid
    kill_scheduler
    for pid in "${EXTRA_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    [ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null
    rm -rf "$TEST_DIR/sched" "$TEST_DIR/agent-n1"
    start_scheduler >/dev/null || exit 1
    if [ "$SIM_N" -gt 0 ]; then
        "$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
            --nodes "$SIM_N" --gpus 8 --rank-time 3000 --log-rate 10 \
            --ramp-ms $((SIM_N * 2)) --report-ms 5000 >"$TEST_DIR/sim.log" 2>&1 &
        EXTRA_PIDS+=($!)
        wait_nodes_up "$SIM_N" || exit 1
        ID=$(submit_id --nodes "$SIM_N" --ranks-per-node 8 -- sim) || exit 1
        WORLD=$((SIM_N * 8))
    else
        start_agent n1 -o cpus="$RANKS" || exit 1
        AGENT_PID=$!
        wait_nodes_up 1 || exit 1
        ID=$(submit_id --nodes 1 --ranks-per-node "$RANKS" -- sh -c \
            "for i in \$(seq $LINES); do echo \"rank \$RANK line \$i\"; done") || exit 1
        WORLD=$RANKS
    fi
    wait_job_state "$ID" SUCCEEDED 600 || exit 1
    until "$CLI" logs "$ID" >"$TEST_DIR/now" && [ -n "$prev" ] &&
        cmp -s "$TEST_DIR/now" "$TEST_DIR/prev"; do
        prev=1
        mv "$TEST_DIR/now" "$TEST_DIR/prev"
        sleep 1
    done
    echo "# job $ID: $WORLD ranks, $(wc -l <"$TEST_DIR/now") lines," \
        "$(wc -c <"$TEST_DIR/now") bytes"
}

# phase TAG CLI: M reads by CLI; MS[TAG], REQ[TAG], the output TAG.out.
declare -A MS=() REQ=()
phase() {
    local rep ms req
    for rep in $(seq "$REPS"); do
        read -r ms req < <(read_once "$2" "$TEST_DIR/$1.out")
        MS[$1]+="$ms " REQ[$1]=$req
    done
}

# The baseline's scheduler with its CLI (before), then this build's with
# the baseline CLI (an old CLI against a new scheduler) and with its own.
THIS_D=$LOCKSTEPD THIS_CLI=$CLI
if [ -n "$BASELINE" ] && [ -n "$BEFORE" ]; then
    LOCKSTEPD=$BASELINE/scheduler/lockstepd CLI=$BASELINE/cli/lockstep setup
    LOCKSTEPD=$BASELINE/scheduler/lockstepd phase base "$BASELINE/cli/lockstep"
fi
LOCKSTEPD=$THIS_D CLI=$THIS_CLI setup
[ -n "$BASELINE" ] && phase oldcli "$BASELINE/cli/lockstep"
phase this "$THIS_CLI"

same=-
if [ -n "$BASELINE" ]; then
    same=yes
    cmp -s "$TEST_DIR/oldcli.out" "$TEST_DIR/this.out" || same=NO
    if [ "$SIM_N" = 0 ] && [ -n "$BEFORE" ]; then
        cmp -s "$TEST_DIR/base.out" "$TEST_DIR/this.out" || same=NO
    fi
fi
med() { echo "${MS[$1]:-}" | tr ' ' '\n' | grep . | median; }
b=$(med base)
printf '%-34s %10s %10s %8s\n' "read of the whole output" "median ms" requests ratio
for tag in base oldcli this; do
    [ -n "${MS[$tag]:-}" ] || continue
    t=$(med $tag)
    printf '%-34s %10s %10s %8s\n' "$(case $tag in
        base) echo "before (old scheduler, old CLI)" ;;
        oldcli) echo "old CLI, this scheduler" ;;
        this) echo "this scheduler, this CLI" ;; esac)" "$t" "${REQ[$tag]}" \
        "$(awk -v b="${b:-0}" -v t="$t" 'BEGIN { print (b > 0 ? sprintf("%.3f", t / b) : "-") }')"
done
echo "same output: $same"
