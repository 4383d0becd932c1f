#!/bin/bash
# t4107: a node that fails three different jobs in a row is excluded, with
# the evidence in its events; the other nodes are not. Each job recovers on
# healthy nodes. The exclusion does not reverse by itself; an operator
# uncordons the node.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
# n2 has the fewest GPUs, so best-fit placement puts GPU jobs there first.
start_agent n1
start_agent n2 -o gpus=0
start_agent n3
start_agent n4

# A rank that dies on n2 (bad hardware), and works everywhere else.
BAD='if [ "$LOCKSTEP_NODE" = n2 ]; then echo "Xid 79: GPU has fallen off the bus" >&2; exit 1; fi; sleep 1'

test_expect_success 'three different jobs each fail on n2 and recover' '
    wait_nodes_up 4 &&
    for k in 1 2 3; do
        id=$(submit_id --name bad-$k --nodes 2 --gpus-per-node 1 -- sh -c "$BAD") &&
        wait_job_state $id SUCCEEDED 60 &&
        job_json $id "[n[\"node\"] for n in j[\"attempts\"][0][\"nodes\"]]" | grep -q n2 &&
        job_json $id "[n[\"node\"] for n in j[\"attempts\"][-1][\"nodes\"]]" >last &&
        ! grep -q n2 last || return 1
    done
'

test_expect_success 'n2 is excluded, with the evidence' '
    test "$(node_state n2)" = UNHEALTHY &&
    ls_cli node n2 --json >n2.json &&
    jget "j[\"reason\"]" <n2.json | tee reason && grep -q "3" reason &&
    jget "[e[\"kind\"] for e in j[\"events\"]]" <n2.json | grep -q node_excluded
'

test_expect_success 'the other nodes are not' '
    for n in n1 n3 n4; do test "$(node_state $n)" = UP || return 1; done
'

test_expect_success 'no new work goes to n2' '
    id=$(submit_id --nodes 3 --gpus-per-node 1 -- true) &&
    wait_job_state $id SUCCEEDED 30 &&
    ! job_json $id "[n[\"node\"] for n in j[\"attempts\"][0][\"nodes\"]]" | grep -q n2
'

test_expect_success 'the exclusion stays until an operator uncordons' '
    sleep 2 && test "$(node_state n2)" = UNHEALTHY &&
    ls_cli uncordon n2 --reason "GPU reseated" &&
    test "$(node_state n2)" = UP
'

test_expect_success 'cordon --evict moves a running job elsewhere' '
    id=$(submit_id --nodes 2 -- sleep 30) && wait_job_state $id RUNNING 30 &&
    node=$(job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]") &&
    ls_cli cordon $node --reason "maintenance" --evict &&
    wait_for 20 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_excluded &&
    ! job_json $id "[n[\"node\"] for n in j[\"attempts\"][1][\"nodes\"]]" | grep -q "\"$node\"" &&
    ls_cli cancel $id
'

test_done
