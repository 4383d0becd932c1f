#!/bin/bash
# t1037: master ports are unique per master node, not in the whole
# cluster: with master_port_count=2 and 3 nodes, 6 one-node jobs run at
# once (two on each node, on the two ports of the range), never two on one
# node with the same port; a 7th waits until a port of the node it fits
# on is free; after a restart the ports held are known again (a job
# submitted then still waits, and takes the port freed on its node).
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler -o master_port_count=2
start_agent n1
start_agent n2
start_agent n3

# placed ID: "node port" of the job's latest attempt.
placed() {
    ls_cli show "$1" --json | jget \
        '"%s %s" % (j["attempts"][-1]["nodes"][0]["node"], j["attempts"][-1]["master_port"])'
}

# all_running: every id in file ids is RUNNING.
all_running() {
    local id
    for id in $(cat "$1"); do
        test "$(job_state "$id")" = RUNNING || return 1
    done
}

# check_unique: the running jobs of ids hold distinct (node, port) pairs,
# each port in the range; prints the pairs to pairs.
check_unique() {
    local id
    : >pairs
    for id in $(cat "$1"); do
        placed "$id" >>pairs || return 1
    done
    cat pairs &&
    test "$(sort pairs | uniq -d | wc -l)" = 0 &&
    ! awk -v b="$MASTER_PORT_BASE" '$2 < b || $2 > b + 1 { bad = 1 } END { exit !bad }' pairs
}

test_expect_success 'three nodes are up' 'wait_nodes_up 3'

test_expect_success 'six one-node jobs run at once with 2 master ports' '
    : >ids &&
    for i in 1 2 3 4 5 6; do
        submit_id --nodes 1 -- sleep 300 >>ids || return 1
    done &&
    wait_until 60 all_running ids &&
    check_unique ids &&
    for n in n1 n2 n3; do
        test "$(grep -c "^$n " pairs)" = 2 || return 1
    done
'

test_expect_success 'a seventh waits: no node has a master port free' '
    id=$(submit_id --nodes 1 -- sleep 300) && echo $id >seventh &&
    sleep 2 &&
    test "$(job_state $id)" = PENDING
'

# takes_freed LINE FILE: cancel the job on line LINE of ids; the waiting
# job in FILE runs on the node and port it freed, and takes its line.
takes_freed() {
    local victim vnode vport
    victim=$(sed -n "$1p" ids) &&
        set -- "$2" $(placed $victim) && vnode=$2 vport=$3 &&
        ls_cli cancel $victim &&
        wait_until 60 all_running "$1" &&
        test "$(placed $(cat "$1"))" = "$vnode $vport" &&
        grep -v "^$victim\$" ids >ids2 && cat "$1" >>ids2 && mv ids2 ids &&
        check_unique ids
}

test_expect_success 'it starts on the node where a port was freed, on that port' '
    takes_freed 3 seventh
'

test_expect_success 'after a restart the held ports are known again' '
    kill_scheduler &&
    start_scheduler -o master_port_count=2 &&
    wait_nodes_up 3 30 &&
    id=$(submit_id --nodes 1 -- sleep 300) && echo $id >eighth &&
    sleep 2 &&
    test "$(job_state $id)" = PENDING &&
    takes_freed 1 eighth
'

test_expect_success 'clean up' '
    for id in $(cat ids); do ls_cli cancel $id || return 1; done
'

test_done
