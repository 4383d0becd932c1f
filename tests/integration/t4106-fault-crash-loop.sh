#!/bin/bash
# t4106: a script that always crashes at step 5 is marked FAILED as a
# deterministic failure after a small number of attempts, and the nodes it
# ran on are not blamed.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 4

test_expect_success 'a job that always crashes at step 5' '
    wait_nodes_up 4 &&
    id=$(ddp_submit loop --max-restarts 10 -- --steps 40 --always-crash-at 5 \
        --sdk) && echo $id >job &&
    wait_job_state $id FAILED 120
'

test_expect_success 'it stopped after a few attempts, well before its budget' '
    n=$(job_json $(cat job) "len(j[\"attempts\"])") && echo "$n attempts" &&
    test "$n" -ge 2 && test "$n" -le 3
'

test_expect_success 'the reason says it is the job s own deterministic failure' '
    job_json $(cat job) "j[\"reason\"]" | tee reason &&
    grep -qi "deterministic" reason
'

test_expect_success 'the attempts ran on different nodes' '
    job_json $(cat job) "sorted(set(n[\"node\"] for a in j[\"attempts\"] for n in a[\"nodes\"]))" >nodes &&
    cat nodes && test "$(jget "len(j)" <nodes)" -ge 3
'

test_expect_success 'no node was blamed or excluded' '
    test "$(nodes_up_count)" = 4 &&
    test "$(db_query "SELECT count(*) FROM blame WHERE withdrawn = 0")" = 0
'

test_done
