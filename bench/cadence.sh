#!/bin/bash
# cadence.sh - what synchronized GC buys, and how fast a directive reaches
# the ranks. Prints figures; asserts nothing (docs/cadence.md).
#
#   bench/cadence.sh [--rounds N] [--steps S]
#
# Real daemons on loopback through the test harness (scheduler + 4 agents,
# production defaults: heartbeat 1 s), real PyTorch gloo ranks.
#
# 1. Injected pauses, 8 ranks (2 agents x 4), an all_reduce every step, a
#    50 ms pause standing for a GC on average once every 20 steps per
#    rank: steps/s with (a) each rank pausing at its own random steps,
#    (b) lockstep's synchronized steps (--gc-every 20steps: every rank
#    pauses at the same step), (c) no pause. Prints (c-b)/(c-a): the share
#    of the unsynchronized loss that remains; the ideal is 1/8.
# 2. Delivery latency, 16 ranks on 4 agents (plain Python ranks at 100
#    steps/s, --gc-every 1s): from the scheduler's decision (the
#    directive's issue time) to the directive being visible in each
#    rank's mapped control file; median and p99 over every (directive,
#    rank).
# 3. Real GC, 8 ranks: a real object graph that makes a full collection
#    take tens of ms; steps/s with automatic GC and with --gc-every 20steps.
# Each figure is the median over N rounds (default 3), (a), (b), (c)
# interleaved within a round.
set -u
ROUNDS=3
STEPS=600
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "usage: bench/cadence.sh [--rounds N] [--steps S]" >&2; exit 2 ;;
    esac
done
# The ranks time the steps after 50 of warm-up (bench/cadence_rank.py).
if ! [ "$STEPS" -gt 50 ] 2>/dev/null; then
    echo "bench/cadence.sh: --steps must be more than the 50 warm-up steps" >&2
    exit 2
fi

. "$(dirname "$0")/../tests/lib/harness.sh"
RANK_PY=$SRC_DIR/bench/cadence_rank.py
# Scratch files go with the cluster, into the harness's directory.
cd "$TEST_DIR" || exit 1

HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000
start_scheduler >/dev/null
for n in n1 n2 n3 n4; do start_agent $n; done
wait_nodes_up 4 || { echo "cluster did not come up"; exit 1; }

# run NODES RPN [submit options] -- [rank options]: submit, wait, print the
# job id.
run() {
    local nodes=$1 rpn=$2 sopts=() id
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
    shift
    id=$(submit_id --nodes "$nodes" --ranks-per-node "$rpn" \
        --env PYTHONPATH="$SRC_DIR/sdk/python" "${sopts[@]}" \
        -- "$PY" "$RANK_PY" "$@") || return 1
    # Until it ends, however it ends: a failed job says so at once.
    wait_until 600 job_over "$id" && job_state_is "$id" SUCCEEDED || {
        echo "job $id did not succeed: $(job_state "$id")" >&2
        ls_cli show "$id" | tail -n 12 >&2
        return 1
    }
    echo "$id"
}

job_over() {
    case $(job_state "$1") in SUCCEEDED | FAILED | CANCELLED) ;; *) false ;; esac
}

steps_per_s() {
    ls_cli logs "$1" --rank 0 | sed -n 's/^steps\/s //p' | tail -n 1
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "# 1. injected 50 ms pauses, 8 ranks, $STEPS steps, $ROUNDS rounds"
: >a.txt; : >b.txt; : >c.txt
for r in $(seq 1 "$ROUNDS"); do
    id=$(run 2 4 -- pause --pause random --steps "$STEPS") && steps_per_s "$id" >>a.txt
    id=$(run 2 4 --gc-every 20steps -- pause --pause lockstep --steps "$STEPS") &&
        steps_per_s "$id" >>b.txt
    id=$(run 2 4 -- pause --pause none --steps "$STEPS") && steps_per_s "$id" >>c.txt
done
A=$(median <a.txt); B=$(median <b.txt); C=$(median <c.txt)
echo "(a) each rank pauses on its own  $A steps/s"
echo "(b) lockstep synchronized pauses $B steps/s"
echo "(c) no pause (baseline)          $C steps/s"
if [ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ]; then
    "$PY" -c "
a, b, c = $A, $B, $C
print('(c-b)/(c-a) = %.3f  (ideal 1/8 = 0.125; b/c = %.3f, a/c = %.3f)'
      % ((c - b) / (c - a) if c != a else float('nan'), b / c, a / c))"
else
    echo "(c-b)/(c-a): not computed, some runs failed (see above)"
fi

echo "# 2. delivery latency, 16 ranks on 4 agents, gc every 1s"
id=$(run 4 4 --gc-every 1s -- latency --seconds 30 --rate 100)
ls_cli show "$id" --json >lat.json
for r in $(seq 0 15); do ls_cli logs "$id" --rank "$r"; done | grep '^seen' >seen.txt
"$PY" - lat.json seen.txt <<'PY'
import json, statistics, sys
j = json.load(open(sys.argv[1]))
issued = {d["seq"]: d["issued_ms"] for d in j["attempts"][0]["directives"]}
lat = sorted(int(t) - issued[int(s)] for _, s, t in
             (l.split() for l in open(sys.argv[2])) if int(s) in issued)
if not lat:
    print("no samples")
else:
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print("decision -> visible in the rank's control file: median %.0f ms, "
          "p99 %d ms, max %d ms (%d samples; goal p99 <= 50 ms)"
          % (statistics.median(lat), p99, lat[-1], len(lat)))
PY

echo "# 3. real GC, 8 ranks, $STEPS steps, $ROUNDS rounds"
: >auto.txt; : >sync.txt
for r in $(seq 1 "$ROUNDS"); do
    id=$(run 2 4 -- realgc --steps "$STEPS" --step-time 0) && {
        steps_per_s "$id" >>auto.txt
        [ "$r" = 1 ] && for k in 0 1 2 3 4 5 6 7; do
            ls_cli logs "$id" --rank $k | grep '^gc_ms'; done | head -3; }
    id=$(run 2 4 --gc-every 20steps -- realgc --steps "$STEPS" --step-time 0) &&
        steps_per_s "$id" >>sync.txt
done
AU=$(median <auto.txt); SY=$(median <sync.txt)
echo "automatic GC            $AU steps/s"
echo "lockstep --gc-every 20steps $SY steps/s"
if [ -n "$AU" ] && [ -n "$SY" ]; then
    "$PY" -c "print('ratio %.3f' % ($SY / $AU))"
else
    echo "ratio: not computed, some runs failed (see above)"
fi
