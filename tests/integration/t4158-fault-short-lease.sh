#!/bin/bash
# t4158: short leases for busy nodes, at the default timeouts
# (node_timeout_ms 10000, heartbeat_ms 1000, lease_ms 5000; lease pings
# every 300 ms answered with a 1500 ms lease), 4 agents over TCP.
# - A busy node renews its leases with lease pings: its leases are short.
# - A machine that is gone whole (its agent, supervisors and ranks killed
#   at once: nothing is left to speak for it) is LOST and its job
#   replaced well before the node timeout, by the short-lease path, and
#   the old ranks are gone before the next attempt starts.
# - A scheduler stopped (SIGSTOP) for longer than the short lease kills
#   nothing: the witnesses extend the short leases, as in an outage.
# - An agent stopped on purpose (SIGTERM: an upgrade) asks for the long
#   lease first, so that its successor, started 3 s later (twice the
#   short lease), still takes its ranks over.
# - Forged or malformed pings are refused and renew nothing.
# (docs/fault-tolerance.md "Short leases for busy nodes")
. "$(dirname "$0")/../lib/harness.sh"

NODE_TIMEOUT_MS=10000 HEARTBEAT_MS=1000 LEASE_MS=5000 KILL_GRACE_MS=1000
# The pings come in on UDP at the TCP port the kernel picked.
start_scheduler_udp
export AGENT_SERVER=$LOCKSTEP_URL
for k in 1 2 3 4; do start_agent n$k; done

long_job() {
    submit_id --name "$1" --nodes 2 --max-infra-restarts 5 -- sh -c \
        "echo start \$RANK attempt \$LOCKSTEP_ATTEMPT; sleep 300"
}

age_ge() { # S: the cluster has been up for S seconds at least
    test $(($(date +%s) - $(cat up_at))) -ge "$1"
}

metric() { # NAME{LABELS}: its value in GET /metrics
    curl -s --unix-socket sched/sock http://localhost/metrics |
        awk -v n="$1" '$1 == n { print $2 }'
}

# lease_left NODE JOB ATTEMPT: ms until the lease of that attempt ends
# (its lease file holds a CLOCK_MONOTONIC deadline in ms).
lease_left() {
    "$PY" -c 'import sys, time
d = int(open(sys.argv[1]).read().split()[0])
print(d - int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1000))' \
        "agent-$1/state/jobs/$2.$3/lease"
}

# short_lease NODE JOB: the lease of JOB's first attempt on NODE is short
# (at most the 1500 ms granted, renewed every 300 ms).
short_lease() {
    local left
    left=$(lease_left "$1" "$2" 1) && test "$left" -le 1500
}

test_expect_success 'a busy node renews short leases with lease pings' '
    wait_nodes_up 4 && date +%s >up_at &&
    id=$(long_job one) && echo $id >job && watch_attempts $id &&
    wait_job_state $id RUNNING 60 &&
    job_json $id "j[\"attempts\"][0][\"nodes\"][1][\"node\"]" >victim &&
    wait_for 20 "job_nprocs_ge $id 2" &&
    v=$(cat victim) &&
    wait_for 20 "grep -q \"lease pings answered: leases of 1500 ms\" agent-$v/log" &&
    wait_for 10 "short_lease $v $id" &&
    sleep 1 && short_lease $v $id &&
    test "$(metric "lockstep_lease_pings_total{result=\"answered\"}")" -gt 0
'

