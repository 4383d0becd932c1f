#!/bin/bash
# recovery.sh - how fast lockstep recovers from a failure, and what that
# costs a long run. Prints figures; asserts nothing.
#
#   bench/recovery.sh [--trials N] [--ettr-minutes M] [--loss-only]
#                     [--whole-node] [--unix] [--load N] [--settle S]
#
# Runs real daemons on loopback (scheduler + 4 agents, production timing
# defaults: heartbeat 1 s, node timeout 10 s, lease 5 s) through the test
# harness, which also cleans every process up by PID.
#
# 1. Rank crash: a 2x2 job of shell ranks; kill -9 one rank; measure from
#    the kill to every rank of the next attempt running, split into
#    detection (kill -> scheduler decided), teardown (-> every node
#    released the attempt) and start (-> every rank of the next attempt
#    running, including the restart backoff). Median over N trials, each on
#    a fresh job (so backoff does not grow across trials).
# 2. Node loss: the same with kill -9 of the agent of node rank 1 (the
#    agent is restarted after each trial so the cluster keeps 4 nodes),
#    and kill -> the node LOST; medians and p99 (nearest rank). The
#    supervisors of an agent that dies kill its ranks after the orphan
#    grace (2.5 s) and tell the scheduler, which replaces the job then
#    (docs/fault-tolerance.md "An agent that dies"). --whole-node kills
#    the node's supervisors and ranks too (a machine that is gone: the
#    node timeout and the witnesses' gate decide). --loss-only runs this
#    part alone; LOCKSTEP_BUILD=<other build> measures another build.
#    Agents reach the scheduler over TCP, as in production (--unix: over
#    its Unix socket, where supervisors have no address to tell).
#    --load N adds N simulated agents (bench/sim.c, 2,500 a process, at
#    the 1 s heartbeat, each pinging every 300 ms as a busy agent does) to
#    the same scheduler, every one taken by a job the real agents cannot
#    run, so the figures are under that load; it prints how many of them
#    were LOST meanwhile (false positives). --settle S waits S seconds
#    once the load runs before the first trial (default 0).
# 3. With --ettr-minutes M (e.g. 10): a PyTorch DDP run of M minutes with
#    a rank killed every minute; prints the job's effective training time
#    ratio as lockstep computed it, and checks it against the ratio
#    recomputed here from the attempt timeline.
#
# The baseline each figure is read against is printed beside it: the
# heartbeat interval and node timeout the detection cannot beat.
set -u
TRIALS=10
ETTR_MIN=0
LOSS_ONLY=0
WHOLE=0
UNIX=0
LOAD=0
SETTLE=0
while [ $# -gt 0 ]; do
    case $1 in
    --trials) TRIALS=$2; shift 2 ;;
    --ettr-minutes) ETTR_MIN=$2; shift 2 ;;
    --loss-only) LOSS_ONLY=1; shift ;;
    --whole-node) WHOLE=1; shift ;;
    --unix) UNIX=1; shift ;;
    --load) LOAD=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    *) echo "usage: bench/recovery.sh [--trials N] [--ettr-minutes M] [--loss-only] [--whole-node] [--unix] [--load N] [--settle S]" >&2
       exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"

HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000 KILL_GRACE_MS=10000
start_scheduler >/dev/null
[ "$UNIX" = 1 ] || export AGENT_SERVER=$LOCKSTEP_URL
for n in n1 n2 n3 n4; do start_agent $n; done
wait_nodes_up 4 || { echo "cluster did not come up"; exit 1; }
CLUSTER_UP_MS=$(date +%s%3N)
if [ "$LOAD" -gt 0 ]; then
    ulimit -n "$(ulimit -Hn)" 2>/dev/null
    start_sims "$LOAD" 2500 load --gpus 8 --cpus 64 --rank-time 360000000 \
        --report-ms 60000
    wait_nodes_up $((LOAD + 4)) 300 || { echo "the simulated agents did not come up"; exit 1; }
    # Every simulated node taken whole (8 GPUs, 64 CPUs: no real agent
    # has either), so the trials' jobs run on the real agents only.
    load_id=$(submit_id --nodes "$LOAD" --gpus-per-node 8 --cpus-per-rank 64 \
        --max-infra-restarts 1000 -- sim)
    wait_job_state "$load_id" RUNNING 300 >/dev/null ||
        { echo "the load job did not start"; exit 1; }
    sleep "$SETTLE"
