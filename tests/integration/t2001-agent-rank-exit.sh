#!/bin/bash
# t2001: a job whose rank 1 exits 3 ends FAILED with exit code 3; the
# failing rank and the tail of its stderr are visible in `show` and in
# `show --json`; the other ranks are torn down.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1
start_agent n2

test_expect_success 'nodes come up' 'wait_nodes_up 2'

test_expect_success 'rank 1 exiting 3 fails the job' '
    id=$(submit_id --nodes 2 --ranks-per-node 1 -- sh -c "
        if [ \$RANK = 1 ]; then
            echo line one >&2; echo \"fatal: rank 1 cannot open shard\" >&2
            exit 3
        fi
        exec sleep 300") &&
    echo $id >job &&
    wait_job_state $id FAILED 30
'

test_expect_success 'show --json reports exit code 3, rank 1 and stderr' '
    ls_cli show $(cat job) --json >show.json &&
    test "$(jget "j[\"exit_code\"]" <show.json)" = 3 &&
    test "$(jget "j[\"failed_rank\"]" <show.json)" = 1 &&
    jget "j[\"stderr_tail\"]" <show.json | grep -q "cannot open shard" &&
    jget "j[\"attempts\"][-1][\"reason\"]" <show.json | grep -q "rank 1" &&
    test "$(jget "[r[\"exit_code\"] for r in j[\"attempts\"][-1][\"ranks\"] if r[\"rank\"] == 1]" <show.json)" = "[3]"
'

test_expect_success 'show (human) names the rank, the code and the stderr' '
    ls_cli show $(cat job) >show.txt &&
    grep -q FAILED show.txt &&
    grep -q "rank 1" show.txt &&
    grep -q "3" show.txt &&
    grep -q "cannot open shard" show.txt
'

test_expect_success 'the surviving rank was torn down' '
    wait_until 15 job_gone $(cat job)
'

test_expect_success 'submit --wait exits non-zero for a failing job' '
    ls_cli submit --wait -- sh -c "exit 5" >wait.out 2>&1;
    rc=$?; cat wait.out; test $rc = 1 && grep -q FAILED wait.out
'

test_expect_success 'submit --wait exits 0 for a succeeding job' '
    ls_cli submit --wait -- true
'

test_expect_success 'a command that does not exist fails with a clear error' '
    id=$(submit_id -- /nonexistent/train) &&
    wait_job_state $id FAILED 30 &&
    ls_cli show $id --json | jget "j[\"stderr_tail\"]" | grep -qi "nonexistent"
'

test_done
