#!/bin/bash
# t4001: kill -9 of lockstepd while a job runs, then restart it: the job
# keeps running, ends SUCCEEDED, and no rank was started twice.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1
start_agent n2

test_expect_success 'nodes come up' 'wait_nodes_up 2'

# Each rank appends one line to starts.log when it starts, then works for a
# while; a rank started twice would leave two lines.
test_expect_success 'a 2x2 job is running' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 -- sh -c "
        echo \"\$RANK \$\$\" >>$TEST_DIR/starts.log; sleep 6; echo finished") &&
    echo $id >job &&
    wait_job_state $id RUNNING 30 &&
    wait_for 10 "test \$(cat starts.log 2>/dev/null | wc -l) = 4"
'

test_expect_success 'kill -9 the scheduler mid-run; ranks keep running' '
    kill_scheduler &&
    sleep 1 &&
    job_nprocs_ge $(cat job) 4
'

test_expect_success 'the restarted scheduler still knows the job' '
    start_scheduler &&
    state=$(job_state $(cat job)) &&
    case $state in PLACED|RUNNING|SUCCEEDED) ;; *) echo $state; false;; esac
'

test_expect_success 'the job ends SUCCEEDED' '
    wait_job_state $(cat job) SUCCEEDED 40
'

test_expect_success 'no rank was started twice' '
    test "$(wc -l <starts.log)" = 4 &&
    test "$(cut -d" " -f1 starts.log | sort -u | tr "\n" " ")" = "0 1 2 3 " &&
    test "$(ls_cli show $(cat job) --json | jget "len(j[\"attempts\"])")" = 1
'

test_expect_success 'every rank output reached the scheduler' '
    for r in 0 1 2 3; do
        ls_cli logs $(cat job) --rank $r | grep -qx finished || return 1
    done
'

test_expect_success 'kill -9 while a job is PENDING, restart: it still runs' '
    kill_agent n2 &&
    id=$(submit_id --nodes 2 -- true) && echo $id >job2 &&
    kill_scheduler && start_scheduler &&
    test "$(job_state $id)" = PENDING &&
    start_agent n2 &&
    wait_job_state $id SUCCEEDED 40
'

test_done
