#!/bin/bash
# t4120: output written during a scheduler outage reaches `lockstep logs`
# however long ago the ranks ended. The ranks of a 2-node job write 3 MB
# each (several of the shipper's 1 MiB chunks) and a last line once
# lockstepd is down, then exit 0; lockstepd stays down for more than 30 s
# after that (the time a finished job waits for its output while the
# scheduler answers), long enough for every shipping request to be in its
# longest backoff. When lockstepd returns, the agents ship the backlog at
# once (the shipper is kicked out of its backoff when a status gets
# through again), report the ends, and release the job only with its
# output shipped: every byte is readable through the API and no agent
# logs "released with output not yet shipped"
# (docs/fault-tolerance.md "Scheduler outages").
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2
# Longer than the agents' PROC_FLUSH_MAX_MS (30 s).
AFTER_END_S=33
LINES=30000

# The ranks: a line, then, once lockstepd is down (the file ./down), 20
# lines, 3 MB and a last line on stdout, and one line on stderr.
cat >"$TEST_DIR/rank.sh" <<EOF
echo "rank \$RANK up"
while [ ! -e "$TEST_DIR/down" ]; do sleep 0.1; done
seq 1 20 | sed "s/.*/outage line & of rank \$RANK/"
head -c $((LINES * 99)) /dev/zero | tr '\\0' x | fold -w 99
echo "last words of rank \$RANK"
echo "stderr words of rank \$RANK" >&2
EOF

# expected_out RANK: what rank RANK writes to stdout.
expected_out() {
    echo "rank $1 up"
    seq 1 20 | sed "s/.*/outage line & of rank $1/"
    head -c $((LINES * 99)) /dev/zero | tr '\0' x | fold -w 99
    echo "last words of rank $1"
}

test_expect_success 'a 2-node job runs' '
    wait_nodes_up 2 &&
    id=$(submit_id --name late --nodes 2 --ranks-per-node 1 -- \
        sh "$TEST_DIR/rank.sh") &&
    echo $id >job &&
    wait_job_state $id RUNNING 30 &&
    wait_for 20 "ls_cli logs $id | grep -q \"rank 1 up\"" &&
    wait_for 20 "ls_cli logs $id | grep -q \"rank 0 up\""
'

test_expect_success 'SIGKILL lockstepd; the ranks write their output and end' '
    kill_scheduler && touch down &&
    wait_for 30 "job_gone $(cat job)" &&
    for r in 0 1; do
        expected_out $r >expected.$r || return 1
        f=$(ls agent-n*/logs/$(cat job)/1/rank-$r.out) &&
        wait_for 10 "cmp -s expected.$r $f" || return 1
    done
'

test_expect_success 'lockstepd stays down for over 30 s after the ends' '
    sleep $AFTER_END_S &&
    ! grep "released" agent-n1/log agent-n2/log
'

test_expect_success 'lockstepd returns: the job succeeds, its output complete' '
    start_scheduler &&
    id=$(cat job) &&
    wait_job_state $id SUCCEEDED 60 &&
    for r in 0 1; do
        wait_for 30 "ls_cli logs $id --rank $r >got.$r && cmp -s expected.$r got.$r" ||
            { cmp expected.$r got.$r; return 1; }
        ls_cli logs $id --rank $r --stream err | grep -qx "stderr words of rank $r" ||
            return 1
    done
'

test_expect_success 'the agents released it with nothing left unshipped' '
    id=$(cat job) &&
    wait_for 30 "grep -q \"job=$id attempt=1 released\" agent-n1/log" &&
    wait_for 30 "grep -q \"job=$id attempt=1 released\" agent-n2/log" &&
    ! grep "not yet shipped" agent-n1/log agent-n2/log &&
    wait_until 30 nodes_idle
'

test_done
