#!/bin/bash
# t4104: a checkpoint directory without its COMPLETE marker (a crash in the
# middle of writing it) is never resumed from: the job resumes from the
# previous complete checkpoint and still ends with the reference
# parameters. --keep-checkpoints prunes old complete checkpoints but never
# the one being resumed from.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.1)

test_reference_run

test_expect_success 'every rank crashes while writing checkpoint 20' '
    wait_nodes_up 2 &&
    id=$(ddp_submit partial -- "${TRAIN[@]}" --crash-in-checkpoint 20) &&
    echo $id >job &&
    wait_job_state $id SUCCEEDED 150
'

test_expect_success 'attempt 1 left step-20 without COMPLETE' '
    ls_cli logs $(cat job) --rank 0 --attempt 1 | grep -q "crashing inside checkpoint 20"
'

test_expect_success 'attempt 2 resumed from step 10, not the partial step 20' '
    test "$(job_json $(cat job) "j[\"attempts\"][1][\"resume_step\"]")" = 10 &&
    ls_cli logs $(cat job) --rank 0 --attempt 2 | grep -q "resumed from .*step-10"
'

test_expect_success 'the registry never listed the partial checkpoint of attempt 1' '
    job_json $(cat job) "[(c[\"step\"], c[\"attempt\"]) for c in j[\"checkpoints\"]]" >cks &&
    cat cks && ! grep -qF "[20, 1]" cks
'

test_expect_success 'final parameters equal the reference' '
    test "$(final_sha $(cat job))" = "$(cat ref.sha)"
'

test_expect_success 'keep-checkpoints 1 prunes older complete checkpoints' '
    id=$(ddp_submit keep --keep-checkpoints 1 -- --steps 40 --ckpt-every 5 \
        --step-time 0.05) &&
    wait_job_state $id SUCCEEDED 120 &&
    wait_for 10 "test \$(ls -d keep/ck/step-*/COMPLETE | wc -l) = 1" &&
    ls keep/ck
'

test_expect_success 'a resumed-from checkpoint is never pruned' '
    id=$(ddp_submit keep2 --keep-checkpoints 1 -- --steps 40 --ckpt-every 5 \
        --step-time 0.1 --crash-at 23) && echo $id >job2 &&
    wait_job_state $id SUCCEEDED 150 &&
    step=$(job_json $id "j[\"attempts\"][1][\"resume_step\"]") &&
    echo "resumed from $step" && test "$step" -ge 5 &&
    test "$(final_sha $id)" = "$(reference_sha --steps 40 --ckpt-every 5)"
'

test_done