fi

now_ms() { date +%s%3N; }

# No placement on the real agents (n1..n4; the simulated ones, sim*, stay
# taken by the load job).
nodes_idle() {
    [ "$(ls_cli nodes --json | jget 'sum(len(n["jobs"]) for n in j if n["name"][0] == "n")')" = 0 ]
}

# breakdown JOB T0: "total detection teardown start" in ms for attempt 1's
# failure at T0 (ms) and attempt 2 reaching RUNNING.
breakdown() {
    ls_cli show "$1" --json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
t0 = int(sys.argv[1])
a1, a2 = j["attempts"][0], j["attempts"][1]
det, rel, run = a1["detected_ms"], a1["released_ms"], a2["running_ms"]
print(run - t0, det - t0, rel - det, run - rel)
' "$2"
}

# wait_second_running JOB: attempt 2 exists and reports every rank running.
second_running() {
    [ "$(job_json "$1" 'len(j["attempts"]) >= 2 and j["attempts"][1]["running_ms"] > 0')" = True ]
}

# Every trial blames a node; three trials on the same node exclude it
# (UNHEALTHY), as designed. Between trials the benchmark puts excluded
# nodes back, the way an operator would after injected faults.
restore_nodes() {
    local n
    for n in $(ls_cli nodes --json | jget '" ".join(x["name"] for x in j if x["state"] == "UNHEALTHY")'); do
        ls_cli uncordon "$n" --reason "benchmark: fault was injected" >/dev/null
    done
}

summary() { # LABEL FILE
    "$PY" - "$1" "$2" <<'PY'
import math, statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[2]) if l.strip()]
if not rows:
    print("%-11s no successful trial" % sys.argv[1]); sys.exit()
med = [statistics.median(c) for c in zip(*rows)]
def p99(i):
    v = sorted(r[i] for r in rows)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]
line = ("%-11s n=%-2d total %7.0f ms  (detection %6.0f, teardown %6.0f, "
        "start %6.0f)  max total %6.0f ms"
        % (sys.argv[1], len(rows), med[0], med[1], med[2], med[3],
           max(r[0] for r in rows)))
if len(rows[0]) > 4:
    line += ("\n%-11s total p50 %6.0f p99 %6.0f ms; LOST p50 %6.0f p99 "
             "%6.0f ms" % ("", med[0], p99(0), med[4], p99(4)))
print(line)
PY
}

echo "# recovery: failure injected -> every rank of the next attempt running"
echo "# heartbeat ${HEARTBEAT_MS} ms, node timeout ${NODE_TIMEOUT_MS} ms, lease ${LEASE_MS} ms, $(nproc) cores"
echo "# load: $LOAD simulated agents besides the 4 real ones$([ "$SETTLE" != 0 ] && echo ", the trials from $SETTLE s after the load runs")"
echo "# agents over $([ "$UNIX" = 1 ] && echo "the Unix socket" || echo TCP); node loss kills $([ "$WHOLE" = 1 ] && echo "the agent, its supervisors and ranks" || echo "the agent")"

: >"$TEST_DIR/crash.txt"
for i in $(seq 1 "$TRIALS"); do
    [ "$LOSS_ONLY" = 1 ] && break
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 1 -- sleep 1000)
    wait_job_state "$id" RUNNING 30 >/dev/null 2>&1 || continue
    pid=$(rank_pid "$id" 3)
    t0=$(now_ms)
    kill -9 "$pid"
    if wait_until 30 second_running "$id"; then
        breakdown "$id" "$t0" >>"$TEST_DIR/crash.txt"
    fi
    ls_cli cancel "$id" >/dev/null
    wait_until 30 nodes_idle
    restore_nodes
done
[ "$LOSS_ONLY" = 1 ] || summary "rank crash" "$TEST_DIR/crash.txt"

: >"$TEST_DIR/loss.txt"
# Nothing is replaced until a majority of the victim's witnesses have
# been in contact for the node timeout (docs/fault-tolerance.md
# "Scheduler outages"): a cluster younger than that would measure its
# age. Each trial restarts one agent; the others keep the majority.
while [ $(($(now_ms) - CLUSTER_UP_MS)) -lt $((NODE_TIMEOUT_MS + 1000)) ]; do
    sleep 0.5
