#!/bin/bash
# t4110: an agent killed (kill -9) while a PMIx fence across nodes is
# pending: the fence fails on the other agent within seconds (well before
# the node timeout, and with nobody waiting for PMIX_TIMEOUT), so its
# ranks leave MPI_Init/PMIx_Fence with an error instead of hanging; the
# attempt ends as the node's loss (an infrastructure failure: the ranks'
# exits wait for the silent node's verdict, status.c) within the node
# timeout, and every process of it goes (the dead agent's ranks by their
# supervisor's lease). Both ways round: the killed
# agent had not contributed yet (its ranks were still asleep: the
# survivor's contribution is failed as the dead agent's long poll
# closes), and it had (its connection to the scheduler closes: the
# attempt's collectives fail, and the survivor's later contribution is
# refused at once). And a direct modex (a rank's PMIx_Get of the data
# of a rank of the other node) whose owner agent is killed while the
# data is not there yet fails on the asking agent within seconds, and
# the ranks' PMIx_Get returns an error; one whose data never comes fails
# at its PMIX_TIMEOUT, and one in flight when the scheduler restarts
# fails too. What the ranks print reaches `lockstep logs` as the agent
# ships it (every 200 ms, agent/logship.c), so it is waited for. Skipped
# without libpmix.
. "$(dirname "$0")/../lib/harness.sh"

if ! pkg-config --exists pmix ||
    ! grep -q "LOCKSTEP_HAVE_PMIX 1" "$BUILD_DIR/version.h"; then
    echo "ok 1 # SKIP libpmix missing (make deps installs it)"
    echo "1..1"
    exit 0
fi

# A short lease (the dead agent's ranks go soon) but a long node timeout,
# so that only the collective's own failure can be that fast.
NODE_TIMEOUT_MS=6000 HEARTBEAT_MS=300 LEASE_MS=1500 KILL_GRACE_MS=1000
start_scheduler
start_agent n1 -o log_level=debug
start_agent n2 -o log_level=debug

# node_of ID K: the node of node rank K of job ID's first attempt.
node_of() {
    job_json "$1" "j[\"attempts\"][0][\"nodes\"][$2][\"node\"]"
}

# fence_pending NODE ID: NODE's agent sent a fence of job ID.
fence_pending() {
    grep -q "job=$2 attempt=1 PMIx fence fence\..*: .* bytes to 2 nodes" \
        "$TEST_DIR/agent-$1/log"
}

# fence_failed NODE ID: NODE's agent was told a fence of job ID failed.
fence_failed() {
    grep -q "job=$2 attempt=1 PMIx fence fence\..* across nodes failed" \
        "$TEST_DIR/agent-$1/log"
}

test_expect_success 'nodes come up, a PMIx program compiles' '
    wait_nodes_up 2 &&
    cc -o pmix_fence "$SRC_DIR/tests/helpers/pmix_fence.c" \
        $(pkg-config --cflags --libs pmix) &&
    cc -o pmix_dmodex "$SRC_DIR/tests/helpers/pmix_dmodex.c" \
        $(pkg-config --cflags --libs pmix)
'

test_expect_success 'kill the agent whose ranks have not fenced yet' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_fence 1 600) &&
    echo $id >a.job &&
    wait_for 30 "test -n \"\$(node_of $id 1)\"" &&
    survivor=$(node_of $id 0) && victim=$(node_of $id 1) &&
    echo "$survivor $victim" >a.nodes &&
    wait_for 30 "fence_pending $survivor $id" &&
    sleep 0.5 && ! fence_failed $survivor $id &&
    start=$(date +%s%3N) &&
    kill_agent $victim &&
    wait_for 10 "fence_failed $survivor $id" &&
    echo "# fence failed $(( $(date +%s%3N) - start )) ms after the kill" >&3 &&
    test $(( $(date +%s%3N) - start )) -lt 3000 &&
    grep "across nodes failed" "$TEST_DIR/agent-$survivor/log" | tail -n 1 |
        grep -q "node .$victim.: its agent.s connection closed"
' 3>&1

# attempt_over ID: job ID's first attempt has ended as its node's loss.
attempt_over() {
    ls_cli show "$1" --json >over.json &&
    test "$(jget "j[\"attempts\"][0][\"state\"]" <over.json)" = FAILED &&
    jget "j[\"attempts\"][0][\"reason\"]" <over.json | grep -q "node lost"
}

test_expect_success 'the ranks left the fence with its error; the attempt ends' '
    id=$(cat a.job) &&
    wait_for 10 "ls_cli logs $id --rank 0 | grep -q \"^rank 0 fence failed\"" &&
    wait_for 10 "ls_cli logs $id --rank 1 | grep -q \"^rank 1 fence failed\"" &&
    wait_for $(( NODE_TIMEOUT_MS / 1000 + 10 )) "attempt_over $id" &&
    ls_cli cancel $id &&
    wait_until 20 job_gone $id
