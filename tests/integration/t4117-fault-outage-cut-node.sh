#!/bin/bash
# t4117: the scheduler returns while one node is still cut off (a proxy
# between its agent and the scheduler). Through the outage every node
# keeps its ranks (their witnesses lost the scheduler too); after the
# return the cut-off node's witnesses reach the scheduler again, so its
# own supervisors fence its ranks, and only that node is declared LOST,
# after the grace, with its ranks dead before the replacement attempt
# starts. And a node that can reach neither the scheduler nor its
# witnesses fences its ranks (docs/fault-tolerance.md "Scheduler
# outages").
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
start_proxy
start_agent n1
start_agent n2
AGENT_SERVER=$PROXY_URL start_agent n3

# placed_on JOB ATTEMPT NODE: that attempt of JOB has NODE.
placed_on() {
    job_json "$1" "[n[\"node\"] for n in j[\"attempts\"][$2][\"nodes\"]]" |
        grep -q "\"$3\""
}

# all_dead PIDFILE: none of the pids in the file is alive.
all_dead() {
    local p
    for p in $(cat "$1"); do kill -0 "$p" 2>/dev/null && return 1; done
    return 0
}

test_expect_success 'three nodes, n3 behind the proxy; a job on n3 and n1' '
    wait_nodes_up 3 &&
    ls_cli cordon n2 --reason "keep the job on n1+n3" &&
    id=$(submit_id --name cut --nodes 2 --max-infra-restarts 5 -- sh -c \
        "echo start \$RANK attempt \$LOCKSTEP_ATTEMPT; sleep 40") &&
    echo $id >job && watch_attempts $id &&
    wait_job_state $id RUNNING 30 && placed_on $id 0 n3 &&
    ls_cli uncordon n2 &&
    wait_for 10 "job_nprocs_ge $id 2" &&
    job_pids $id n3 >pids.n3 && test -s pids.n3 &&
    job_pids $id n1 >pids.n1 && test -s pids.n1
'

test_expect_success 'SIGKILL lockstepd and cut n3 off; every rank outlives four leases' '
    kill_scheduler && proxy_block &&
    sleep 6 &&
    all_alive pids.n3 && all_alive pids.n1
'

test_expect_success 'lockstepd returns; n3 is still cut off: its ranks are fenced' '
    date +%s%3N >back_at && start_scheduler &&
    wait_for 10 "all_dead pids.n3" && date +%s%3N >n3_dead_at &&
    echo "n3 ranks dead $(( $(cat n3_dead_at) - $(cat back_at) )) ms after the return" &&
    grep -q "\"fenced\": *true" agent-n3/state/jobs/$(cat job).1/status.json
'

test_expect_success 'only n3 is declared LOST, after the grace; the job moves without it' '
    wait_for 20 "test \$(node_state n3) = LOST" &&
    test "$(node_state n1)" != LOST && test "$(node_state n2)" != LOST &&
    wait_for 30 "test \$(job_json $(cat job) \"len(j[\\\"attempts\\\"])\") = 2" &&
    lost_ms=$(ls_cli node n3 --json |
        jget "[e[\"time_ms\"] for e in j[\"events\"] if e[\"kind\"] == \"node_lost\"][-1]") &&
    echo "n3 lost $((lost_ms - $(cat back_at))) ms after the return" &&
    test $((lost_ms - $(cat back_at))) -ge $NODE_TIMEOUT_MS &&
    wait_for 30 "test \$(job_json $(cat job) \"j[\\\"attempts\\\"][-1][\\\"state\\\"]\") = RUNNING" &&
    ! placed_on $(cat job) 1 n3 &&
    all_dead pids.n3 &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_lost &&
    stop_watch && one_attempt_at_a_time $(cat job) &&
    ls_cli cancel $(cat job)
'

test_expect_success 'heal; a job on n3 alone' '
    proxy_heal &&
    wait_for 20 "test \$(node_state n3) = UP" &&
    wait_until 20 nodes_idle &&
    ls_cli cordon n1 --reason "keep the job on n3" &&
    ls_cli cordon n2 --reason "keep the job on n3" &&
    id=$(submit_id --name alone --nodes 1 -- sh -c "sleep 40") &&
    echo $id >job2 &&
    wait_job_state $id RUNNING 30 && placed_on $id 0 n3 &&
    wait_for 10 "job_nprocs_ge $id 1" &&
    job_pids $id n3 >pids2.n3
'

test_expect_success 'n3 reaches neither the scheduler nor its witnesses: it fences' '
    kill -STOP ${AGENT_PID[n1]} ${AGENT_PID[n2]} &&
    kill_scheduler && date +%s%3N >down_at &&
    wait_for 10 "all_dead pids2.n3" && date +%s%3N >dead_at &&
    echo "n3 ranks dead $(( $(cat dead_at) - $(cat down_at) )) ms after the outage began" &&
    grep -q "\"fenced\": *true" agent-n3/state/jobs/$(cat job2).1/status.json &&
    grep -q "leases not extended" agent-n3/log
'

test_expect_success 'everything returns' '
    kill -CONT ${AGENT_PID[n1]} ${AGENT_PID[n2]} &&
    start_scheduler &&
    wait_for 30 "test \$(job_json $(cat job2) \"len(j[\\\"attempts\\\"])\") -ge 1" &&
    ls_cli cancel $(cat job2)
'

test_done
