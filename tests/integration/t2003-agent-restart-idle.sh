#!/bin/bash
# t2003: kill -9 of an idle agent, then restart it: it re-registers (same
# node, new agent process) and gets work again.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

test_expect_success 'node comes up' 'wait_nodes_up 1'

test_expect_success 'a job runs before the kill' '
    id=$(submit_id -- true) && wait_job_state $id SUCCEEDED 20
'

test_expect_success 'kill -9 the idle agent and restart it' '
    kill_agent n1 &&
    start_agent n1 &&
    wait_nodes_up 1 &&
    test "$(ls_cli nodes --json | jget "len(j)")" = 1
'

test_expect_success 'the restarted agent gets work again' '
    id=$(submit_id --ranks-per-node 2 -- sh -c "echo rank \$RANK") &&
    wait_job_state $id SUCCEEDED 20 &&
    ls_cli logs $id --rank 1 | grep -qx "rank 1"
'

test_expect_success 'a node whose agent is gone becomes LOST after the timeout' '
    kill_agent n1 &&
    wait_for 20 "test \$(node_state n1) = LOST"
'

test_expect_success 'it comes back UP when the agent returns' '
    start_agent n1 &&
    wait_for 20 "test \$(node_state n1) = UP" &&
    ls_cli node n1 --json | jget "[e[\"kind\"] for e in j[\"events\"]]" >kinds &&
    cat kinds
'

test_done
