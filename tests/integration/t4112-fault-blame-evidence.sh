#!/bin/bash
# t4112: blame is evidence-based (docs/fault-tolerance.md "Blame and node
# exclusion"). A user's bug never takes a healthy node out: three jobs
# that fail with an ImportError on the same node leave it UP, with
# --max-restarts 0 and with the default restarts. An operator's uncordon
# starts a node's record afresh: one new failure after it does not
# re-exclude the node. Blame that is withdrawn (the "hardware" signal
# followed the job to another node) lifts the exclusion it caused. And a
# genuinely bad node is still excluded: by a hardware signal (SIGBUS), and
# by plain failures that the jobs' next attempts confirm by getting past
# the failing step on other nodes.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
# n2 has the fewest GPUs, so best-fit placement sends 1-GPU jobs there
# first: consecutive small jobs land on the same node.
start_agent n1
start_agent n2 -o gpus=0
start_agent n3

IMPORT='echo "ImportError: no module named tourch" >&2; exit 1'
# Killed by SIGBUS on n2 (a machine check), fine elsewhere.
SIGBUS_N2='if [ "$LOCKSTEP_NODE" = n2 ]; then kill -BUS $$; fi; sleep 1'
SIGBUS_ALL='kill -BUS $$'
# The same, but elsewhere only after 4 s.
SIGBUS_SLOW='[ "$LOCKSTEP_NODE" = n2 ] || sleep 4; kill -BUS $$'
# Reports steps; exits 1 at step 3 on n2; elsewhere gets past it, then
# stays (until cancelled).
STEPS='import os, sys, time, lockstep
for s in range(8):
    lockstep.step(s)
    time.sleep(0.25)
    if s == 3 and os.environ["LOCKSTEP_NODE"] == "n2":
        sys.exit(1)
time.sleep(120)'

# first_node JOB: the node attempt 1 of JOB ran on.
first_node() {
    job_json "$1" 'j["attempts"][0]["nodes"][0]["node"]'
}

# blame_of JOB: the statuses of JOB's blame rows, in order.
blame_of() {
    db_query "SELECT node || ':' || status FROM blame WHERE job_id = $1 ORDER BY id" | tr '\n' ' '
}

# counted NODE: its confirmed blame rows.
counted() {
    db_query "SELECT count(*) FROM blame WHERE node = '$1' AND status = 'confirmed'"
}

node_events() {
    ls_cli node "$1" --json | jget '[e["kind"] for e in j["events"]]'
}

test_expect_success '(a) three ImportError jobs with --max-restarts 0 on one node' '
    wait_nodes_up 3 &&
    for k in 1 2 3; do
        id=$(submit_id --name imp-$k --gpus-per-node 1 --max-restarts 0 \
            -- sh -c "$IMPORT") &&
        wait_job_state $id FAILED 30 &&
        test "$(first_node $id)" = n2 &&
        blame_of $id | tee b && test "$(cat b)" = "n2:withdrawn " || return 1
    done
'

test_expect_success '(a) leave the node UP, its blame withdrawn and shown so' '
    test "$(node_state n2)" = UP && test "$(counted n2)" = 0 &&
    ls_cli node n2 --json >n2.json &&
    jget "sorted(set(b[\"status\"] for b in j[\"blame\"]))" <n2.json | tee st &&
    test "$(cat st)" = "[\"withdrawn\"]" &&
    jget "j[\"blame\"][0][\"note\"]" <n2.json | grep "ended without" &&
    ls_cli node n2 | grep -A4 "^blame:" | grep withdrawn
'

test_expect_success '(a) three ImportError jobs with the default restarts' '
    for k in 1 2 3; do
        id=$(submit_id --name impr-$k --gpus-per-node 1 -- sh -c "$IMPORT") &&
        wait_job_state $id FAILED 30 &&
        test "$(first_node $id)" = n2 &&
        job_json $id "j[\"reason\"]" | grep -q deterministic &&
        ! blame_of $id | grep -v withdrawn | grep -q . || return 1
    done &&
    test "$(nodes_up_count)" = 3 &&
    test "$(db_query "SELECT count(*) FROM blame WHERE status <> '"'"'withdrawn'"'"'")" = 0
'

test_expect_success 'a hardware signal blames at once: three jobs exclude n2' '
    for k in 1 2 3; do
        id=$(submit_id --name bus-$k --gpus-per-node 1 -- sh -c "$SIGBUS_N2") &&
        wait_job_state $id SUCCEEDED 30 &&
        test "$(first_node $id)" = n2 &&
        blame_of $id | tee b && test "$(cat b)" = "n2:confirmed " || return 1
    done &&
    test "$(node_state n2)" = UNHEALTHY &&
    ls_cli node n2 --json | jget "j[\"reason\"]" | grep "3 different jobs"
