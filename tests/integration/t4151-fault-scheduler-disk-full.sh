#!/bin/bash
# t4151: the scheduler's disk fills up. Its state directory is a small
# tmpfs (in the test's own mount namespace), filled to the last block
# while a job runs and ships its output: submissions answer 503 with
# Retry-After and a message naming the disk, and the CLI prints it; reads
# and the agent keep working (no node LOST, the job keeps running); when
# space returns the scheduler takes changes again without a restart, the
# job's output is stored whole, and after a kill -9 and a restart every
# job that got a 201 is there and none that got a 503.
HARNESS_MOUNT_NS=1
. "$(dirname "$0")/../lib/harness.sh"

STATE=$TEST_DIR/sched/state

# post: POST a job that waits for nodes (never placed: no writes of its
# own afterwards) over the Unix socket; prints the status, keeps the
# reply in post.body and its head in post.head, and the id of a 201 in
# acked.
post() {
    local code
    code=$(curl -s --unix-socket "$TEST_DIR/sched/sock" -o post.body \
        -D post.head -w "%{http_code}" -X POST \
        -H "Content-Type: application/json" http://x/v1/jobs \
        -d '{"version": 1, "argv": ["true"], "nodes": 3, "wait_for_nodes": true}')
    [ "$code" = 201 ] && jget 'j["id"]' <post.body >>acked
    echo "$code"
}

disk_full_reply() {
    grep -q "the scheduler's disk is full (state_dir '$STATE'); nothing was accepted, retry later" post.body &&
        grep -qi "^retry-after: 5" post.head
}

test_expect_success 'a scheduler on an 8 MiB tmpfs, an agent, a job logging' '
    mount_tmpfs "$STATE" 8m &&
    start_scheduler && start_agent n1 && wait_nodes_up 1 &&
    : >acked &&
    id=$(submit_id -- sh -c "i=0; while [ ! -e $TEST_DIR/stop ]; do echo line \$i; i=\$((i + 1)); sleep 0.05; done; echo last line") &&
    echo $id >logjob && wait_job_state $id RUNNING &&
    for i in 1 2 3; do test "$(post)" = 201 || return 1; done
'

test_expect_success 'disk full: submissions get 503 naming the disk, with Retry-After' '
    fill_disk "$STATE" && df -k "$STATE" &&
    for i in $(seq 1 300); do
        code=$(post) && echo "$code" >>codes &&
        { [ "$code" = 201 ] || [ "$code" = 503 ]; } || { cat post.body; return 1; }
        [ "$code" = 503 ] && break
    done &&
    cat post.body && echo && test "$code" = 503 && disk_full_reply &&
    for i in 1 2 3; do
        code=$(post) && { [ "$code" = 201 ] || { [ "$code" = 503 ] && disk_full_reply; }; } ||
            return 1
    done
'

test_expect_success 'the CLI prints it and exits non-zero' '
    for i in $(seq 1 20); do
        if ls_cli submit --json --wait-for-nodes --nodes 3 -- true >out 2>err; then
            jget "j[\"id\"]" <out >>acked
        else
            cat err && grep -q "the scheduler.s disk is full" err && return 0
        fi
    done
    false
'

# A read that shares a loop iteration with a write that fails (an agent's
# report) is answered 503 with the rest of that iteration, since its reply
# may show what is rolled back; the next try answers. So each read here
# may take a second try.
test_expect_success 'meanwhile reads answer, the node stays UP, the job runs' '
    for i in 1 2 3 4 5 6; do
        wait_for 3 "nodes_up_is 1 && job_state_is $(cat logjob) RUNNING" ||
            return 1
        sleep 1
    done &&
    wait_for 3 "ls_cli jobs >/dev/null"
'

test_expect_success 'space returns: changes are taken again, without a restart' '
    free_disk "$STATE" &&
    wait_for 30 "test \"\$(post)\" = 201" &&
    grep -q "the database accepts changes again" "$TEST_DIR/sched/log"
'

test_expect_success 'the job ends and its output is stored whole' '
    touch "$TEST_DIR/stop" && id=$(cat logjob) &&
    wait_job_state $id SUCCEEDED 60 &&
    wait_for 20 "ls_cli logs $id | grep -qx \"last line\"" &&
    ls_cli logs $id >log.txt && n=$(($(wc -l <log.txt) - 1)) &&
    test "$n" -gt 20 &&
    seq 0 $((n - 1)) | sed "s/^/line /" | diff - <(head -n $n log.txt)
'

test_expect_success 'no node was LOST' '
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''node_lost'\''")" = 0
'

test_expect_success 'after kill -9 and a restart: every 201 is there, no 503' '
    kill_scheduler && start_scheduler &&
    sort -n acked >want && echo "$(wc -l <want) acknowledged" &&
    db_query "SELECT id FROM jobs WHERE id != $(cat logjob) ORDER BY id" >have &&
    diff want have &&
    for id in $(cat want); do ls_cli show $id >/dev/null || return 1; done
'

test_done
