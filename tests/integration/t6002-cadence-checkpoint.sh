#!/bin/bash
# t6002: synchronized checkpoints with real PyTorch DDP (gloo) ranks:
# with --checkpoint-every every rank checkpoints at the same steps; a
# checkpoint a rank died in is never complete and never resumed from, and
# the run still ends bitwise equal to an uninterrupted one; `lockstep
# checkpoint --wait` and `cordon --evict` take a checkpoint at a common
# step first (the evicted job resumes from it elsewhere).
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2

test_expect_success 'reference: an uninterrupted 2x2 run of 300 steps' '
    d=$TEST_DIR/ref && mkdir -p $d &&
    port=$("$PY" -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])") &&
    for r in 0 1 2 3; do
        RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            LOCKSTEP_CHECKPOINT_DIR=$d/ck PYTHONPATH=$SRC_DIR/sdk/python \
            "$PY" "$CADENCE_TRAIN" --out $d/rec --steps 300 --step-time 0 \
            >$d/rank-$r.log 2>&1 &
        EXTRA_PIDS+=($!)
    done &&
    wait_for 120 "grep -q \"final sha256\" $d/rank-0.log" &&
    sed -n "s/.*final sha256 //p" $d/rank-0.log >ref.sha && cat ref.sha
'

test_expect_success 'a 2x2 job with --checkpoint-every 60steps; rank 1 dies in its 2nd checkpoint' '
    id=$(cadence_submit ck 2 2 --checkpoint-every 60steps -- --steps 300 \
        --step-time 0.02 --die-in-checkpoint 2) && echo $id >ck.id &&
    wait_job_state $id SUCCEEDED 240
'

test_expect_success 'attempt 1: every rank was told to checkpoint at the same steps' '
    test "$(records ck "len(set(tuple(r[\"ckpt_steps\"]) for r in recs if r[\"attempt\"] == 1))")" = 1 &&
    test "$(records ck "all(s % 60 == 0 for r in recs for s in r[\"ckpt_steps\"])")" = True
'

test_expect_success 'the checkpoint rank 1 died in never completed; attempt 2 resumed from the one before' '
    died=$(records ck "[r for r in recs if r[\"attempt\"] == 1 and r[\"rank\"] == 1][0][\"ckpt_steps\"][1]") &&
    before=$(records ck "[r for r in recs if r[\"attempt\"] == 1 and r[\"rank\"] == 1][0][\"ckpt_steps\"][0]") &&
    echo "died in $died, resumed from $before" &&
    job_json $(cat ck.id) "[(c[\"step\"], c[\"attempt\"]) for c in j[\"checkpoints\"]]" >cks && cat cks &&
    ! grep -qF "[$died, 1]" cks &&
    test "$(job_json $(cat ck.id) "j[\"attempts\"][1][\"resume_step\"]")" = "$before"
'

test_expect_success 'the run ends bitwise equal to the uninterrupted one' '
    test "$(ls_cli logs $(cat ck.id) --rank 0 | sed -n "s/.*final sha256 //p" | tail -n 1)" = "$(cat ref.sha)"
'

test_expect_success 'lockstep checkpoint --wait: a complete checkpoint at a common step' '
    id=$(cadence_submit now 2 1 -- --steps 100000 --step-time 0.02) &&
    echo $id >now.id && wait_job_state $id RUNNING 60 &&
    wait_for 30 "ls_cli checkpoint $id --json >now.json" &&
    step=$(jget "j[\"step\"]" <now.json) && echo $step >now.step &&
    ls_cli checkpoint $id --wait --timeout 60 &&
    test "$(job_json $id "max(c[\"step\"] for c in j[\"checkpoints\"])")" -ge "$step" &&
    test "$(records now "len(set(tuple(r[\"ckpt_steps\"]) for r in recs))")" = 1
'

test_expect_success 'cordon --evict: a checkpoint first, then the job moves and resumes from it' '
    id=$(cat now.id) &&
    node=$(job_json $id "j[\"attempts\"][-1][\"nodes\"][0][\"node\"]") &&
    start_agent n3 && wait_nodes_up 3 &&
    ls_cli cordon $node --evict --reason maintenance &&
    wait_for 60 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_job_state $id RUNNING 60 &&
    resumed=$(job_json $id "j[\"attempts\"][1][\"resume_step\"]") &&
    last=$(records now "max(r[\"last_step\"] for r in recs if r[\"attempt\"] == 1)") &&
    evict=$(records now "max(r[\"ckpt_steps\"][-1] for r in recs if r[\"attempt\"] == 1)") &&
    echo "resumed from $resumed; attempt 1 checkpointed $evict, reached $last" &&
    test "$resumed" = "$evict" &&
    test "$resumed" -gt "$(cat now.step)" &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_excluded &&
    ls_cli uncordon $node
'

test_expect_success 'cancel --checkpoint: every rank checkpoints, then the job is cancelled' '
    id=$(cat now.id) && wait_job_state $id RUNNING 60 &&
    # Once the attempt has a step rate (a checkpoint can be asked for).
    wait_for 30 "ls_cli checkpoint $id --json >ready.json" &&
    ls_cli cancel --checkpoint $id >cancel.txt && cat cancel.txt &&
    grep -q "is cancelled once every rank has checkpointed step" cancel.txt &&
    want=$(sed -n "s/.*checkpointed step \([0-9]*\)$/\1/p" cancel.txt) &&
    wait_job_state $id CANCELLED 150 &&
    test "$(job_json $id "max(c[\"step\"] for c in j[\"checkpoints\"])")" -ge "$want"
'

test_expect_success 'cancel --checkpoint of a job that reports no steps cancels it at once' '
    id=$(submit_id -- sleep 600) && wait_job_state $id RUNNING 30 &&
    ls_cli cancel --checkpoint $id | grep -q "^cancelled job $id$" &&
    test "$(job_state $id)" = CANCELLED
'

test_done
