#!/bin/bash
# t4155: a stall of the scheduler is not the nodes' silence. lockstepd is
# stopped (SIGSTOP) under a running 3-node job for 8 s, over twice the
# node timeout (3 s here), and continued. Its loop made no progress
# meanwhile and heard nobody, so no node's silence counts that time
# (docs/fault-tolerance.md "Scheduler stalls"): no node is declared LOST,
# the job stays on attempt 1 with its ranks alive (the agents' witnesses
# kept their leases, as in an outage), and it ends SUCCEEDED without a
# restart. Before the fix every node was LOST at the first tick after
# SIGCONT.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 3
STALL_S=8

metric() { # NAME: its value in GET /metrics
    curl -s "$LOCKSTEP_URL/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

stalled_ge() { # SECONDS: the stall counted is at least that long
    "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' \
        "$(metric lockstep_loop_stalled_seconds_total)" "$1"
}

lost_events() {
    db_query "SELECT count(*) FROM events WHERE kind = 'node_lost'"
}

test_expect_success 'a 3-node job runs' '
    wait_nodes_up 3 &&
    id=$(submit_id --name stall --nodes 3 -- sh -c \
        "echo up; while [ ! -e $TEST_DIR/done ]; do sleep 0.2; done") &&
    echo "$id" >job && wait_job_state "$id" RUNNING 60 &&
    wait_until 30 job_nprocs_ge "$id" 3 &&
    job_pids "$id" | sort >pids.before && cat pids.before &&
    test "$(lost_events)" = 0
'

test_expect_success "SIGSTOP lockstepd for ${STALL_S} s (over twice node_timeout_ms), then SIGCONT" '
    kill -STOP "$SCHED_PID" && sleep "$STALL_S"; rc=$?;
    kill -CONT "$SCHED_PID" && test $rc = 0 &&
    : "the tick that follows saw the stall (it looks at silences after)" &&
    wait_for 30 "stalled_ge $((STALL_S - 1))" &&
    metric lockstep_loop_stalled_seconds_total &&
    grep "loop stalled for" sched/log
'

test_expect_success 'no node was declared LOST, none is now' '
    wait_until 30 nodes_up_is 3 &&
    ls_cli nodes &&
    test "$(lost_events)" = 0 &&
    ! grep "lost: no status" sched/log
'

test_expect_success 'the job ran on, on its first attempt, its ranks alive' '
    job_state_is $(cat job) RUNNING &&
    all_alive pids.before &&
    ! grep -q "fenced: lease expired" agent-n*/log &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 1
'

test_expect_success 'it ends SUCCEEDED without a restart' '
    touch done &&
    wait_job_state $(cat job) SUCCEEDED 60 &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 1 &&
    test "$(job_json $(cat job) "j[\"infra_restarts\"]")" = 0 &&
    test "$(job_json $(cat job) "j[\"restarts\"]")" = 0 &&
    test "$(lost_events)" = 0
'

test_done
