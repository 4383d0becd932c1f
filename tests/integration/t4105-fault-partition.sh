#!/bin/bash
# t4105: fencing. (a) the agent's traffic to the scheduler is cut (a proxy
# the test controls) while its ranks keep running; (b) the agent process
# is SIGSTOPped; in both, the ranks on that node are killed by their
# supervisor's lease before the next attempt starts, and a checkpoint
# commit from the old attempt is rejected. (c) the agent is killed with
# kill -9 while its ranks run and restarted at once: it re-adopts the job,
# which is still valid, and the ranks' exit codes reach the scheduler.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
start_proxy
start_agent n1
AGENT_SERVER=$PROXY_URL start_agent n2
start_agent n3

# A 2-node job of plain shell ranks that run long enough to be cut off.
long_job() {
    submit_id --name "$1" --nodes 2 --max-infra-restarts 5 -- sh -c \
        "echo start \$RANK attempt \$LOCKSTEP_ATTEMPT; sleep ${2:-8}; echo done \$RANK"
}

# placed_on JOB NODE: attempt 1 of JOB has NODE.
placed_on() {
    job_json "$1" "[n[\"node\"] for n in j[\"attempts\"][0][\"nodes\"]]" | grep -q "\"$2\""
}

test_expect_success 'three nodes, n2 behind the proxy' '
    wait_nodes_up 3
'

test_expect_success '(a) a job runs on n2 and one other node' '
    ls_cli cordon n3 --reason "keep the test on n1+n2" &&
    id=$(long_job part 30) && echo $id >job_a && watch_attempts $id &&
    wait_job_state $id RUNNING 30 && placed_on $id n2 &&
    ls_cli uncordon n3 &&
    wait_for 10 "job_nprocs_ge $id 2"
'

test_expect_success '(a) cut n2 off: its ranks die by lease, the job moves' '
    proxy_block && date +%s%3N >cut_at &&
    wait_for 10 "job_gone $(cat job_a) n2" && date +%s%3N >dead_at &&
    echo "ranks on n2 dead $(( $(cat dead_at) - $(cat cut_at) )) ms after the cut" &&
    wait_for 15 "test \$(node_state n2) = LOST" &&
    wait_for 20 "test \$(job_json $(cat job_a) \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_for 20 "test \$(job_json $(cat job_a) \"j[\\\"attempts\\\"][-1][\\\"state\\\"]\") = RUNNING" &&
    test "$(job_json $(cat job_a) "len(j[\"attempts\"])")" = 2 &&
    ! job_json $(cat job_a) "[n[\"node\"] for n in j[\"attempts\"][1][\"nodes\"]]" | grep -q n2
'

test_expect_success '(a) a checkpoint commit from the old attempt is rejected' '
    code=$(curl -s -o commit.json -w "%{http_code}" --unix-socket "$LOCKSTEP_SERVER" \
        -d "{\"version\":1,\"attempt\":1,\"step\":10,\"rank\":0}" \
        http://x/v1/jobs/$(cat job_a)/checkpoints) &&
    cat commit.json && test "$code" = 409 &&
    jget "j[\"error\"][\"code\"]" <commit.json | grep -qx stale_attempt &&
    db_events job/$(cat job_a) | grep -q stale_attempt_rejected
'

test_expect_success '(a) the healed node comes back; only one attempt ever ran at once' '
    proxy_heal &&
    wait_for 20 "test \$(node_state n2) = UP" &&
    ls_cli cancel $(cat job_a) && stop_watch &&
    one_attempt_at_a_time $(cat job_a)
'

test_expect_success '(b) a job runs on n2; SIGSTOP its agent' '
    wait_until 20 nodes_idle &&
    ls_cli cordon n3 --reason "keep the test on n1+n2" &&
    id=$(long_job frozen 30) && echo $id >job_b && watch_attempts $id &&
    wait_job_state $id RUNNING 30 && placed_on $id n2 &&
    ls_cli uncordon n3 &&
    kill -STOP ${AGENT_PID[n2]}
'

test_expect_success '(b) the frozen agent s ranks die by lease; the job moves' '
    wait_for 10 "job_gone $(cat job_b) n2" &&
    wait_for 20 "test \$(job_json $(cat job_b) \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_for 20 "test \$(job_json $(cat job_b) \"j[\\\"attempts\\\"][-1][\\\"state\\\"]\") = RUNNING"
'

test_expect_success '(b) the thawed agent rejoins and runs nothing stale' '
    kill -CONT ${AGENT_PID[n2]} &&
    wait_for 20 "test \$(node_state n2) = UP" &&
    test -z "$(attempt_pids $(cat job_b) 1)" &&
    code=$(curl -s -o /dev/null -w "%{http_code}" --unix-socket "$LOCKSTEP_SERVER" \
        -d "{\"version\":1,\"attempt\":1,\"step\":1,\"rank\":1}" \
        http://x/v1/jobs/$(cat job_b)/checkpoints) && test "$code" = 409 &&
    ls_cli cancel $(cat job_b) && stop_watch &&
    one_attempt_at_a_time $(cat job_b)
'

test_expect_success '(c) kill -9 the agent under a running job and restart it' '
    wait_until 20 nodes_idle &&
    id=$(submit_id --name adopt --nodes 3 -- sh -c \
        "sleep 4; if [ \$RANK = 2 ]; then exit 0; fi; exit 0") && echo $id >job_c &&
    wait_job_state $id RUNNING 30 &&
    node=$(job_json $id "j[\"attempts\"][0][\"nodes\"][2][\"node\"]") && echo $node >victim_c &&
    kill_agent $node &&
    if [ $node = n2 ]; then AGENT_SERVER=$PROXY_URL start_agent $node; else start_agent $node; fi
'

test_expect_success '(c) the job is re-adopted and ends SUCCEEDED in one attempt' '
    wait_job_state $(cat job_c) SUCCEEDED 30 &&
    test "$(job_json $(cat job_c) "len(j[\"attempts\"])")" = 1 &&
    test "$(job_json $(cat job_c) "sorted(set(r[\"exit_code\"] for r in j[\"attempts\"][0][\"ranks\"]))")" = "[0]" &&
    grep -qi "adopt" agent-$(cat victim_c)/log
'

test_expect_success '(c) a re-adopted rank s failure keeps its exit code' '
    id=$(submit_id --name adopt2 --nodes 1 --max-restarts 0 -- sh -c "sleep 3; exit 7") &&
    wait_job_state $id RUNNING 30 &&
    node=$(job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]") &&
    kill_agent $node &&
    if [ $node = n2 ]; then AGENT_SERVER=$PROXY_URL start_agent $node; else start_agent $node; fi &&
    wait_job_state $id FAILED 30 &&
    test "$(job_json $id "j[\"exit_code\"]")" = 7
'

test_done
