#!/bin/bash
# t0010: `deploy/local-cluster.sh up --schedulers 3` starts three
# replicas of lockstepd, replica i under DIR/scheduler<i>/ with the files
# a single scheduler has under DIR/scheduler/, and DIR/env names them
# all; a job runs; the leader is killed and another replica serves, the
# job still on its first attempt, its output from before shipped to the
# new leader by the agents; `up` again restarts the dead replica;
# `down` stops everything; `up --seed-from` starts a new replica set
# from the stopped one's database.
. "$(dirname "$0")/../lib/harness.sh"

LC=$SRC_DIR/deploy/local-cluster.sh
DIR=$TEST_DIR/lc

lc() { LOCKSTEP_BUILD=$BUILD_DIR "$LC" "$@"; }

test_expect_success 'up --schedulers 3: three replicas and their files' '
    lc up --dir "$DIR" --nodes 2 --schedulers 3 >up.out && cat up.out &&
    for i in 1 2 3; do
        for f in lockstepd.conf state lockstepd.sock port pid log; do
            test -e "$DIR/scheduler$i/$f" || { echo "no $f in scheduler$i"; return 1; }
        done
    done &&
    test ! -e "$DIR/scheduler" &&
    . "$DIR/env" && echo "$LOCKSTEP_SERVER" | grep -q "scheduler3/lockstepd.sock" &&
    ls_cli replicas >rep.out && cat rep.out && test "$(grep -c voter rep.out)" = 3
'

test_expect_success 'a job runs; the leader is killed; another serves; the job goes on' '
    . "$DIR/env" &&
    id=$(submit_id --name lc-job --nodes 2 -- sh -c "echo before-failover; sleep 300") &&
    echo "$id" >job &&
    wait_job_state "$id" RUNNING 30 &&
    wait_for 30 "ls_cli logs $id | grep -q before-failover" &&
    leader=$(ls_cli replicas --json | jget "j[\"leader_id\"]") &&
    kill -9 "$(cat "$DIR/scheduler$leader/pid")" &&
    wait_until 30 ls_cli jobs &&
    test "$(ls_cli replicas --json | jget "j[\"leader_id\"]")" != "$leader" &&
    test "$(job_state "$id")" = RUNNING &&
    test "$(job_json "$id" "j[\"attempt\"]")" = 1 &&
    echo "$leader" >killed
'

test_expect_success 'the running job'"'"'s output before the failover is shipped again' '
    wait_for 30 "ls_cli logs $(cat job) | grep -q before-failover"
'

test_expect_success 'up again restarts the dead replica; status shows all' '
    lc up --dir "$DIR" >up2.out && cat up2.out &&
    grep -q "started scheduler replica $(cat killed)" up2.out &&
    lc status --dir "$DIR" >st.out && cat st.out &&
    test "$(grep -c "^scheduler[123] .*running" st.out)" = 3
'

test_expect_success 'down stops every daemon and the job' '
    lc down --dir "$DIR" >down.out && cat down.out &&
    test "$(grep -c "stopped scheduler[123]" down.out)" = 3 &&
    ! lc status --dir "$DIR" >/dev/null &&
    wait_until 20 job_gone "$(cat job)"
'

test_expect_success 'up --seed-from: a new replica set starts from that state' '
    lc up --dir "$TEST_DIR/seeded" --nodes 1 --schedulers 3 \
        --seed-from "$DIR/scheduler1/state/lockstep.db" >up3.out &&
    cat up3.out && grep -q "seeded the replica set" "$TEST_DIR/seeded/scheduler1/log" &&
    (. "$TEST_DIR/seeded/env" && ls_cli jobs --all --json) >jobs.json &&
    jget "[x[\"name\"] for x in j]" <jobs.json | grep -q lc-job &&
    (. "$TEST_DIR/seeded/env" && ls_cli replicas) >rep3.out &&
    test "$(grep -c voter rep3.out)" = 3 &&
    ! lc up --dir "$TEST_DIR/seeded" --seed-from "$DIR/scheduler1/state/lockstep.db" 2>err &&
    grep -q "new --dir" err &&
    lc down --dir "$TEST_DIR/seeded" >/dev/null
'

test_done
