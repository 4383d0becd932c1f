#!/bin/bash
# t1030: per-user running jobs and the stored output per job. A user at
# user_max_running_jobs has the rest of their jobs wait with a reason
# naming the limit, others are unaffected, and a job ending makes room. A
# job whose output passes log_max_bytes_per_job keeps its newest output:
# the oldest is dropped in whole blocks (so the first line kept may be the
# end of one), `lockstep logs` says how much where it was, and the
# scheduler's disk holds no more than the cap.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler -o user_max_running_jobs=2 -o log_max_bytes_per_job=65536
start_agent n1

as() { # USER CLI-ARGS...: the CLI over TCP with USER's token
    local u=$1
    shift
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat $u.tok) ls_cli "$@"
}

reason() {
    ls_cli show "$1" --json | jget 'j["reason"]'
}

test_expect_success 'tokens for alice and bob; the node is UP' '
    wait_nodes_up 1 &&
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    ls_cli token create --user bob --role user --json | jget "j[\"token\"]" >bob.tok
'

test_expect_success 'alice submits 4: 2 run, 2 wait naming the limit' '
    for i in 1 2 3 4; do
        as alice submit --json -- sleep 60 | jget "j[\"id\"]" >>alice.ids || return 1
    done &&
    wait_until 20 job_state_is $(sed -n 2p alice.ids) RUNNING &&
    job_state_is $(sed -n 1p alice.ids) RUNNING &&
    for id in $(sed -n 3,4p alice.ids); do
        wait_for 10 "test \"\$(reason $id)\" = \"user alice has 2 running jobs; the limit is 2 (user_max_running_jobs)\"" &&
        job_state_is $id PENDING || return 1
    done &&
    as alice jobs | grep -q "user alice has 2 running jobs"
'

test_expect_success 'bob is unaffected' '
    id=$(as bob submit --json -- sleep 60 | jget "j[\"id\"]") &&
    wait_job_state $id RUNNING && echo $id >bob.id
'

test_expect_success 'a job of hers queued behind a blocked one names the limit too' '
    big=$(as bob submit --json --cpus-per-rank 8 -- sleep 60 | jget "j[\"id\"]") &&
    wait_for 10 "test \"\$(reason $big)\" != \"\"" &&
    id=$(as alice submit --json -- sleep 60 | jget "j[\"id\"]") &&
    { wait_for 10 "test \"\$(reason $id)\" = \"user alice has 2 running jobs; the limit is 2 (user_max_running_jobs)\""
      rc=$?; ls_cli cancel $big $id; test $rc = 0; }
'

test_expect_success 'an ended job of alice makes room for her next' '
    ls_cli cancel $(sed -n 1p alice.ids) &&
    wait_job_state $(sed -n 3p alice.ids) RUNNING &&
    job_state_is $(sed -n 4p alice.ids) PENDING &&
    ls_cli cancel $(sed -n 2p alice.ids) $(sed -n 3p alice.ids) $(cat bob.id) &&
    wait_job_state $(sed -n 4p alice.ids) RUNNING &&
    ls_cli cancel $(sed -n 4p alice.ids)
'

test_expect_success 'a job over log_max_bytes_per_job keeps its newest output' '
    id=$(submit_id -- seq 1 60000) && echo $id >big.id &&
    wait_job_state $id SUCCEEDED 60 &&
    wait_for 20 "ls_cli logs $id | tail -n 1 | grep -qx 60000" &&
    ls_cli logs $id >big.txt && head -n 2 big.txt &&
    dropped=$(sed -n "1s/^\[lockstep: \([0-9]*\) bytes of older output were dropped: the job.s stored output is capped (log_max_bytes_per_job)\]$/\1/p" big.txt) &&
    test -n "$dropped" &&
    total=$(seq 1 60000 | wc -c) &&
    kept=$(($(tail -n +2 big.txt | wc -c))) &&
    test $((dropped + kept)) = "$total" &&
    test "$kept" -le 65536 && test "$kept" -ge 40000 &&
    part=$(sed -n 2p big.txt) && first=$(sed -n 3p big.txt) &&
    case $((first - 1)) in *"$part") ;; *) false ;; esac &&
    seq "$first" 60000 | diff - <(tail -n +3 big.txt)
'

test_expect_success 'the scheduler holds no more than the cap on its disk' '
    du -k -s "$TEST_DIR/sched/state/logs/$(cat big.id)" &&
    test "$(du -k -s "$TEST_DIR/sched/state/logs/$(cat big.id)" | cut -f1)" -le 80
'

test_expect_success 'a cap below 64 KiB is a configuration error' '
    "$LOCKSTEPD" -o cluster_secret_file="$CLUSTER_SECRET" \
        -o log_max_bytes_per_job=1000 --check-config 2>err.txt; rc=$? &&
    cat err.txt && test $rc = 78 && grep -q "below 65536" err.txt
'

test_done
