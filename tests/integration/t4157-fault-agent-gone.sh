#!/bin/bash
# t4157: an agent that dies (kill -9) while its node runs a job, at the
# default timeouts (node_timeout_ms 10000, lease_ms 5000), agents on TCP.
# Its supervisors find its lock released, keep the ranks for the orphan
# grace (2.5 s), kill them, and tell the scheduler in a signed UDP
# notice; the scheduler declares the node LOST and replaces the job at
# once: the next attempt runs elsewhere, never beside the old ranks,
# before the node timeout would have noticed anything. An agent killed
# and restarted at once takes its ranks over instead: nothing is
# replaced, nothing is killed; so is one stopped on purpose (SIGTERM:
# an upgrade), whose ranks are left to the lease. Notices that are
# forged, or replayed after the fact, change nothing
# (docs/fault-tolerance.md "An agent that dies"). Without lease pings
# (lease_ping_ms=0: the long lease), so that the grace, not the short
# lease, is what ends the ranks: t4158 has the short leases.
. "$(dirname "$0")/../lib/harness.sh"

NODE_TIMEOUT_MS=10000 HEARTBEAT_MS=1000 LEASE_MS=5000 KILL_GRACE_MS=1000
# The notices come in on UDP at the TCP port the kernel picked.
start_scheduler_udp -o lease_ping_ms=0
export AGENT_SERVER=$LOCKSTEP_URL
for k in 1 2 3; do start_agent n$k; done

long_job() {
    submit_id --name "$1" --nodes 2 --max-infra-restarts 5 -- sh -c \
        "echo start \$RANK attempt \$LOCKSTEP_ATTEMPT; sleep ${2:-60}"
}

# armed NODE JOB: NODE's supervisor of JOB's first attempt can tell the
# scheduler (its spec has a fence key, the agent wrote the address).
armed() {
    grep -q fence_key "agent-$1/state/jobs/$2.1/spec.json" &&
        test -s "agent-$1/state/jobs/scheduler.addr"
}

# send_udp TEXT: one datagram to the scheduler's port.
send_udp() {
    "$PY" - "$1" "$(cat "$TEST_DIR/sched/port")" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(sys.argv[1].encode(), ("127.0.0.1", int(sys.argv[2])))
PYEOF
}

test_expect_success 'a 2-node job runs' '
    wait_nodes_up 3 &&
    id=$(long_job gone) && echo $id >job && watch_attempts $id &&
    wait_job_state $id RUNNING 60 &&
    job_json $id "j[\"attempts\"][0][\"nodes\"][1][\"node\"]" >victim &&
    wait_for 20 "job_nprocs_ge $id 2" &&
    job_pids $id $(cat victim) >pids.victim && test -s pids.victim &&
    wait_for 20 "armed $(cat victim) $id" &&
    read ip port <agent-$(cat victim)/state/jobs/scheduler.addr &&
    test "$ip" = 127.0.0.1 && test "$port" = "$(cat sched/port)"
'

test_expect_success 'kill -9 its agent: its ranks die when the grace ends' '
    kill_agent $(cat victim) &&
    wait_for 20 "job_gone $(cat job) $(cat victim)" &&
    d=agent-$(cat victim)/state/jobs/$(cat job).1 &&
    grep -q "\"fenced\": *true" $d/status.json &&
    grep -q "the agent is gone and none took over; the grace ended" \
        $d/supervisor.log &&
    wait_for 10 "grep -q \"told the scheduler at 127.0.0.1 port\" $d/supervisor.log"
'

test_expect_success 'the scheduler replaces the job at once, the node is LOST for that' '
    v=$(cat victim) &&
    wait_for 10 "grep -q \"node=$v job=$(cat job) attempt=1 its agent is gone and its supervisor killed its ranks\" sched/log" &&
    test "$(node_state $v)" = LOST &&
    ls_cli node $v --json | jget "j[\"reason\"]" | grep -q "^its agent is gone (its supervisors. notice); no status for" &&
    ls_cli node $v --json | jget "[e for e in j[\"events\"] if e[\"kind\"] == \"node_lost\"][-1]" >lost.json &&
    cat lost.json && grep -q "supervisors" lost.json &&
    wait_for 30 "test \$(job_json $(cat job) \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_for 30 "test \$(job_json $(cat job) \"j[\\\"attempts\\\"][-1][\\\"state\\\"]\") = RUNNING" &&
    ! job_json $(cat job) "[n[\"node\"] for n in j[\"attempts\"][1][\"nodes\"]]" |
        grep -q "\"$v\"" &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_lost &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"blamed\"]")" = "$v" &&
    : "not by the node timeout: that logs no status for 10000 ms" &&
    ! grep -q "node=$v lost: no status" sched/log