done
for i in $(seq 1 "$TRIALS"); do
    id=$(submit_id --nodes 2 --ranks-per-node 2 -- sleep 1000)
    wait_job_state "$id" RUNNING 30 >/dev/null 2>&1 || continue
    victim=$(job_json "$id" 'j["attempts"][0]["nodes"][1]["node"]')
    t0=$(now_ms)
    kill_agent "$victim"
    if [ "$WHOLE" = 1 ]; then
        # everything of the node: its supervisors (tagged) and ranks
        for p in $(tagged_pids); do
            tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -q "agent-$victim/" &&
                kill -9 "$p" 2>/dev/null
        done
        for p in $(job_pids "$id" "$victim"); do kill -9 "$p" 2>/dev/null; done
    fi
    if wait_until 60 second_running "$id"; then
        lost=$(ls_cli node "$victim" --json |
            jget "min((e[\"time_ms\"] for e in j[\"events\"] if e[\"kind\"] == \"node_lost\" and e[\"time_ms\"] >= $t0), default=-1)")
        # -1: no node_lost event of this trial (events list not there yet)
        if [ "$lost" != -1 ]; then
            row="$(breakdown "$id" "$t0") $((lost - t0))"
            echo "$row" >>"$TEST_DIR/loss.txt"
            echo "# trial $i: victim $victim, total detection teardown start LOST (ms): $row"
        fi
    fi
    ls_cli cancel "$id" >/dev/null
    start_agent "$victim"
    # Back from LOST; a node lost under 3 jobs is (rightly) excluded as
    # UNHEALTHY: the benchmark puts it back as an operator would.
    wait_for 30 "test \$(node_state $victim) != LOST"
    if [ "$(node_state "$victim")" != UP ]; then
        ls_cli uncordon "$victim" --reason "benchmark: agent restarted" >/dev/null
    fi
    restore_nodes
    wait_for 30 "test \$(node_state $victim) = UP"
    wait_until 30 nodes_idle
done
summary "node loss" "$TEST_DIR/loss.txt"
if [ "$LOAD" -gt 0 ]; then
    echo "# simulated nodes LOST during the trials (false positives): $(db_query \
        "SELECT count(*) FROM events WHERE kind = 'node_lost' AND subject LIKE 'node/sim%'")"
    grep -h "^sim:" "$TEST_DIR"/sim-*.log | tail -n "$(ls "$TEST_DIR"/sim-*.log | wc -l)"
fi

if [ "$ETTR_MIN" -gt 0 ]; then
    echo "# ETTR: ${ETTR_MIN}-minute DDP run (2x2, gloo), a rank killed every minute"
    steps=$((ETTR_MIN * 60 * 4))
    id=$(ddp_submit ettr --max-restarts $((ETTR_MIN + 5)) -- --steps $steps \
        --ckpt-every 40 --step-time 0.25)
    wait_job_state "$id" RUNNING 120 >/dev/null
    start=$(now_ms)
    while [ "$(job_state "$id")" != SUCCEEDED ] &&
          [ "$(job_state "$id")" != FAILED ]; do
        sleep 60
        pid=$(rank_pid "$id" $((RANDOM % 4)))
        [ -n "$pid" ] && kill -9 "$pid"
    done
    ls_cli show "$id" --json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
g = j["goodput"]
print("state %s after %d attempts; wall %.0f s, productive %.0f s, lost %.0f s, "
      "recovery %.0f s; ETTR %.3f (lockstep)"
      % (j["state"], len(j["attempts"]), g["wall_ms"] / 1e3,
         g["productive_ms"] / 1e3, g["lost_ms"] / 1e3, g["recovery_ms"] / 1e3,
         g["ettr"]))
a = j["attempts"]
recov = sum(max(0, a[k + 1]["running_ms"] - a[k]["failed_ms"])
            for k in range(len(a) - 1))
print("recomputed here: recovery %.0f s over %d failures (%.1f s each)"
      % (recov / 1e3, len(a) - 1, recov / 1e3 / max(1, len(a) - 1)))
'
fi
