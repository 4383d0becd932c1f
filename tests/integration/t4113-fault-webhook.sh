#!/bin/bash
# t4113: the alert webhook. A receiver on loopback gets exactly one alert
# per occurrence: a node excluded automatically (blame), a node lost, a
# job that failed for good; also when it was down for the first tries and
# the scheduler was restarted in between (the queue is in SQLite, written
# with the change). A full queue drops the oldest, counted in /metrics;
# an alert id is never used twice.
. "$(dirname "$0")/../lib/harness.sh"

RECEIVER=$SRC_DIR/tests/helpers/webhook-receiver.py
HOOK_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOOK_OPTS=(-o alert_webhook_url=http://127.0.0.1:$HOOK_PORT/hook
    -o alert_backoff_max_ms=2000 -o alert_webhook_timeout_ms=2000)

start_receiver() {
    "$PY" "$RECEIVER" --port "$HOOK_PORT" --out "$TEST_DIR/alerts.jsonl" \
        >>"$TEST_DIR/receiver.log" 2>&1 &
    RECEIVER_PID=$!
    EXTRA_PIDS+=($RECEIVER_PID)
    wait_until 10 test -s "$TEST_DIR/alerts.jsonl.port"
}

stop_receiver() {
    kill "$RECEIVER_PID" && wait "$RECEIVER_PID"
    rm -f "$TEST_DIR/alerts.jsonl.port"
    true
}

queued() { db_query "SELECT count(*) FROM alerts"; }
received() { [ -f "$TEST_DIR/alerts.jsonl" ] && wc -l <"$TEST_DIR/alerts.jsonl" || echo 0; }

fault_timeouts
start_scheduler "${HOOK_OPTS[@]}"
# n2 has the fewest GPUs, so best-fit placement puts GPU jobs there first.
start_agent n1
start_agent n2 -o gpus=0
start_agent n3
start_agent n4

BAD='if [ "$LOCKSTEP_NODE" = n2 ]; then echo "Xid 79: GPU has fallen off the bus" >&2; exit 1; fi; sleep 1'

test_expect_success 'the receiver is down: n2 is excluded, a job fails, n4 is lost' '
    wait_nodes_up 4 &&
    for k in 1 2 3; do
        id=$(submit_id --name bad-$k --nodes 2 --gpus-per-node 1 -- sh -c "$BAD") &&
        wait_job_state $id SUCCEEDED 60 || return 1
    done &&
    test "$(node_state n2)" = UNHEALTHY &&
    id=$(submit_id --nodes 1 --max-restarts 0 -- false) && echo $id >failed.id &&
    wait_job_state $id FAILED 30 &&
    kill_agent n4 &&
    wait_for 20 "test \"\$(node_state n4)\" = LOST" &&
    wait_for 10 "test \$(queued) = 3"
'

# One alert is in flight at a time, the oldest first: the others wait
# behind it.
test_expect_success 'the alerts wait in the queue and are retried with backoff' '
    wait_for 20 "test \$(db_query \"SELECT max(tries) FROM alerts\") -ge 2" &&
    db_query "SELECT last_error FROM alerts" | grep -q "refused" &&
    grep -q "alert [0-9]* not delivered (try 1)" sched/log &&
    test "$(received)" = 0
'

test_expect_success 'the scheduler restarts: the queue is still there' '
    stop_scheduler && start_scheduler "${HOOK_OPTS[@]}" &&
    test "$(queued)" = 3 &&
    wait_nodes_up 2
'

test_expect_success 'the receiver comes up: exactly one alert per occurrence' '
    start_receiver &&
    wait_for 30 "test \$(queued) = 0" &&
    sleep 3 &&
    test "$(received)" = 3 &&
    "$PY" - "$TEST_DIR/alerts.jsonl" "$(cat failed.id)" <<-EOF
	import json, sys
	alerts = [json.loads(l) for l in open(sys.argv[1])]
	got = sorted((a["kind"], a["node"], a["job"]) for a in alerts)
	want = sorted([("node_excluded", "n2", None), ("node_lost", "n4", None),
	               ("job_failed", None, int(sys.argv[2]))])
	assert got == want, got
	assert len(set(a["id"] for a in alerts)) == 3
	for a in alerts:
	    assert a["reason"] and a["time"].endswith("Z") and a["version"], a
	assert min(alerts, key=lambda a: a["id"])["tries"] >= 2
	EOF
'

test_expect_success 'nothing more comes; /metrics counts what was sent' '
    sleep 2 && test "$(received)" = 3 &&
    curl -s $LOCKSTEP_URL/metrics >m.txt &&
    grep -x "lockstep_alerts_sent_total 3" m.txt &&
    grep -x "lockstep_alerts_queued 0" m.txt
'

test_expect_success 'a full queue drops the oldest alert, logged and counted' '
    stop_receiver &&
    stop_scheduler &&
    start_scheduler "${HOOK_OPTS[@]}" -o alert_queue_max=1 -o blame_threshold=100 &&
    wait_nodes_up 2 &&
    a=$(submit_id --nodes 1 --max-restarts 0 -- false) &&
    wait_job_state $a FAILED 30 &&
    b=$(submit_id --nodes 1 --max-restarts 0 -- false) &&
    wait_job_state $b FAILED 30 &&
    test "$(queued)" = 1 &&
    test "$(db_query "SELECT job_id FROM alerts")" = $b &&
    grep -q "alert queue full (alert_queue_max=1): dropping alert" sched/log &&
    curl -s $LOCKSTEP_URL/metrics | grep -x "lockstep_alerts_dropped_total 1" &&
    start_receiver &&
    wait_for 20 "test \$(received) = 4" &&
    tail -n 1 alerts.jsonl | jget "j[\"job\"]" | grep -qx $b &&
    "$PY" -c "import json, sys; ids = [json.loads(l)[\"id\"] for l in open(\"alerts.jsonl\")]; sys.exit(len(set(ids)) != 4)"
'

test_done
