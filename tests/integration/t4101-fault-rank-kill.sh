#!/bin/bash
# t4101: kill -9 of one rank of a PyTorch DDP job (2 nodes x 2 ranks, gloo)
# mid-run: the job restarts from the latest complete checkpoint and
# finishes, and its final parameters are bitwise identical to an
# uninterrupted run of the same script.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.15)

test_reference_run 'reference: an uninterrupted run of the script'

test_expect_success 'the DDP job runs on both nodes' '
    ddp_running 2 crash -- "${TRAIN[@]}"
'

test_expect_success 'kill -9 rank 3 after checkpoint 10 is complete' '
    wait_for 90 "ckpt_complete crash 10" &&
    pid=$(rank_pid $(cat job) 3) && test -n "$pid" &&
    kill -9 $pid
'

test_expect_success 'the job restarts and ends SUCCEEDED' '
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 2
'

test_expect_success 'the failure is recorded with its evidence' '
    ls_cli show $(cat job) --json >show.json &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <show.json)" = rank_exit &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"rank\"]" <show.json)" = 3 &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"signal\"]" <show.json)" = 9 &&
    test "$(jget "j[\"restarts\"] + j[\"infra_restarts\"]" <show.json)" = 1 &&
    test "$(jget "sorted(set(r[\"state\"] for r in j[\"attempts\"][0][\"ranks\"]))" <show.json)" = "[\"exited\"]" &&
    db_events job/$(cat job) | grep -q "job_failure"
'

test_expect_success 'attempt 2 resumed from a complete checkpoint' '
    step=$(jget "j[\"attempts\"][1][\"resume_step\"]" <show.json) &&
    test "$step" -ge 10 &&
    test -f "crash/ck/step-$step/COMPLETE" &&
    test "$(jget "j[\"attempts\"][1][\"resume_from\"]" <show.json)" = \
        "$TEST_DIR/crash/ck/step-$step" &&
    ls_cli logs $(cat job) --rank 0 --attempt 2 | grep -q "resumed from .*step-$step"
'

test_expect_success 'final parameters are bitwise identical to the reference' '
    got=$(final_sha $(cat job)) && echo "got $got want $(cat ref.sha)" &&
    test -n "$got" && test "$got" = "$(cat ref.sha)"
'

test_expect_success 'never two attempts alive at once' '
    stop_watch &&
    cat watch-$(cat job) && one_attempt_at_a_time $(cat job) &&
    test "$(attempts_seen $(cat job))" = "1 2 "
'

test_expect_success 'show explains the restart' '
    ls_cli show $(cat job) >show.txt &&
    grep -q "rank_exit" show.txt && grep -q "resumed:   from step" show.txt &&
    grep -q "ETTR" show.txt
'

test_done
