#!/bin/bash
# t4130: the cluster secret is rotated without an outage (docs/
# operations.md "Rotating the cluster secret"). Under a running job on two
# nodes: the old secret becomes the previous one and a new one is written,
# SIGHUP (agents keep working with keys of the previous secret); each
# node gets a key of the new secret, which its agent takes up without a
# restart; the previous secret is removed, SIGHUP. Through it all no node
# leaves UP and the job stays on attempt 1. Afterwards an agent with a key
# of the retired secret is refused (401, recorded), and a SIGHUP that
# finds a bad secret file keeps the secrets in use.
. "$(dirname "$0")/../lib/harness.sh"

PREV=$TEST_DIR/cluster.secret.previous
OLD=$TEST_DIR/old.secret
cp "$CLUSTER_SECRET" "$OLD"
start_scheduler -o cluster_secret_previous_file="$PREV"

# Each agent's key file where the test can replace it.
for n in n1 n2; do
    mkdir -p "$TEST_DIR/agent-$n"
    cp "$(node_key $n)" "$TEST_DIR/agent-$n/node.key"
    start_agent $n -o node_key_file="$TEST_DIR/agent-$n/node.key"
done

# metric NAME{LABELS}: its value now (0 when absent).
metric() {
    curl -s "$LOCKSTEP_URL/metrics" | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}

# steady ID: the job is RUNNING on attempt 1 and both nodes are UP.
steady() {
    test "$(job_state "$1")" = RUNNING &&
        test "$(ls_cli show "$1" --json | jget "len(j[\"attempts\"])")" = 1 &&
        test "$(nodes_up_count)" = 2
}

test_expect_success 'a job runs on both nodes, keys of the first secret' '
    wait_nodes_up 2 30 &&
    id=$(submit_id --nodes 2 -- sleep 600) && echo $id >job &&
    wait_job_state $id RUNNING 30 &&
    test "$(metric "lockstep_agent_auth_total{key=\"previous\"}")" = 0
'

test_expect_success 'the new secret, the old one as previous, SIGHUP: agents keep working' '
    cp "$CLUSTER_SECRET" "$PREV" && chmod 600 "$PREV" &&
    head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" >"$CLUSTER_SECRET.new" &&
    chmod 600 "$CLUSTER_SECRET.new" && mv "$CLUSTER_SECRET.new" "$CLUSTER_SECRET" &&
    kill -HUP $SCHED_PID &&
    wait_for 10 "grep -q \"cluster secrets read again.*previous: a rotation\" $TEST_DIR/sched/log" &&
    wait_for 10 "test \$(metric \"lockstep_agent_auth_total{key=\\\"previous\\\"}\") -ge 4" &&
    steady $(cat job)
'

test_expect_success 'each node gets a key of the new secret; its agent takes it up' '
    for n in n1 n2; do
        (umask 077 && $LOCKSTEPD -o tls=off -o cluster_secret_file="$CLUSTER_SECRET" \
            -o cluster_secret_previous_file="$PREV" \
            --derive-node-key $n >"$TEST_DIR/agent-$n/node.key.new") &&
        grep -q "^witness_key_previous = " "$TEST_DIR/agent-$n/node.key.new" &&
        mv "$TEST_DIR/agent-$n/node.key.new" "$TEST_DIR/agent-$n/node.key" || return 1
    done &&
    for n in n1 n2; do
        wait_for 20 "grep -q \"node key read again\" $TEST_DIR/agent-$n/log" || return 1
    done &&
    p1=$(metric "lockstep_agent_auth_total{key=\"previous\"}") &&
    c1=$(metric "lockstep_agent_auth_total{key=\"current\"}") &&
    wait_for 20 "test \$(metric \"lockstep_agent_auth_total{key=\\\"current\\\"}\") -ge $((c1 + 4))" &&
    p2=$(metric "lockstep_agent_auth_total{key=\"previous\"}") &&
    echo "previous: $p1 -> $p2" &&
    test $((p2 - p1)) -le 4 &&
    steady $(cat job)
'

test_expect_success 'the previous secret is retired, SIGHUP: still steady' '
    rm "$PREV" &&
    kill -HUP $SCHED_PID &&
    wait_for 10 "grep -q \"cluster secrets read again.*(no previous)\" $TEST_DIR/sched/log" &&
    c1=$(metric "lockstep_agent_auth_total{key=\"current\"}") &&
    wait_for 20 "test \$(metric \"lockstep_agent_auth_total{key=\\\"current\\\"}\") -ge $((c1 + 4))" &&
    steady $(cat job) &&
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''node_lost'\''")" = 0 &&
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''auth_refused'\''")" = 0
'

test_expect_success 'an agent with a key of the retired secret is refused and recorded' '
    start_agent n3 -o node_key_file="$(node_key n3 "$OLD")" &&
    wait_for 20 "grep -q \"bad agent credential for node .n3.\" $TEST_DIR/agent-n3/log" &&
    ! ls_cli nodes --json | grep -q "\"n3\"" &&
    ls_cli events --kind auth_refused --json |
        jget "[(e[\"subject\"], e[\"detail\"][\"code\"]) for e in j[\"events\"]]" |
        grep -qF "[\"agent/n3\", \"bad_mac\"]" &&
    kill_agent n3
'

test_expect_success 'a SIGHUP that finds a bad secret file keeps the secrets in use' '
    chmod 644 "$CLUSTER_SECRET" &&
    kill -HUP $SCHED_PID &&
    wait_for 10 "grep -q \"SIGHUP: .*accessible to other users.*stay\" $TEST_DIR/sched/log" &&
    chmod 600 "$CLUSTER_SECRET" &&
    c1=$(metric "lockstep_agent_auth_total{key=\"current\"}") &&
    wait_for 20 "test \$(metric \"lockstep_agent_auth_total{key=\\\"current\\\"}\") -ge $((c1 + 4))" &&
    steady $(cat job)
'

test_expect_success 'the job is cancelled; the agents stop cleanly' '
    ls_cli cancel $(cat job) &&
    wait_job_state $(cat job) CANCELLED 30 &&
    stop_agent n1 && stop_agent n2 && stop_scheduler
'

test_done
