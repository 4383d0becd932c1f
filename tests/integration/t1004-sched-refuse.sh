#!/bin/bash
# t1004: a job that no set of registered nodes could ever hold is refused
# at submit (422 unsatisfiable) with a reason naming what is really short:
# the node count, CPUs, GPUs or memory. With --wait-for-nodes it is
# accepted and pends with the same reason, and runs once nodes join.
# Nothing is refused while no node is registered; cordoned nodes count as
# capacity that may come back.
. "$(dirname "$0")/../lib/harness.sh"

# node_timeout_ms (the start-up grace) of 3 s.
fault_timeouts
start_scheduler

# post BODY -> "STATUS CODE MESSAGE" (POST /v1/jobs over the Unix socket).
post_job() {
    local code
    code=$(curl -s --unix-socket "$LOCKSTEP_SERVER" -o "$TEST_DIR/.body" \
        -w "%{http_code}" -H "Content-Type: application/json" \
        --data-binary "$1" "http://lockstep/v1/jobs")
    echo "$code $(jget "j[\"error\"][\"code\"] + \" \" + j[\"error\"][\"message\"]" <"$TEST_DIR/.body")"
}

# refused ARGS...: the submit fails; its message (without the CLI's
# prefix) goes to refusal, the reason proper (what is short) to short.
refused() {
    ! ls_cli submit "$@" >out 2>err &&
        cat err &&
        ! test -s out &&
        sed -n "s/^lockstep submit: this job can never run on this cluster: //p" err >refusal &&
        test -s refusal &&
        sed "s/; submit it with .*//" refusal >short &&
        grep -q -- "--wait-for-nodes" refusal
}

jobs_count() {
    ls_cli jobs --all --json | jget 'len(j)'
}

test_expect_success 'with no node registered, nothing is refused' '
    sleep 3.5 &&
    id=$(submit_id --nodes 5 -- true) &&
    test "$(job_state $id)" = PENDING &&
    ls_cli cancel $id &&
    test "$(jobs_count)" = 1
'

test_expect_success 'four 2-CPU nodes register' '
    for n in n1 n2 n3 n4; do start_agent $n -o cpus=2 || return 1; done &&
    wait_nodes_up 4
'

test_expect_success 'a 5-node job is refused: the node count is short' '
    refused --nodes 5 -- true &&
    test "$(cat short)" = "needs 5 nodes with 1 CPU each; the cluster has 4 nodes"
'

test_expect_success 'the API answers 422 unsatisfiable' '
    post_job "{\"version\":1,\"argv\":[\"true\"],\"nodes\":5}" >reply &&
    cat reply &&
    grep -q "^422 unsatisfiable this job can never run on this cluster: needs 5 nodes" reply
'

test_expect_success '10 TB of memory per node is refused naming memory' '
    refused --memory-mb 10485760 -- true &&
    grep -q "none with at least 10485760 MB memory (the most any has is 16384 MB)" short &&
    ! grep -q "GPU" short
'

test_expect_success 'CPUs short, GPUs not: the reason names CPUs' '
    refused --ranks-per-node 4 --gpus-per-node 1 -- true &&
    test "$(cat short)" = "needs 1 node with 1 GPU and 4 CPUs; the cluster has 4 nodes, none with at least 4 CPUs (the most any has is 2)"
'

test_expect_success 'GPUs short: the reason names GPUs' '
    refused --gpus-per-node 8 -- true &&
    grep -q "none with at least 8 GPUs (the most any has is 4)" short &&
    ! grep -q "at least 1 CPU" short
'

test_expect_success 'no refused job was created' '
    test "$(jobs_count)" = 1
'

test_expect_success 'a job that fits the cluster is accepted and runs' '
    id=$(submit_id --nodes 4 --ranks-per-node 2 -- true) &&
    wait_job_state $id SUCCEEDED 30
'

test_expect_success 'a cordoned node counts: a 4-node job is accepted and waits' '
    ls_cli cordon n4 --reason "maintenance" &&
    id=$(submit_id --nodes 4 -- true) && echo $id >cordoned &&
    sleep 1 &&
    test "$(job_state $id)" = PENDING &&
    ls_cli show $id --json | jget "j[\"reason\"]" >reason && cat reason &&
    test "$(cat reason)" = "needs 4 nodes with 1 CPU each; the cluster has 3 schedulable nodes (1 more takes no work now)" &&
    ls_cli uncordon n4 &&
    wait_job_state $id SUCCEEDED 30
'

test_expect_success 'with --wait-for-nodes it is accepted and pends with the same reason' '
    refused --nodes 5 -- true &&
    id=$(submit_id --wait-for-nodes --nodes 5 -- true) && echo $id >waiting &&
    sleep 1 &&
    test "$(job_state $id)" = PENDING &&
    ls_cli show $id --json | jget "j[\"reason\"]" >reason &&
    cat reason && test "$(cat reason)" = "$(cat short)" &&
    ls_cli jobs | grep -F "$(cat short)" &&
    ls_cli show $id | grep -F "reason:      $(cat short)"
'

test_expect_success 'it runs once a fifth node joins' '
    start_agent n5 -o cpus=2 &&
    wait_job_state $(cat waiting) SUCCEEDED 30
'

# The submit check keeps its answer per request shape until the
# inventory changes: the shape refused above is judged again.
test_expect_success 'the same 5-node job is now accepted without waiting' '
    id=$(submit_id --nodes 5 -- true) &&
    wait_job_state $id SUCCEEDED 30
'

test_done
