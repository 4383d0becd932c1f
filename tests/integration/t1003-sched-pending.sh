#!/bin/bash
# t1003: a job needing more nodes than exist, submitted to wait for them
# (--wait-for-nodes; without it the submit is refused: t1004), stays
# PENDING with a reason that says what is missing; it starts once enough
# agents join.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

test_expect_success 'one node is up' 'wait_nodes_up 1'

test_expect_success 'a 3-node job stays PENDING with a reason' '
    id=$(submit_id --wait-for-nodes --nodes 3 --gpus-per-node 2 -- true) &&
    echo $id >job &&
    sleep 1 &&
    test "$(job_state $id)" = PENDING &&
    ls_cli show $id --json | jget "j[\"reason\"]" >reason &&
    cat reason &&
    grep -q "3 nodes" reason && grep -q "the cluster has 1 node$" reason
'

test_expect_success 'the reason shows in jobs and show output' '
    ls_cli jobs | grep -q "3 nodes" &&
    ls_cli show $(cat job) | grep -q "3 nodes"
'

test_expect_success 'a job that fits is not blocked by it' '
    id=$(submit_id --nodes 1 -- true) && wait_job_state $id SUCCEEDED 20
'

test_expect_success 'it starts when two more agents join' '
    start_agent n2 && start_agent n3 &&
    wait_job_state $(cat job) SUCCEEDED 30
'

test_expect_success 'a job asking for more GPUs than any node has says so' '
    id=$(submit_id --wait-for-nodes --gpus-per-node 16 -- true) &&
    sleep 0.5 &&
    test "$(job_state $id)" = PENDING &&
    ls_cli show $id --json | jget "j[\"reason\"]" | grep -qi "gpu"
'

test_done
