#!/bin/bash
# t2002: cancelling a running job whose ranks started background
# grandchildren (`sleep 1000 &`) leaves no process of the job on any agent
# within the kill grace period.
. "$(dirname "$0")/../lib/harness.sh"

KILL_GRACE_MS=2000
start_scheduler
start_agent n1
start_agent n2

test_expect_success 'nodes come up' 'wait_nodes_up 2'

test_expect_success 'a job with background grandchildren runs' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 -- sh -c "
        sleep 1000 & sleep 1000 &
        (sleep 1000 &) ; trap \"\" TERM; echo started; wait") &&
    echo $id >job &&
    wait_job_state $id RUNNING 30 &&
    wait_until 10 job_nprocs_ge $id 16
'

test_expect_success 'cancel ends the job CANCELLED' '
    ls_cli cancel $(cat job) &&
    wait_job_state $(cat job) CANCELLED 10
'

test_expect_success 'no process of the job remains after the grace period' '
    # 2 s of grace for the TERM-ignoring ranks, then SIGKILL to the groups.
    wait_until 6 job_gone $(cat job) ||
        { ps -o pid,pgid,sid,stat,cmd -p "$(job_pids $(cat job) | tr "\n" ,)0"; false; }
'

test_expect_success 'cancel of a finished job is harmless and idempotent' '
    ls_cli cancel $(cat job) &&
    test "$(job_state $(cat job))" = CANCELLED
'

test_expect_success 'cancel of a pending job cancels it at once' '
    id=$(submit_id --wait-for-nodes --nodes 5 -- true) &&
    test "$(job_state $id)" = PENDING &&
    ls_cli cancel $id &&
    test "$(job_state $id)" = CANCELLED
'

test_expect_success 'nodes are free again after the cancel' '
    wait_until 10 nodes_idle
'

test_done
