#!/bin/bash
# t4103: SIGSTOP of one rank (a hang): the watchdog fires after the job's
# --hang-timeout, stack dumps of every rank are kept as evidence (the
# stopped rank shows state T), the job restarts and finishes with the same
# final parameters. A job that reports no steps is watched through its
# output instead, and the evidence says which the watchdog used.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.15)

test_reference_run

test_expect_success 'a DDP job reporting steps through the SDK runs' '
    ddp_running 2 hang --hang-timeout 4 -- "${TRAIN[@]}" --sdk &&
    wait_for 90 "ckpt_complete hang 10"
'

test_expect_success 'SIGSTOP rank 1: the watchdog fires and the job restarts' '
    pid=$(rank_pid $(cat job) 1) && test -n "$pid" &&
    kill -STOP $pid && date +%s%3N >stopped_at &&
    wait_for 30 "test \$(job_json $(cat job) \"len(j[\\\"attempts\\\"])\") -ge 2"
'

test_expect_success 'the hang is recorded with the source and stack dumps' '
    ls_cli show $(cat job) --json >show.json &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <show.json)" = hang &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"source\"]" <show.json)" = step &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"idle_ms\"] >= 4000" <show.json)" = True &&
    test "$(jget "len(j[\"attempts\"][0][\"failure\"][\"dumps\"])" <show.json)" -ge 1 &&
    jget "\"\\n\".join(d[\"dump\"] for d in j[\"attempts\"][0][\"failure\"][\"dumps\"] if d[\"rank\"] == 1)" <show.json >dump1 &&
    cat dump1 && grep -qE "State: *T|state T|\(stopped\)| T " dump1
'

test_expect_success 'the ranks that were not stopped dumped their Python stacks' '
    ls_cli logs $(cat job) --rank 0 --attempt 1 --stream err >err0 &&
    # the faulthandler dump: "Thread 0x..." / "Current thread 0x..." headers
    # and frames; a rank caught collecting garbage shows no frame
    # ("Garbage-collecting", "<no Python frame>") but still its header.
    grep -qE "Thread 0x|Current thread 0x|File \"" err0
'

test_expect_success 'the job finishes with the same final parameters' '
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)" &&
    stop_watch && one_attempt_at_a_time $(cat job)
'

test_expect_success 'a job that reports nothing is watched through its output' '
    id=$(submit_id --hang-timeout 3 --max-infra-restarts 0 -- sh -c \
        "for i in 1 2 3; do echo tick \$i; sleep 0.5; done; sleep 1000") &&
    wait_job_state $id FAILED 30 &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = hang &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"source\"]")" = output &&
    wait_until 10 job_gone $id && echo $id >quiet_job
'

test_expect_success 'a hung rank has no exit status, and show says so' '
    id=$(cat quiet_job) &&
    test "$(job_json $id "j[\"exit_code\"] is None and j[\"signal\"] is None")" = True &&
    test "$(job_json $id "\"exit_code\" in j[\"attempts\"][0][\"failure\"]")" = False &&
    ls_cli show $id >show.txt && cat show.txt &&
    grep -q "failure: *rank 0, no exit status (hang)" show.txt &&
    ! grep -q "exit code 0" show.txt
'

test_done
