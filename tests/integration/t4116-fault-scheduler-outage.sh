#!/bin/bash
# t4116: a scheduler outage never kills a job. lockstepd is killed with
# SIGKILL under a running 2 x 2 DDP job and kept down for 12 leases (18 s
# at LEASE_MS=1500); the agents, whose witnesses (each other) lost it too,
# keep extending their supervisors' leases. When it comes back on the
# same state the job is still on attempt 1, ends SUCCEEDED with the
# reference parameters and its infrastructure budget untouched; the lines
# its ranks printed during the outage are in `lockstep logs`, and a
# checkpoint committed during the outage is registered. A rank that exits
# 3 during the outage has that exit code reported after the return, its
# output from the outage (and its peers') is in `lockstep logs`, and its
# job restarts as usual (docs/fault-tolerance.md "Scheduler outages"). An
# agent killed and restarted during the outage re-adopts its ranks and
# extends their leases from the witness set it kept on disk (on the same
# witness port: the other agent learns of a new one only from the
# scheduler). t4120 has ranks that end long before the return.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 240 --ckpt-every 20 --step-time 0.1)
# The job does not end before lockstepd is back (./resume), however slowly
# the test gets to the kill.
HOLD=(--hold-at 220 --hold-file "$TEST_DIR/resume")
# Twelve leases (LEASE_MS=1500).
OUTAGE_S=18

# out_files JOB ATTEMPT RANK...: the agents' own copies of those ranks'
# stdout (what the ranks wrote, whether shipped or not).
out_files() {
    local job=$1 attempt=$2 r
    shift 2
    for r in "$@"; do ls agent-n*/logs/"$job"/"$attempt"/rank-"$r".out; done
}

# disk_steps NAME: the complete checkpoint steps of job NAME on disk
# (sorted as comm wants them).
disk_steps() {
    ls "$TEST_DIR/$1/ck" 2>/dev/null | sed -n 's/^step-//p' | while read -r s; do
        [ -f "$TEST_DIR/$1/ck/step-$s/COMPLETE" ] && echo "$s"
    done | sort
}

# registered_steps JOB: the checkpoint steps the scheduler registered.
registered_steps() {
    job_json "$1" "sorted(c[\"step\"] for c in j[\"checkpoints\"])"
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

# The ranks of the exit-3 job: once lockstepd is down (./down3), rank 1
# of attempt 1 exits 3, the others print a line and wait until it is
# back (./back3). Attempt 2 finds both files and ends at once.
cat >"$TEST_DIR/exit3.sh" <<EOF
while [ ! -e "$TEST_DIR/down3" ]; do sleep 0.1; done
if [ \$RANK = 1 ] && [ \$LOCKSTEP_ATTEMPT = 1 ]; then
    echo rank 1 exits 3 during the outage
    exit 3
fi
echo rank \$RANK still here on attempt \$LOCKSTEP_ATTEMPT
while [ ! -e "$TEST_DIR/back3" ]; do sleep 0.1; done
EOF

test_reference_run

test_expect_success 'a 2 x 2 DDP job runs' '
    ddp_running 2 outage -- "${TRAIN[@]}" "${HOLD[@]}" &&
    wait_for 90 "ckpt_complete outage 20" &&
    job_pids $(cat job) | sort >pids.before &&
    test $(wc -l <pids.before) -ge 4
'

test_expect_success 'SIGKILL lockstepd; its ranks outlive twelve leases without it' '
    wait_for 30 "test \"\$(registered_steps \$(cat job))\" != \"[]\"" &&
    kill_scheduler && date +%s%3N >down_at &&
    : "what rank 0 had printed, and the checkpoints on disk, at the kill" &&
    cat $(out_files $(cat job) 1 0) >out.before &&
    disk_steps outage >steps.before &&
    sleep 3 &&
    : "an agent restarted during the outage keeps its ranks too" &&
    port=$(sed -n "s/.*witness queries answered on UDP port //p" agent-n1/log |
        tail -n 1) && test -n "$port" &&
    kill_agent n1 && start_agent n1 -o witness_port=$port &&
    sleep $((OUTAGE_S - 3)) &&
    all_alive pids.before &&
    ! grep -q "fenced: lease expired" agent-n1/log agent-n2/log &&
    grep -q "extending" agent-n1/log && grep -q "extending" agent-n2/log &&
    : "lines rank 0 printed, and checkpoints committed, while it was down" &&
    cat $(out_files $(cat job) 1 0) >out.after &&
    tail -c +$(($(wc -c <out.before) + 1)) out.after >out.outage &&
    cat out.outage && grep -q "step .* loss" out.outage &&
    disk_steps outage >steps.after &&
    comm -13 steps.before steps.after >steps.outage &&
    cat steps.outage && test -s steps.outage
'

test_expect_success 'lockstepd returns on the same state: the job goes on' '
    start_scheduler && touch resume &&
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)" &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 1 &&
    test "$(job_json $(cat job) "j[\"infra_restarts\"]")" = 0 &&
    test "$(job_json $(cat job) "j[\"restarts\"]")" = 0 &&
    stop_watch && one_attempt_at_a_time $(cat job)
'

test_expect_success 'its output from the outage is in lockstep logs' '
    ls_cli logs $(cat job) --rank 0 >logs.0 &&
    grep -vxFf logs.0 out.outage >missing; rc=$?;
    cat missing; test $rc = 1
'

test_expect_success 'a checkpoint committed during the outage is registered' '
    registered_steps $(cat job) >registered &&
    cat registered &&
    for s in $(cat steps.outage); do
        jget "$s in j" <registered | grep -qx True || return 1
    done &&
    test "$(sort -n steps.outage | tail -n 1)" -gt \
        "$(sort -n steps.before | tail -n 1)"
'

test_expect_success 'a rank exits 3 during an outage' '
    id=$(submit_id --name exit3 --nodes 2 --ranks-per-node 2 \
        --max-restarts 1 -- sh "$TEST_DIR/exit3.sh") &&
    echo $id >job3 &&
    wait_job_state $id RUNNING 30 &&
    wait_for 30 "job_nprocs_ge $id 4" &&
    kill_scheduler && touch down3 &&
    wait_for 15 "rank_gone $id 1" &&
    wait_for 15 "cat \$(out_files $id 1 0 2 3) | grep -c \"still here\" | grep -qx 3" &&
    job_nprocs_ge $id 3
'

test_expect_success 'after the return its exit code is reported and the job restarts' '
    start_scheduler && touch back3 &&
    id=$(cat job3) &&
    wait_for 30 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"exit_code\"]")" = 3 &&
    test "$(job_json $id "j[\"restarts\"]")" = 1 &&
    test "$(job_json $id "j[\"infra_restarts\"]")" = 0 &&
    wait_job_state $id SUCCEEDED 60
'

test_expect_success 'its ranks output from the outage is in lockstep logs' '
    id=$(cat job3) &&
    ls_cli logs $id --attempt 1 >logs3 &&
    cat logs3 &&
    grep -qx "\[rank 1\] rank 1 exits 3 during the outage" logs3 &&
    for r in 0 2 3; do
        grep -qx "\[rank $r\] rank $r still here on attempt 1" logs3 || return 1
    done
'

test_done