'

test_expect_success 'the old ranks were gone before the next attempt started' '
    wait_for 20 "job_nprocs_ge $(cat job) 2" &&
    stop_watch && one_attempt_at_a_time $(cat job)
'

test_expect_success 'the notice replayed, forged, or garbage changes nothing' '
    d=agent-$(cat victim)/state/jobs/$(cat job).1 &&
    key=$(jget "j[\"fence_key\"]" <$d/spec.json) &&
    msg="LSF1 $(cat victim) $(cat job) 1" &&
    mac=$("$PY" -c "import hmac,hashlib,sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).hexdigest())" "$key" "$msg") &&
    : "the same notice again: that attempt is over, nothing to do" &&
    send_udp "$msg $mac" &&
    : "the running attempt, signed with the old one'"'"'s key: refused" &&
    other=$(job_json $(cat job) "j[\"attempts\"][1][\"nodes\"][0][\"node\"]") &&
    msg2="LSF1 $other $(cat job) 2" &&
    mac2=$("$PY" -c "import hmac,hashlib,sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).hexdigest())" "$key" "$msg2") &&
    send_udp "$msg2 $mac2" &&
    wait_for 10 "grep -q \"fence notice from 127.0.0.1 refused: bad MAC\" sched/log" &&
    send_udp "hello" &&
    sleep 1 &&
    curl -s --unix-socket sched/sock http://localhost/metrics >m.txt &&
    grep -qx "lockstep_fence_notices_total{result=\"acted\"} 1" m.txt &&
    grep -q "lockstep_fence_notices_total{result=\"old\"} [1-9]" m.txt &&
    grep -qx "lockstep_fence_notices_total{result=\"refused\"} 2" m.txt &&
    test "$(job_json $(cat job) "len(j[\"attempts\"])")" = 2 &&
    test "$(job_json $(cat job) "j[\"attempts\"][-1][\"state\"]")" = RUNNING &&
    test "$(node_state $other)" = UP &&
    ls_cli cancel $(cat job) && wait_job_state $(cat job) CANCELLED 30
'

test_expect_success 'an agent killed and restarted at once takes its ranks over' '
    start_agent $(cat victim) && wait_nodes_up 3 &&
    wait_until 30 nodes_idle &&
    id=$(long_job restart) && echo $id >job2 && watch_attempts $id &&
    wait_job_state $id RUNNING 60 &&
    node=$(job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]") &&
    echo $node >victim2 &&
    wait_for 20 "job_nprocs_ge $id 2" &&
    wait_for 20 "armed $node $id" &&
    job_pids $id $node | sort >pids.before && test -s pids.before &&
    kill_agent $node && start_agent $node &&
    : "the supervisor logs the takeover only if it saw the lock free" &&
    wait_for 30 "grep -q \"job=$id attempt=1 adopted supervisor\" agent-$node/log" &&
    wait_for 30 "test \$(node_state $node) = UP"
'

test_expect_success 'its ranks outlive the orphan grace and the job stays put' '
    node=$(cat victim2) &&
    : "the grace is orphan_grace_ms (2.5 s) from the kill: wait past it" &&
    sleep 5 &&
    job_pids $(cat job2) $node | sort >pids.after &&
    cmp pids.before pids.after &&
    test "$(job_json $(cat job2) "len(j[\"attempts\"])")" = 1 &&
    test "$(job_state $(cat job2))" = RUNNING &&
    ! grep -q "the grace ended" agent-$node/state/jobs/$(cat job2).1/supervisor.log &&
    ! grep -q "job=$(cat job2) attempt=1 failed" "$TEST_DIR/sched/log"
'

test_expect_success 'an agent stopped on purpose leaves its ranks to the lease' '
    node=$(cat victim2) && d=agent-$node/state/jobs/$(cat job2).1 &&
    stop_agent $node &&
    test -e agent-$node/state/jobs/agent.stopped &&
    wait_for 10 "grep -q \"the agent stopped on purpose: the lease decides\" $d/supervisor.log" &&
    start_agent $node &&
    wait_for 30 "test ! -e agent-$node/state/jobs/agent.stopped" &&
    wait_for 30 "test \$(node_state $node) = UP" &&
    job_pids $(cat job2) $node | sort >pids.after2 &&
    cmp pids.before pids.after2 &&
    ! grep -q "the grace ended" $d/supervisor.log &&
    test "$(job_json $(cat job2) "len(j[\"attempts\"])")" = 1 &&
    stop_watch && one_attempt_at_a_time $(cat job2) &&
    ls_cli cancel $(cat job2) && wait_job_state $(cat job2) CANCELLED 30
'

test_done