test_expect_success 'a machine gone whole is LOST and replaced before the node timeout' '
    v=$(cat victim) && id=$(cat job) &&
    : "its witnesses must have been in contact for node_timeout_ms" &&
    wait_until 20 age_ge 11 &&
    t0=$(date +%s%3N) && kill_agent $v &&
    : "then its supervisors and ranks, before their lease could end" &&
    for p in $(tagged_pids); do
        tr "\0" "\n" 2>/dev/null <"/proc/$p/cmdline" | grep -q "agent-$v/" &&
            kill -9 "$p" 2>/dev/null
    done
    for p in $(job_pids $id $v); do kill -9 "$p" 2>/dev/null; done
    wait_for 20 "test \$(node_state $v) = LOST" &&
    lost_ms=$(ls_cli node $v --json |
        jget "[e[\"time_ms\"] for e in j[\"events\"] if e[\"kind\"] == \"node_lost\"][-1]") &&
    echo "LOST $((lost_ms - t0)) ms after the kill" &&
    test $((lost_ms - t0)) -lt 10000 &&
    ls_cli node $v --json | jget "j[\"reason\"]" | grep -q "short leases ran out" &&
    ! grep -q "node=$v lost: no status for" sched/log &&
    wait_for 30 "test \$(job_json $id \"len(j[\\\"attempts\\\"])\") = 2" &&
    wait_for 30 "test \$(job_json $id \"j[\\\"attempts\\\"][-1][\\\"state\\\"]\") = RUNNING" &&
    echo "attempt 2 running $(($(date +%s%3N) - t0)) ms after the kill (at most)" &&
    test "$(job_json $id "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_lost &&
    ! job_json $id "[n[\"node\"] for n in j[\"attempts\"][1][\"nodes\"]]" |
        grep -q "\"$v\""
'

test_expect_success 'the old ranks were gone before the next attempt started' '
    wait_for 20 "job_nprocs_ge $(cat job) 2" &&
    stop_watch && one_attempt_at_a_time $(cat job) &&
    ls_cli cancel $(cat job) && wait_job_state $(cat job) CANCELLED 30
'

test_expect_success 'a scheduler stopped past the short lease kills nothing' '
    start_agent $(cat victim) && wait_nodes_up 4 && wait_until 30 nodes_idle &&
    id=$(long_job stall) && echo $id >job2 &&
    wait_job_state $id RUNNING 60 && wait_for 20 "job_nprocs_ge $id 2" &&
    for n in $(job_json $id "\" \".join(n[\"node\"] for n in j[\"attempts\"][0][\"nodes\"])"); do
        wait_for 10 "short_lease $n $id" || return 1
    done &&
    job_pids $id | sort >pids.before &&
    kill -STOP $SCHED_PID && sleep 4 && kill -CONT $SCHED_PID &&
    wait_for 10 "grep -q \"extending\" agent-n1/log agent-n2/log agent-n3/log agent-n4/log" &&
    sleep 3 &&
    job_pids $id | sort >pids.after &&
    cmp pids.before pids.after &&
    test "$(job_json $id "len(j[\"attempts\"])")" = 1 &&
    test "$(job_json $id "j[\"attempts\"][0][\"state\"]")" = RUNNING &&
    test "$(nodes_up_count)" = 4
'

test_expect_success 'an agent stopped on purpose gets the long lease for its successor' '
    id=$(cat job2) &&
    n=$(job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]") &&
    job_pids $id $n | sort >pids.n && test -s pids.n &&
    stop_agent $n &&
    grep -q "leases of 5000 ms granted for the agent" agent-$n/log &&
    left=$(lease_left $n $id 1) && echo "lease left at the stop: $left ms" &&
    test "$left" -gt 3000 &&
    sleep 3 &&
    start_agent $n &&
    wait_for 30 "grep -q \"job=$id attempt=1 adopted supervisor\" agent-$n/log" &&
    wait_for 20 "short_lease $n $id" &&
    job_pids $id $n | sort >pids.n2 && cmp pids.n pids.n2 &&
    test "$(job_json $id "len(j[\"attempts\"])")" = 1
'

test_expect_success 'forged and malformed pings are refused and renew nothing' '
    before=$(metric "lockstep_fence_notices_total{result=\"refused\"}") &&
    "$PY" - "$(cat sched/port)" <<-\EOF &&
	import socket, sys
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.settimeout(1.0)
	for m in ("LSP1 n1 7 run " + "0" * 64, "LSP1 n1 7 run", "LSP1 nobody 7 run " + "a" * 64):
	    s.sendto(m.encode(), ("127.0.0.1", int(sys.argv[1])))
	    try:
	        print("answered:", s.recvfrom(512))
	        sys.exit(1)
	    except socket.timeout:
	        pass
	EOF
    after=$(metric "lockstep_fence_notices_total{result=\"refused\"}") &&
    test $((after - before)) = 3 &&
    grep -q "lease ping from 127.0.0.1 refused" sched/log
'

test_done