'

test_expect_success 'the dead agent comes back' '
    set -- $(cat a.nodes) &&
    start_agent $2 -o log_level=debug &&
    wait_nodes_up 2
'

test_expect_success 'kill the agent that has contributed' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_fence 1 6) &&
    echo $id >b.job &&
    wait_for 30 "test -n \"\$(node_of $id 1)\"" &&
    victim=$(node_of $id 0) && survivor=$(node_of $id 1) &&
    echo "$survivor $victim" >b.nodes &&
    wait_for 30 "fence_pending $victim $id" &&
    kill_agent $victim &&
    wait_for 20 "fence_failed $survivor $id" &&
    grep "across nodes failed" "$TEST_DIR/agent-$survivor/log" | tail -n 1 |
        grep -q "node .$victim.: its agent.s connection closed" &&
    wait_for 10 "ls_cli logs $id --rank 2 | grep -q \"^rank 2 fence failed\"" &&
    wait_for $(( NODE_TIMEOUT_MS / 1000 + 10 )) "attempt_over $id" &&
    ls_cli cancel $id &&
    wait_until 20 job_gone $id
'

test_expect_success 'that dead agent comes back too' '
    set -- $(cat b.nodes) &&
    start_agent $2 -o log_level=debug &&
    wait_nodes_up 2
'

# dmodex_asked NODE ID: NODE's agent was asked for the data of rank 2 of
# job ID (its ranks never commit it).
dmodex_asked() {
    grep -q "job=$2 attempt=1 PMIx direct modex [0-9]*: the data of rank 2" \
        "$TEST_DIR/agent-$1/log"
}

# dmodex_failed NODE ID: NODE's agent was told the direct modex failed.
dmodex_failed() {
    grep -q "job=$2 attempt=1 PMIx direct modex of rank 2 failed" \
        "$TEST_DIR/agent-$1/log"
}

test_expect_success 'kill the agent whose rank is asked for its data' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_dmodex hold) &&
    wait_for 30 "test -n \"\$(node_of $id 1)\"" &&
    survivor=$(node_of $id 0) && victim=$(node_of $id 1) &&
    wait_for 30 "dmodex_asked $victim $id" &&
    sleep 0.5 && ! dmodex_failed $survivor $id &&
    start=$(date +%s%3N) &&
    kill_agent $victim &&
    wait_for 10 "dmodex_failed $survivor $id" &&
    echo "# direct modex failed $(( $(date +%s%3N) - start )) ms after" \
        "the kill" >&3 &&
    test $(( $(date +%s%3N) - start )) -lt 3000 &&
    grep "direct modex of rank 2 failed" "$TEST_DIR/agent-$survivor/log" |
        tail -n 1 |
        grep -q "node .$victim.: its agent.s connection closed" &&
    wait_for 10 "ls_cli logs $id --rank 0 | grep -q \"^rank 0 get of rank 2 failed\"" &&
    ls_cli logs $id --rank 1 | grep -q "^rank 1 get of rank 2 failed" &&
    echo "$survivor $victim" >c.nodes &&
    wait_for $(( NODE_TIMEOUT_MS / 1000 + 10 )) "attempt_over $id" &&
    ls_cli cancel $id &&
    wait_until 20 job_gone $id
' 3>&1

test_expect_success 'a direct modex that gets no data times out (PMIX_TIMEOUT)' '
    set -- $(cat c.nodes) &&
    start_agent $2 -o log_level=debug &&
    wait_nodes_up 2 &&
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_dmodex hold 2) &&
    wait_for 30 "test -n \"\$(node_of $id 1)\"" &&
    asker=$(node_of $id 0) &&
    wait_for 20 "dmodex_failed $asker $id" &&
    grep "direct modex of rank 2 failed" "$TEST_DIR/agent-$asker/log" |
        tail -n 1 | grep -q "did not come from node" &&
    wait_for 10 "ls_cli logs $id --rank 0 | grep -q \"^rank 0 get of rank 2 failed\"" &&
    wait_job_state $id FAILED 30 &&
    wait_until 20 job_gone $id
'

test_expect_success 'a scheduler restart fails a waiting direct modex' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_dmodex hold) &&
    wait_for 30 "test -n \"\$(node_of $id 1)\"" &&
    asker=$(node_of $id 0) && owner=$(node_of $id 1) &&
    wait_for 30 "dmodex_asked $owner $id" &&
    kill_scheduler && start_scheduler &&
    wait_for 10 "dmodex_failed $asker $id" &&
    wait_for 10 "ls_cli logs $id --rank 0 | grep -q \"^rank 0 get of rank 2 failed\"" &&
    wait_job_state $id FAILED 60 &&
    wait_until 20 job_gone $id
'

test_done