'

test_expect_success '(b) uncordon resets the record: kept, not counted' '
    ls_cli uncordon n2 --reason "DIMM replaced" &&
    test "$(node_state n2)" = UP && test "$(counted n2)" = 0 &&
    test "$(db_query "SELECT count(*) FROM blame WHERE node = '"'"'n2'"'"' AND status = '"'"'reset'"'"'")" = 3 &&
    ls_cli node n2 --json | jget "[b[\"note\"] for b in j[\"blame\"] if b[\"status\"] == \"reset\"]" | grep -q uncordon
'

test_expect_success '(b) one new failure after the uncordon does not re-exclude' '
    id=$(submit_id --name bus-4 --gpus-per-node 1 -- sh -c "$SIGBUS_N2") &&
    wait_job_state $id SUCCEEDED 30 && test "$(first_node $id)" = n2 &&
    test "$(counted n2)" = 1 &&
    sleep 1 && test "$(node_state n2)" = UP
'

test_expect_success '(c) a withdrawn blame lifts the exclusion it caused' '
    id=$(submit_id --name bus-5 --gpus-per-node 1 -- sh -c "$SIGBUS_N2") &&
    wait_job_state $id SUCCEEDED 30 && test "$(counted n2)" = 2 &&
    id=$(submit_id --name bus-all --gpus-per-node 1 -- sh -c "$SIGBUS_ALL") &&
    echo $id >busall &&
    wait_job_state $id FAILED 30 &&
    job_json $id "j[\"reason\"]" | grep deterministic &&
    test "$(first_node $id)" = n2 &&
    node_events n2 | tee ev && grep -q node_excluded ev &&
    grep -q node_exclusion_lifted ev &&
    test "$(node_state n2)" = UP && test "$(counted n2)" = 2 &&
    ! blame_of $id | grep -v withdrawn | grep -q .
'

test_expect_success '(c) the lift names why' '
    db_query "SELECT detail FROM events WHERE subject = '"'"'node/n2'"'"' AND kind = '"'"'node_exclusion_lifted'"'"'" | tee lift &&
    grep -q "blame withdrawn" lift && grep -q UNHEALTHY lift && grep -q "\"to\":\"UP\"" lift
'

test_expect_success 'a lift never clears an operator'"'"'s cordon' '
    id=$(submit_id --name bus-slow --gpus-per-node 1 -- sh -c "$SIGBUS_SLOW") &&
    wait_for 30 "test \"\$(node_state n2)\" = UNHEALTHY" &&
    wait_for 30 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_job_state $id RUNNING 30 &&
    ls_cli cordon n2 --reason "swapping the GPU anyway" &&
    wait_job_state $id FAILED 30 &&
    job_json $id "j[\"reason\"]" | grep deterministic &&
    test "$(node_events n2 | grep -o node_exclusion_lifted | wc -l)" = 2 &&
    test "$(node_state n2)" = CORDONED &&
    ls_cli node n2 --json | jget "j[\"reason\"]" | grep "swapping"
'

test_expect_success 'a confirmed blame still excludes a genuinely bad node' '
    ls_cli uncordon n2 --reason "GPU swapped" && test "$(counted n2)" = 0 &&
    for k in 1 2 3; do
        id=$(submit_id --name steps-$k --gpus-per-node 1 \
            --env PYTHONPATH="$SRC_DIR/sdk/python" -- "$PY" -c "$STEPS") &&
        echo $id >>steps.jobs &&
        wait_for 60 "blame_of $id | grep -q n2:" &&
        test "$(first_node $id)" = n2 &&
        if [ $k -lt 3 ]; then test "$(node_state n2)" = UP || return 1; fi &&
        wait_for 60 "blame_of $id | grep -q n2:confirmed" &&
        job_state_is $id RUNNING || return 1
    done &&
    wait_for 10 "test \"\$(node_state n2)\" = UNHEALTHY" &&
    db_query "SELECT note FROM blame WHERE job_id = $(tail -1 steps.jobs)" | grep "got past step"
'

test_expect_success 'cancelling the jobs does not undo a confirmed blame' '
    for id in $(cat steps.jobs); do ls_cli cancel $id || return 1; done &&
    for id in $(cat steps.jobs); do wait_job_state $id CANCELLED 30 || return 1; done &&
    test "$(counted n2)" = 3 && test "$(node_state n2)" = UNHEALTHY
'

test_done
