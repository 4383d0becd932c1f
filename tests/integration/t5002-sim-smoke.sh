#!/bin/bash
# t5002: lockstep-sim (bench/sim.c, docs/scale.md) drives a real lockstepd
# with 20 simulated agents over the real agent protocol: the nodes come UP,
# a 20-node job's simulated ranks run and exit 0 so the job SUCCEEDS, the
# ranks' shipped output is readable, and a rank that fails is seen as a
# failure (the job is restarted, then FAILED).
. "$(dirname "$0")/../lib/harness.sh"

SIM=$BUILD_DIR/bench/lockstep-sim

# start_sim PREFIX GPUS FAIL_PROB: 20 simulated agents in the background.
start_sim() {
    "$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
        --nodes 20 --prefix "$1" --gpus "$2" --rank-time 1500 \
        --fail-prob "$3" --log-rate 5 --ckpt-every 5 --report-ms 1000 \
        >>"$TEST_DIR/sim-$1.log" 2>&1 &
    EXTRA_PIDS+=($!)
}

test_expect_success 'lockstep-sim registers 20 nodes that come UP' '
    start_scheduler &&
    start_sim s 2 0 &&
    wait_nodes_up 20 30 &&
    ls_cli nodes --json >nodes.json &&
    test "$(jget "sorted(set(n[\"name\"][:1] for n in j))" <nodes.json)" = "[\"s\"]"
'

test_expect_success 'a 20-node job SUCCEEDS on simulated ranks' '
    id=$(submit_id --nodes 20 --ranks-per-node 2 --gpus-per-node 2 -- train) &&
    wait_job_state "$id" SUCCEEDED 60 &&
    ls_cli show "$id" --json >job.json &&
    test "$(jget "len(j[\"attempts\"])" <job.json)" = 1 &&
    test "$(jget "len(j[\"attempts\"][0][\"ranks\"])" <job.json)" = 40 &&
    test "$(jget "all(r[\"exit_code\"] == 0 for r in j[\"attempts\"][0][\"ranks\"])" <job.json)" = True
'

test_expect_success 'the simulated ranks shipped their output' '
    ls_cli logs "$id" --rank 39 >rank39.txt &&
    grep -q "^rank 39 step 0 loss" rank39.txt &&
    test "$(wc -l <rank39.txt)" -ge 5
'

test_expect_success 'the simulator printed its figures without errors' '
    wait_for 10 "grep -q \"registered=20 \" sim-s.log" &&
    ! grep -q "errors=[1-9]" sim-s.log
'

# Nodes f1..f20 have 4 GPUs, s1..s20 2: a job asking 4 runs on f nodes.
test_expect_success 'ranks that fail make the job fail' '
    start_sim f 4 1 &&
    wait_nodes_up 40 30 &&
    id=$(submit_id --nodes 20 --gpus-per-node 4 --max-restarts 1 -- train) &&
    wait_job_state "$id" FAILED 60 &&
    test "$(ls_cli show "$id" --json | jget "len(j[\"attempts\"])")" = 2
'

test_done
