#!/bin/bash
# t4116: a scheduler outage never kills a job. lockstepd is killed with
# SIGKILL under a running 2 x 2 DDP job and kept down for over six leases;
# the agents, whose witnesses (each other) lost it too, keep extending
# their supervisors' leases. When it comes back on the same state the job
# is still on attempt 1, ends SUCCEEDED with the reference parameters and
# its infrastructure budget untouched. A rank that exits 3 during the
# outage has that exit code reported after the return, and its job
# restarts as usual (docs/fault-tolerance.md "Scheduler outages"). An
# agent killed and restarted during the outage re-adopts its ranks and
# extends their leases from the witness set it kept on disk (on the same
# witness port: the other agent learns of a new one only from the
# scheduler).
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 160 --ckpt-every 20 --step-time 0.15)
# Over six leases (LEASE_MS=1500).
OUTAGE_S=10

# all_alive PIDFILE: every pid in the file is alive.
all_alive() {
    local p
    for p in $(cat "$1"); do
        kill -0 "$p" 2>/dev/null || { echo "pid $p is gone"; return 1; }
    done
}

# rank_gone JOB RANK: no process of JOB with that RANK is alive.
rank_gone() {
    local p
    for p in $(job_pids "$1"); do
        tr '\0' '\n' 2>/dev/null </proc/"$p"/environ | grep -qxF "RANK=$2" &&
            return 1
    done
    return 0
}

test_reference_run

test_expect_success 'a 2 x 2 DDP job runs' '
    ddp_running 2 outage -- "${TRAIN[@]}" &&
    wait_for 90 "ckpt_complete outage 20" &&
    job_pids $(cat job) | sort >pids.before &&
    test $(wc -l <pids.before) -ge 4
'

test_expect_success 'SIGKILL lockstepd; its ranks outlive six leases without it' '
    kill_scheduler && date +%s%3N >down_at &&
    sleep 3 &&
    : "an agent restarted during the outage keeps its ranks too" &&
    port=$(sed -n "s/.*witness queries answered on UDP port //p" agent-n1/log |
        tail -n 1) && test -n "$port" &&
    kill_agent n1 && start_agent n1 -o witness_port=$port &&
    sleep $((OUTAGE_S - 3)) &&
    all_alive pids.before &&
    ! grep -q "fenced: lease expired" agent-n1/log agent-n2/log &&
    grep -q "extending" agent-n1/log && grep -q "extending" agent-n2/log
'

test_expect_success 'lockstepd returns on the same state: the job goes on' '
    start_scheduler &&
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)" &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 1 &&
    test "$(job_json $(cat job) "j[\"infra_restarts\"]")" = 0 &&
    test "$(job_json $(cat job) "j[\"restarts\"]")" = 0 &&
    stop_watch && one_attempt_at_a_time $(cat job)
'

test_expect_success 'a rank exits 3 during an outage' '
    id=$(submit_id --name exit3 --nodes 2 --ranks-per-node 2 \
        --max-restarts 1 -- sh -c \
        "if [ \$RANK = 1 ] && [ \$LOCKSTEP_ATTEMPT = 1 ]; then sleep 4; exit 3; fi; sleep 12") &&
    echo $id >job3 &&
    wait_job_state $id RUNNING 30 &&
    wait_for 10 "job_nprocs_ge $id 4" &&
    kill_scheduler &&
    wait_for 15 "rank_gone $id 1" &&
    sleep 3 &&
    job_nprocs_ge $id 3
'

test_expect_success 'after the return its exit code is reported and the job restarts' '
    start_scheduler &&
    id=$(cat job3) &&
    wait_for 30 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"exit_code\"]")" = 3 &&
    test "$(job_json $id "j[\"restarts\"]")" = 1 &&
    test "$(job_json $id "j[\"infra_restarts\"]")" = 0 &&
    wait_job_state $id SUCCEEDED 60
'

test_done
