#!/bin/bash
# t1005: waiting shows progress. `submit --wait` on a job that pends
# (waiting for a second node), runs, restarts once (a rank exits non-zero
# on attempt 1) and succeeds prints each of those changes on stderr, in
# order, and the outcome on stdout; Ctrl-C ends the wait, not the job, and
# says how to cancel it; `logs --follow` says when the job is pending and
# exits with the job's outcome; plain `submit` says how to follow the job.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

# in_order FILE PATTERN...: each PATTERN (grep -E) matches a line of FILE,
# each on a later line than the one before.
in_order() {
    local file=$1 last=0 n
    shift
    for pat in "$@"; do
        n=$(grep -nE -- "$pat" "$file" | awk -F: -v l="$last" '$1 > l { print $1; exit }')
        if [ -z "$n" ]; then
            echo "no line after line $last matches: $pat" >&2
            return 1
        fi
        last=$n
    done
}

# The job: every rank of attempt 1 (no marker yet) waits for the file
# go1, then exits 3; attempt 2 waits for go2 and succeeds. The test makes
# each file only once submit --wait has said that attempt is RUNNING, so
# no poll can miss a state however loaded the machine (each wait gives up
# after 120 s).
JOB='if [ -e marker ]; then f=go2; else f=go1; fi; i=0
while [ ! -e $f ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
[ $f = go2 ] && exit 0; touch marker; exit 3'

test_expect_success 'one node is up' 'wait_nodes_up 1'

test_expect_success 'submit --wait of a 2-node job: it pends and says why' '
    mkdir -p w || return 1
    "$CLI" submit --wait --wait-for-nodes --nodes 2 --max-restarts 2 \
        --workdir "$TEST_DIR/w" -- sh -c "$JOB" >wait.out 2>wait.err &
    WAIT_PID=$! && EXTRA_PIDS+=("$WAIT_PID") &&
    wait_for 20 "grep -q \"PENDING: .*2 nodes\" wait.err" && cat wait.err
'

test_expect_success 'a second node joins: it runs, restarts once and succeeds' '
    start_agent n2 &&
    wait_for 120 "grep -q \"RUNNING (attempt 1)\" wait.err" && touch w/go1 &&
    wait_for 120 "grep -q \"RUNNING (attempt 2)\" wait.err" && touch w/go2 &&
    wait $WAIT_PID; rc=$?; cat wait.err wait.out; test $rc = 0 &&
    id=$(sed -n "s/^submitted job \([0-9]*\)$/\1/p" wait.err) &&
    test -n "$id" && echo $id >job &&
    test "$(cat wait.out)" = "job $id SUCCEEDED"
'

test_expect_success 'stderr told each change, in order' '
    id=$(cat job) &&
    in_order wait.err "^submitted job $id$" \
        "^job $id PENDING: needs 2 nodes.*the cluster has 1 node" \
        "^job $id PLACED on n[12], n[12] \(attempt 1\)$" \
        "^job $id RUNNING \(attempt 1\)$" \
        "^job $id RESTARTING after attempt 1: .*(exit|code).*3" \
        "^job $id PLACED on n[12], n[12] \(attempt 2\)$" \
        "^job $id RUNNING \(attempt 2\)$" &&
    test "$(grep -c RESTARTING wait.err)" = 1 &&
    ! grep -q SUCCEEDED wait.err
'

test_expect_success 'logs --follow of the succeeded job exits 0' '
    ls_cli logs -f $(cat job) >/dev/null 2>logs.err; rc=$?; cat logs.err;
    test $rc = 0
'

test_expect_success 'logs --follow of a failed job exits non-zero, saying why' '
    id=$(submit_id --max-restarts 0 -- sh -c "echo out-t1005; exit 4") &&
    ls_cli logs -f $id >logs.out 2>logs.err; rc=$?; cat logs.out logs.err;
    test $rc = 1 && grep -q out-t1005 logs.out &&
    grep -q "^job $id FAILED" logs.err
'

test_expect_success 'logs --follow says when the job is pending' '
    id=$(submit_id --wait-for-nodes --nodes 3 -- true) || return 1
    "$CLI" logs -f $id >pend.out 2>pend.err &
    pid=$! && EXTRA_PIDS+=("$pid") &&
    wait_for 20 "grep -q \"job $id is PENDING: needs 3 nodes\" pend.err" &&
    ls_cli cancel $id &&
    wait $pid; rc=$?; cat pend.err; test $rc = 1 &&
    grep -q "job $id ended (CANCELLED) before it started" pend.err
'

test_expect_success 'submit says how to follow the job' '
    ls_cli submit -- sleep 30 >sub.out 2>sub.err &&
    cat sub.out sub.err &&
    id=$(sed -n "s/^submitted job \([0-9]*\)$/\1/p" sub.out) && test -n "$id" &&
    grep -q "lockstep logs -f $id" sub.err && ls_cli cancel $id
'

test_expect_success 'Ctrl-C ends the wait, not the job, and says how to cancel' '
    "$CLI" submit --wait -- sleep 60 >int.out 2>int.err &
    pid=$! && EXTRA_PIDS+=("$pid") &&
    wait_for 20 "grep -q \"RUNNING (attempt 1)\" int.err" &&
    id=$(sed -n "s/^submitted job \([0-9]*\)$/\1/p" int.err) &&
    kill -INT $pid && wait $pid; rc=$?; cat int.err; test $rc = 130 &&
    grep -q "job $id keeps running" int.err &&
    grep -q "cancel it: lockstep cancel $id" int.err &&
    test "$(job_state $id)" = RUNNING &&
    ls_cli cancel $id && wait_job_state $id CANCELLED 20
'

test_done
