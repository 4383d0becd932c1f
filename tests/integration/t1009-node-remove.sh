#!/bin/bash
# t1009: `lockstep node remove` (issue 12, test 6). An idle LOST node is
# forgotten (it leaves the listings; the event names who removed it); a
# node jobs hold is refused with 409 naming the jobs; --force evicts them
# (they restart elsewhere, the node is not blamed) and forgets the node
# once they have left, whether its agent is gone or stopped them; a removed
# node whose agent reports again registers as new; only operators may
# remove; the removal survives a restart.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
start_agent n1
start_agent n2
start_agent n3

# has_node NAME: whether `lockstep nodes` lists NAME.
has_node() {
    ls_cli nodes --json | jget "any(n[\"name\"] == \"$1\" for n in j)" |
        grep -qx True
}

no_node() {
    ! has_node "$1"
}

# last_event_is SUBJECT "ACTOR KIND": the newest event about SUBJECT.
last_event_is() {
    [ "$(db_events "$1" | tail -1)" = "$2" ]
}

node_state_is() {
    [ "$(node_state "$1")" = "$2" ]
}

# exit_is CODE CMD...: CMD exits with CODE; its stderr is in ./err.
exit_is() {
    local want=$1 rc
    shift
    "$@" >/dev/null 2>err
    rc=$?
    [ "$rc" = "$want" ] && return 0
    echo "exit $rc, wanted $want: $*" >&2
    cat err >&2
    return 1
}

test_expect_success 'three nodes come up' 'wait_nodes_up 3'

test_expect_success 'a node whose agent stopped goes LOST' '
    kill_agent n3 &&
    wait_until 15 node_state_is n3 LOST
'

test_expect_success 'remove forgets the idle LOST node' '
    ls_cli node remove n3 >out &&
    grep -qx "removed node n3" out &&
    no_node n3 &&
    exit_is 1 ls_cli node n3 && grep -q "no node" err &&
    db_events node/n3 | tail -1 | grep -qx "$(id -un) node_removed"
'

test_expect_success 'remove of an unknown node is 404; of a bad name a usage error' '
    exit_is 1 ls_cli node remove n3 && grep -q "no node" err &&
    exit_is 2 ls_cli node remove "bad name" &&
    exit_is 2 ls_cli node frob n1 && grep -q "unknown node command" err &&
    exit_is 2 ls_cli node n1 --force
'

test_expect_success 'the removed node registers as new when its agent returns' '
    start_agent n3 &&
    wait_until 15 has_node n3 &&
    wait_nodes_up 3 &&
    # the removal, then the registration of a new node (its first full
    # pass of health checks follows: node_health_wait, node_up)
    db_events node/n3 | grep -n "" | grep ":$(id -un) node_removed$" |
        tail -1 | cut -d: -f1 >at &&
    db_events node/n3 | sed -n "$(($(cat at) + 1))p" |
        grep -qx "agent/n3 node_registered" &&
    ! db_events node/n3 | sed -n "$(($(cat at) + 1)),\$p" | grep -q node_removed
'

test_expect_success 'an idle UP node is forgotten at once; its running agent registers it again' '
    # n1 is the first node: the others move down in the scheduler'\''s
    # tables, and its agent'\''s waiting long poll is answered.
    ls_cli node remove n1 >out &&
    grep -qx "removed node n1" out &&
    wait_until 15 last_event_is node/n1 "agent/n1 node_registered" &&
    db_events node/n1 | tail -2 | head -1 | grep -qx "$(id -un) node_removed" &&
    wait_nodes_up 3
'

test_expect_success 'only operators may remove a node (403)' '
    tok=$(ls_cli token create --user alice --role user --json | jget "j[\"token\"]") &&
    code=$(curl -s -o body -w "%{http_code}" -X POST \
        -H "Authorization: Bearer $tok" "$LOCKSTEP_URL/v1/nodes/n3/remove") &&
    test "$code" = 403 && has_node n3
'

test_expect_success 'a node a job holds is refused, naming the job' '
    id=$(submit_id --nodes 3 -- sleep 1000) &&
    echo $id >job &&
    wait_job_state $id RUNNING 30 &&
    exit_is 1 ls_cli node remove n2 &&
    grep -q "node n2 is held by jobs \[$id\]" err &&
    has_node n2 && test "$(node_state n2)" = UP &&
    code=$(curl -s -o body -w "%{http_code}" --unix-socket "$LOCKSTEP_SERVER" \
        -X POST http://x/v1/nodes/n2/remove) &&
    test "$code" = 409 &&
    test "$(jget "j[\"error\"][\"code\"]" <body)" = node_busy
'

test_expect_success '--force evicts the job and forgets the node once it left' '
    id=$(cat job) &&
    kill_agent n2 &&
    ls_cli node remove n2 --force --json >out.json &&
    test "$(jget "j[\"removing\"]" <out.json)" = True &&
    test "$(jget "j[\"state\"]" <out.json)" = DRAINING &&
    test "$(jget "j[\"jobs\"]" <out.json)" = "[$id]" &&
    wait_until 20 no_node n2 &&
    ls_cli show $id --json >job.json &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <job.json)" = node_excluded &&
    test "$(jget "j[\"restarts\"]" <job.json)" = 0 &&
    test "$(db_query "SELECT count(*) FROM blame WHERE node = '\''n2'\''")" = 0 &&
    db_events node/n2 | grep -qx "$(id -un) node_removed"
'

test_expect_success 'the job waits for a third node; the removal survives a restart' '
    id=$(cat job) &&
    wait_job_state $id RESTARTING 20 &&
    ls_cli show $id --json | jget "j[\"reason\"]" | grep -q "3 nodes" &&
    kill_scheduler && start_scheduler &&
    wait_nodes_up 2 &&
    no_node n2 &&
    test "$(job_state $id)" = RESTARTING
'

test_expect_success 'the forced node comes back as new and the job runs again' '
    id=$(cat job) &&
    start_agent n2 &&
    wait_until 15 has_node n2 &&
    wait_job_state $id RUNNING 30 &&
    test "$(ls_cli show $id --json | jget "j[\"attempt\"]")" = 2
'

test_expect_success '--force with the agent still running: its ranks stop, then the node is forgotten and registers again' '
    id=$(cat job) &&
    ls_cli node remove n3 --force >out &&
    grep -q "node n3 is cordoned and its jobs ($id) are being evicted" out &&
    wait_until 20 last_event_is node/n3 "agent/n3 node_registered" &&
    db_events node/n3 | tail -2 | head -1 | grep -qx "$(id -un) node_removed" &&
    grep -q "job=$id attempt=2 released" "$TEST_DIR/agent-n3/log" &&
    wait_job_state $id RUNNING 30 &&
    test "$(ls_cli show $id --json | jget "j[\"attempt\"]")" = 3 &&
    test "$(node_state n3)" = UP &&
    ls_cli cancel $id >/dev/null &&
    wait_until 20 nodes_idle
'

test_done
