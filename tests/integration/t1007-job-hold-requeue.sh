#!/bin/bash
# t1007: lockstep hold / release / requeue with real agents and ranks. A
# held job stays PENDING with its reason while nodes are free, also across
# a scheduler kill -9 and restart, and runs once released; a held job can
# still be cancelled. A requeued checkpointing DDP job checkpoints at a
# common step first, its attempt ends "requeued" (not a failure: no budget
# spent, so --max-restarts 0 still succeeds), and the next attempt resumes
# from that checkpoint. The --json replies are the job object of
# docs/api.md; what cannot be done is a 409 with a code; another user's
# job is refused (403).
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2

http() { # METHOD PATH [TOKEN] [BODY] -> prints "STATUS BODY"
    local args=(-s -o "$TEST_DIR/.body" -w "%{http_code}" -X "$1")
    [ -n "${3:-}" ] && args+=(-H "Authorization: Bearer $3")
    [ -n "${4:-}" ] && args+=(-H "Content-Type: application/json" -d "$4")
    local code
    code=$(curl "${args[@]}" "$LOCKSTEP_URL$2")
    echo "$code $(cat "$TEST_DIR/.body")"
}

# err_code JSON: the error's code of a reply body.
err_code() {
    jget 'j["error"]["code"]'
}

ME=$(id -un)

# requeued_events JOB: the "requeued" field of each job_pending event.
requeued_events() {
    db_query "SELECT json_extract(detail, '$.requeued') FROM events WHERE subject = 'job/$1' AND kind = 'job_pending'"
}

test_expect_success 'setup: 2 nodes; a blocker fills both, job B pends behind it' '
    wait_nodes_up 2 &&
    blocker=$(submit_id --nodes 2 --ranks-per-node 8 -- sleep 600) && echo $blocker >blocker.id &&
    wait_job_state $blocker RUNNING 30 &&
    b=$(submit_id --nodes 2 -- sh -c "echo ran-b") && echo $b >b.id &&
    wait_for 10 "test \"\$(job_json $b \"j[\\\"reason\\\"]\")\" != \"\"" &&
    test "$(job_state $b)" = PENDING
'

