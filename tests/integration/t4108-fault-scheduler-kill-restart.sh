#!/bin/bash
# t4108: kill -9 of lockstepd while a job is being restarted: after it
# comes back the job still ends SUCCEEDED, resumed from its checkpoint,
# with exactly one attempt running at any time.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2 -o restart_backoff_ms=2000
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.15)

test_reference_run

test_expect_success 'a DDP job runs; kill a rank after checkpoint 10' '
    ddp_running 2 restart -- "${TRAIN[@]}" &&
    wait_for 90 "ckpt_complete restart 10" &&
    kill -9 $(rank_pid $(cat job) 0)
'

test_expect_success 'kill -9 the scheduler while the job is RESTARTING' '
    wait_for 10 "test \$(job_state $(cat job)) = RESTARTING" &&
    kill_scheduler &&
    sleep 1 &&
    start_scheduler -o restart_backoff_ms=2000
'

test_expect_success 'the job still ends SUCCEEDED with the reference parameters' '
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)" &&
    test "$(job_json $(cat job) "j[\"attempts\"][-1][\"resume_step\"]")" -ge 10
'

test_expect_success 'exactly one attempt was running at any time' '
    stop_watch && cat watch-$(cat job) &&
    one_attempt_at_a_time $(cat job) &&
    test "$(job_json $(cat job) "len([a for a in j[\"attempts\"] if a[\"state\"] == \"SUCCEEDED\"])")" = 1
'

test_expect_success 'kill -9 of the scheduler right after the failure, twice' '
    id=$(ddp_submit restart2 -- "${TRAIN[@]}") && echo $id >job2 &&
    watch_attempts $id &&
    wait_job_state $id RUNNING 60 &&
    wait_for 90 "ckpt_complete restart2 10" &&
    kill -9 $(rank_pid $id 2) &&
    kill_scheduler && start_scheduler -o restart_backoff_ms=2000 &&
    sleep 0.5 && kill_scheduler && start_scheduler -o restart_backoff_ms=2000 &&
    wait_job_state $id SUCCEEDED 120 &&
    test "$(final_sha $id)" = "$(cat ref.sha)" &&
    stop_watch && one_attempt_at_a_time $id
'

test_done
