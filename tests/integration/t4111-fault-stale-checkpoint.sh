#!/bin/bash
# t4111: a checkpoint that was in the checkpoint directory before the job
# (an earlier run's step-50/COMPLETE) is never resumed: after a crash on
# attempt 1, attempt 2 resumes from the job's own checkpoint, and the
# registry never lists the stale one. Continuing an earlier run is
# explicit: --resume-from JOB (its latest complete checkpoint) and
# --resume-from PATH are resumed by attempt 1 (and by a restart before the
# job has a checkpoint of its own). A non-empty checkpoint directory gets a
# one-line warning at submit; a bad --resume-from is refused.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 30 --ckpt-every 10 --step-time 0.02)

# The earlier run, uninterrupted, is also the reference: a job that ran
# every step ends with its final parameters, bit for bit.
test_expect_success 'an earlier run ends with checkpoints 10 and 20' '
    wait_nodes_up 2 &&
    id=$(ddp_submit old -- "${TRAIN[@]}") && echo $id >old.job &&
    wait_job_state $id SUCCEEDED 150 &&
    test "$(job_json $id "[c[\"step\"] for c in j[\"checkpoints\"]]")" = "[10, 20]" &&
    ckpt_complete old 20 &&
    final_sha $id >ref.sha && test -s ref.sha
'

test_expect_success 'a new job on a directory holding step-50/COMPLETE is warned, in one line' '
    mkdir -p stale/ck &&
    cp -r old/ck/step-20 stale/ck/step-50 && test -f stale/ck/step-50/COMPLETE &&
    id=$(ddp_submit stale -- "${TRAIN[@]}" --crash-at 12 2>warn) &&
    echo $id >stale.job && cat warn &&
    test "$(wc -l <warn)" = 1 &&
    grep -q "warning: checkpoint directory .*/stale/ck. is not empty (1 complete checkpoint, newest step-50): restarts resume only from checkpoints this job writes, never from what is there now; to continue from one, use --resume-from" warn
'

test_expect_success 'it crashes at step 12 and attempt 2 resumes from its own step 10, not step 50' '
    id=$(cat stale.job) &&
    wait_job_state $id SUCCEEDED 150 &&
    ls_cli show $id --json >stale.json &&
    test "$(jget "len(j[\"attempts\"])" <stale.json)" = 2 &&
    test "$(jget "j[\"attempts\"][0][\"resume_from\"]" <stale.json)" = "" &&
    test "$(jget "j[\"attempts\"][1][\"resume_step\"]" <stale.json)" = 10 &&
    test "$(jget "j[\"attempts\"][1][\"resume_from\"]" <stale.json)" = "$TEST_DIR/stale/ck/step-10" &&
    ls_cli logs $id --rank 0 --attempt 2 | grep -q "resumed from .*/stale/ck/step-10 at step 10"
'

test_expect_success 'the registry lists only the job own checkpoints; every step ran' '
    test "$(jget "[(c[\"step\"], c[\"attempt\"]) for c in j[\"checkpoints\"]]" <stale.json)" = "[[10, 1], [20, 2]]" &&
    test "$(final_sha $(cat stale.job))" = "$(cat ref.sha)" &&
    test -f stale/ck/step-50/COMPLETE
'

test_expect_success '--resume-from JOB: attempt 1 resumes from that job latest checkpoint' '
    old=$(cat old.job) &&
    id=$(ddp_submit cont --resume-from $old -- "${TRAIN[@]}" --crash-at 25 2>warn) &&
    echo $id >cont.job && ! test -s warn &&
    wait_job_state $id SUCCEEDED 150 &&
    ls_cli show $id --json >cont.json &&
    test "$(jget "j[\"resume_from\"]" <cont.json)" = "$TEST_DIR/old/ck/step-20" &&
    test "$(jget "j[\"resume_from_step\"]" <cont.json)" = 20 &&
    test "$(jget "j[\"resume_from_job\"]" <cont.json)" = $old &&
    test "$(jget "j[\"attempts\"][0][\"resume_step\"]" <cont.json)" = 20 &&
    test "$(jget "j[\"attempts\"][0][\"resume_from\"]" <cont.json)" = "$TEST_DIR/old/ck/step-20" &&
    ls_cli logs $id --rank 0 --attempt 1 | grep -q "resumed from .*/old/ck/step-20 at step 20"
'

test_expect_success '... and a restart before the job has its own resumes from it again' '
    id=$(cat cont.job) &&
    test "$(jget "len(j[\"attempts\"])" <cont.json)" = 2 &&
    test "$(jget "j[\"attempts\"][1][\"resume_from\"]" <cont.json)" = "$TEST_DIR/old/ck/step-20" &&
    ls_cli logs $id --rank 0 --attempt 2 | grep -q "resumed from .*/old/ck/step-20 at step 20" &&
    test "$(final_sha $id)" = "$(cat ref.sha)"
'

test_expect_success 'show says what the job continues from' '
    ls_cli show $(cat cont.job) >cont.txt &&
    grep -q "resumes: *$TEST_DIR/old/ck/step-20 (step 20, job $(cat old.job).s latest)" cont.txt
'

test_expect_success '--resume-from PATH: attempt 1 resumes from it' '
    id=$(ddp_submit cont2 --resume-from "$TEST_DIR/old/ck/step-10" -- \
        --steps 12 --ckpt-every 10) &&
    wait_job_state $id SUCCEEDED 150 &&
    ls_cli show $id --json >cont2.json &&
    test "$(jget "j[\"resume_from\"]" <cont2.json)" = "$TEST_DIR/old/ck/step-10" &&
    test "$(jget "j[\"resume_from_job\"]" <cont2.json)" = 0 &&
    test "$(jget "j[\"attempts\"][0][\"resume_step\"]" <cont2.json)" = 10 &&
    ls_cli logs $id --rank 0 --attempt 1 | grep -q "resumed from .*/old/ck/step-10 at step 10"
'

test_expect_success 'a --resume-from PATH that does not exist is refused' '
    { ls_cli submit --resume-from "$TEST_DIR/nope/step-5" -- true 2>err; rc=$?; } ;
    cat err && test $rc = 2 && grep -q "nope/step-5.: No such file or directory" err
'

test_expect_success 'a --resume-from JOB that does not exist is refused' '
    ! ls_cli submit --resume-from 99999 -- true 2>err &&
    cat err && grep -q "no job 99999" err
'

test_expect_success 'a --resume-from JOB without a checkpoint is refused' '
    id=$(submit_id --checkpoint-dir "$TEST_DIR/none/ck" -- true) &&
    wait_job_state $id SUCCEEDED 60 &&
    ! ls_cli submit --resume-from $id -- true 2>err &&
    cat err && grep -q "job $id has no complete checkpoint to resume from" err
'

test_done