test_expect_success 'hold --json: the job object, PENDING, held_by and the reason' '
    b=$(cat b.id) &&
    ls_cli hold $b --json >hold.json && cat hold.json &&
    test "$(jget "j[\"id\"]" <hold.json)" = $b &&
    test "$(jget "j[\"state\"]" <hold.json)" = PENDING &&
    test "$(jget "j[\"held_by\"]" <hold.json)" = "$ME" &&
    test "$(jget "j[\"reason\"]" <hold.json)" = "held by $ME" &&
    test "$(jget "len(j[\"attempts\"])" <hold.json)" = 0 &&
    ls_cli hold $b >hold.txt && cat hold.txt &&
    grep -qx "job $b is held (PENDING); lockstep release $b lets it run" hold.txt &&
    test "$(db_events job/$b | grep -c job_held)" = 1
'

test_expect_success 'the nodes free up; a later job runs, the held one stays PENDING with its reason' '
    ls_cli cancel $(cat blocker.id) &&
    wait_until 20 nodes_idle &&
    pass=$(submit_id -- true) && wait_job_state $pass SUCCEEDED 30 &&
    b=$(cat b.id) &&
    test "$(job_state $b)" = PENDING &&
    test "$(job_json $b "j[\"reason\"]")" = "held by $ME" &&
    ls_cli jobs >jobs.txt && cat jobs.txt && grep "^ *$b " jobs.txt | grep -q "held by $ME"
'

test_expect_success 'the hold survives kill -9 of the scheduler and a restart' '
    kill_scheduler && start_scheduler && wait_nodes_up 2 &&
    pass=$(submit_id -- true) && wait_job_state $pass SUCCEEDED 30 &&
    b=$(cat b.id) &&
    test "$(job_state $b)" = PENDING &&
    test "$(job_json $b "j[\"held_by\"]")" = "$ME" &&
    test "$(job_json $b "j[\"reason\"]")" = "held by $ME" &&
    test "$(db_query "SELECT held_by FROM jobs WHERE id = $b")" = "$ME"
'

test_expect_success 'release --json: not held any more; the job runs and succeeds' '
    b=$(cat b.id) &&
    ls_cli release $b --json >release.json && cat release.json &&
    test "$(jget "j[\"held_by\"]" <release.json)" = "" &&
    test "$(jget "j[\"state\"]" <release.json)" = PENDING &&
    wait_job_state $b SUCCEEDED 30 &&
    test "$(db_events job/$b | grep -c job_released)" = 1 &&
    test "$(job_json $b "j[\"held_by\"]")" = ""
'

test_expect_success 'release of a job not held: 409 not_held, exit 1' '
    b=$(cat b.id) &&
    ls_cli release $b >out.txt 2>err.txt; rc=$?; cat err.txt &&
    test $rc = 1 && grep -q "job $b already ended: SUCCEEDED" err.txt &&
    id=$(submit_id -- sleep 600) && echo $id >run.id &&
    wait_job_state $id RUNNING 30 &&
    ls_cli release $id 2>err.txt; rc=$?; cat err.txt &&
    test $rc = 1 && grep -q "job $id is not held (RUNNING)" err.txt
'

test_expect_success 'hold of a running job: 409 not_queued, pointing at requeue or cancel' '
    id=$(cat run.id) &&
    ls_cli hold $id 2>err.txt; rc=$?; cat err.txt &&
    test $rc = 1 && grep -q "lockstep requeue --hold $id" err.txt &&
    grep -q "or cancel it" err.txt &&
    test "$(job_state $id)" = RUNNING
'

test_expect_success 'the 409 codes over HTTP: not_queued, not_held, not_running, ended' '
    ls_cli token create --user ops --role operator --json | jget "j[\"token\"]" >ops.tok &&
    id=$(cat run.id) && b=$(cat b.id) &&
    http POST /v1/jobs/$id/hold $(cat ops.tok) >r1 && cat r1 &&
    test "$(cut -d" " -f1 r1)" = 409 &&
    test "$(cut -d" " -f2- r1 | err_code)" = not_queued &&
    http POST /v1/jobs/$id/release $(cat ops.tok) >r2 &&
    test "$(cut -d" " -f2- r2 | err_code)" = not_held &&
    http POST /v1/jobs/$b/requeue $(cat ops.tok) >r3 && cat r3 &&
    test "$(cut -d" " -f1 r3)" = 409 &&
    test "$(cut -d" " -f2- r3 | err_code)" = ended &&
    http POST /v1/jobs/999999/hold $(cat ops.tok) | grep -q "^404 "
'

test_expect_success 'a held job can be cancelled; requeue of a pending job is 409 not_running' '
    id=$(cat run.id) &&
    p=$(submit_id --nodes 3 --wait-for-nodes -- true) && echo $p >p.id &&
    ls_cli hold $p >/dev/null &&
    ls_cli requeue $p 2>err.txt; rc=$?; cat err.txt &&
    test $rc = 1 && grep -q "is PENDING, not running" err.txt &&
    http POST /v1/jobs/$p/requeue $(cat ops.tok) | cut -d" " -f2- | err_code | grep -qx not_running &&
    ls_cli cancel $p &&
    test "$(job_state $p)" = CANCELLED &&
    ls_cli cancel $id && wait_until 20 nodes_idle
'

test_expect_success 'another user cannot hold, release or requeue the job (403); its owner can' '
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    ls_cli token create --user bob --role user --json | jget "j[\"token\"]" >bob.tok &&
    a=$(LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli submit --json --nodes 3 --wait-for-nodes -- true | jget "j[\"id\"]") &&
    echo $a >alice.id &&
    test "$(http POST /v1/jobs/$a/hold $(cat bob.tok) | cut -d" " -f1)" = 403 &&
    test "$(http POST /v1/jobs/$a/requeue $(cat bob.tok) | cut -d" " -f1)" = 403 &&
    test "$(job_json $a "j[\"held_by\"]")" = "" &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) ls_cli hold $a &&
    test "$(job_json $a "j[\"held_by\"]")" = alice &&
    test "$(http POST /v1/jobs/$a/release $(cat bob.tok) | cut -d" " -f1)" = 403 &&
    test "$(http POST /v1/jobs/$a/release $(cat ops.tok) | cut -d" " -f1)" = 200 &&
    test "$(job_json $a "j[\"held_by\"]")" = "" &&
    ls_cli cancel $a
'

test_expect_success 'requeue of a running DDP job that checkpoints: a checkpoint first, then PENDING' '
    id=$(cadence_submit rq 2 2 --max-restarts 0 --max-infra-restarts 0 -- \
        --steps 400 --step-time 0.03) && echo $id >rq.id &&
    wait_job_state $id RUNNING 60 &&
    # Once the attempt has a step rate (a checkpoint can be asked for).
    wait_for 30 "ls_cli checkpoint $id --json >ready.json" &&
    ls_cli requeue $id --json >rq.json &&
    jget "j[\"attempts\"][-1][\"stop\"]" <rq.json &&
    test "$(jget "j[\"attempts\"][-1][\"stop\"][\"kind\"]" <rq.json)" = requeue &&
    test "$(jget "j[\"attempts\"][-1][\"stop\"][\"hold\"]" <rq.json)" = False &&
    jget "j[\"attempts\"][-1][\"stop\"][\"checkpoint_step\"]" <rq.json >rq.step &&
    wait_for 150 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_job_state $id RUNNING 60
'

test_expect_success 'attempt 1 ended "requeued", no budget spent; attempt 2 resumed from that checkpoint' '
    id=$(cat rq.id) &&
    ls_cli show $id --json >rq-show.json &&
    test "$(jget "j[\"attempts\"][0][\"state\"]" <rq-show.json)" = CANCELLED &&
    test "$(jget "j[\"attempts\"][0][\"reason\"]" <rq-show.json)" = "requeued by $ME" &&
    test "$(jget "j[\"restarts\"]" <rq-show.json)" = 0 &&
    test "$(jget "j[\"infra_restarts\"]" <rq-show.json)" = 0 &&
    resumed=$(jget "j[\"attempts\"][1][\"resume_step\"]" <rq-show.json) &&
    echo "asked $(cat rq.step), resumed $resumed" &&
    test "$resumed" -ge "$(cat rq.step)" &&
    test "$resumed" = "$(records rq "max(r[\"ckpt_steps\"][-1] for r in recs if r[\"attempt\"] == 1)")" &&
    ls_cli show $id >rq-show.txt && grep -q "reason: *requeued by $ME" rq-show.txt &&
    db_events job/$id | grep -q "job_pending" &&
    test "$(requeued_events $id)" = 1 &&
    ! db_events job/$id | grep -q job_failure
'

test_expect_success 'the requeued job with --max-restarts 0 succeeds, every step run once after the resume' '
    id=$(cat rq.id) &&
    wait_job_state $id SUCCEEDED 120 &&
    resumed=$(job_json $id "j[\"attempts\"][1][\"resume_step\"]") &&
    test "$(records rq "sorted(set(r[\"first_step\"] for r in recs if r[\"attempt\"] == 2))")" = "[$((resumed + 1))]" &&
    test "$(records rq "sorted(set(r[\"last_step\"] for r in recs if r[\"attempt\"] == 2))")" = "[400]"
'

test_expect_success 'requeue --hold --now of a job without steps: PENDING and held at once; release runs attempt 2' '
    id=$(submit_id --max-restarts 0 -- sleep 600) &&
    wait_job_state $id RUNNING 30 &&
    ls_cli requeue --hold --now $id --json >rqh.json && cat rqh.json &&
    test "$(jget "j[\"state\"]" <rqh.json)" = PENDING &&
    test "$(jget "j[\"held_by\"]" <rqh.json)" = "$ME" &&
    test "$(jget "j[\"attempts\"][0][\"reason\"]" <rqh.json)" = "requeued by $ME" &&
    wait_until 20 nodes_idle && sleep 1 &&
    test "$(job_state $id)" = PENDING &&
    ls_cli release $id >/dev/null &&
    wait_for 30 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_job_state $id RUNNING 30 &&
    test "$(job_json $id "j[\"restarts\"]")" = 0 &&
    ls_cli requeue $id >rq2.txt && cat rq2.txt &&
    grep -q "^requeued job $id (PENDING): requeued by $ME; starts again from the beginning" rq2.txt &&
    ls_cli cancel $id
'

test_done
