#!/bin/bash
# t4119: TLS failures cost only themselves (docs/operations.md "TLS"). On
# a scheduler serving TLS, with two agents over https:// running a job:
# an agent that does not trust the CA never registers and logs the
# certificate problem; an agent given an http:// URL is told to use
# https://; clients trickling a TLS handshake are cut at the header
# deadline while the agents keep reporting; a certificate rotation
# (SIGHUP) reaches new connections without touching the agents; a broken
# certificate on reload keeps the old one; a scheduler restart on TLS
# finds its agents again, and the job that ran through it succeeds.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
SCHED_TLS=1
start_scheduler -o http_header_timeout_ms=2000
PORT=$(cat "$TEST_DIR/sched/port")
export AGENT_SERVER=$LOCKSTEP_URL
start_agent n1 -o server_ca="$TLS_DIR/ca.pem"
start_agent n2 -o server_ca="$TLS_DIR/ca.pem"

metric() { # NAME{labels}: its value in /metrics, over the Unix socket
    curl -s --unix-socket "$TEST_DIR/sched/sock" http://x/metrics |
        awk -v m="$1" '$1 == m { print $2 }'
}

# The serial number of the certificate the scheduler presents now.
served_serial() {
    openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$TLS_DIR/ca.pem" \
        -verify_return_error </dev/null 2>/dev/null |
        openssl x509 -noout -serial
}

# Every node stays UP for SECONDS, checked twice a second.
nodes_stay_up() {
    local i
    for i in $(seq 1 $(($1 * 2))); do
        nodes_up_is 2 || { ls_cli nodes >&2; return 1; }
        sleep 0.5
    done
}

test_expect_success 'two agents over TLS are UP; a job runs' '
    wait_nodes_up 2 &&
    id=$(submit_id --nodes 2 -- sleep 25) &&
    echo "$id" >job.id && wait_job_state "$id" RUNNING 30
'

test_expect_success 'an agent that does not trust the CA never registers, and says why' '
    "$SRC_DIR/deploy/tls-certs.sh" other 127.0.0.1 >/dev/null &&
    start_agent n3 -o server_ca="$TEST_DIR/other/ca.pem" &&
    wait_until 20 grep -q "TLS: SSL certificate problem" "$TEST_DIR/agent-n3/log" &&
    wait_until 10 grep -q "TLS handshake with 127.0.0.1 failed" \
        "$TEST_DIR/sched/log" &&
    ! ls_cli node n3 >/dev/null 2>&1 &&
    kill_agent n3 && nodes_up_is 2
'

test_expect_success 'an agent with an http:// URL to the TLS port is told to use https://' '
    start_agent n4 -o server="http://127.0.0.1:$PORT" &&
    wait_until 20 grep -q "tls_required: this port speaks TLS" \
        "$TEST_DIR/agent-n4/log" &&
    ! ls_cli node n4 >/dev/null 2>&1 &&
    kill_agent n4 && nodes_up_is 2
'

test_expect_success 'trickled TLS handshakes are cut at the header deadline; the agents report on' '
    before=$(metric lockstep_http_timeouts_total{deadline=\"header\"}) ||
        return 1
    "$PY" - "$PORT" >trickle.json <<-PYEOF &
	import json, socket, sys, time
	# 40 connections that announce a 512-byte handshake record and send
	# it one byte every 300 ms: each must be closed after about 2 s.
	port = int(sys.argv[1])
	hello = b"\x16\x03\x01\x02\x00" + b"\x01" * 600
	conns = []
	for _ in range(40):
	    s = socket.create_connection(("127.0.0.1", port))
	    s.setblocking(False)
	    conns.append([s, 0, time.monotonic(), None])
	end = time.monotonic() + 8
	while time.monotonic() < end and any(c[3] is None for c in conns):
	    for c in conns:
	        if c[3] is not None:
	            continue
	        try:
	            if c[0].recv(100) == b"":
	                c[3] = time.monotonic() - c[2]
	                continue
	        except BlockingIOError:
	            pass
	        except ConnectionResetError:
	            c[3] = time.monotonic() - c[2]
	            continue
	        try:
	            c[0].send(hello[c[1]:c[1] + 1])
	            c[1] += 1
	        except OSError:
	            c[3] = time.monotonic() - c[2]
	    time.sleep(0.3)
	lived = [c[3] for c in conns if c[3] is not None]
	print(json.dumps({"closed": len(lived), "max": max(lived or [0]),
	                  "min": min(lived or [0])}))
	PYEOF
    pid=$! &&
    nodes_stay_up 5 && wait "$pid" && cat trickle.json &&
    test "$(jget "j[\"closed\"]" <trickle.json)" = 40 &&
    jget "1.5 <= j[\"min\"] and j[\"max\"] < 6" <trickle.json | grep -qx True &&
    test "$(metric lockstep_http_timeouts_total{deadline=\"header\"})" -ge \
        $((before + 40))
'

test_expect_success 'a rotated certificate (SIGHUP) reaches new connections; the agents stay UP' '
    old=$(served_serial) && test -n "$old" &&
    "$SRC_DIR/deploy/tls-certs.sh" "$TLS_DIR" 127.0.0.1 localhost >/dev/null &&
    new=$(openssl x509 -in "$TLS_DIR/server.pem" -noout -serial) &&
    test "$old" != "$new" &&
    kill -HUP "$SCHED_PID" &&
    wait_until 10 grep -q "reloaded TLS certificate" "$TEST_DIR/sched/log" &&
    test "$(served_serial)" = "$new" &&
    nodes_stay_up 2 &&
    curl -sS --fail --cacert "$TLS_DIR/ca.pem" "$LOCKSTEP_URL/metrics" >/dev/null
'

test_expect_success 'a broken certificate on reload keeps the one loaded' '
    cp "$TLS_DIR/server.pem" good.pem &&
    echo "not a certificate" >"$TLS_DIR/server.pem.new" &&
    mv "$TLS_DIR/server.pem.new" "$TLS_DIR/server.pem" &&
    kill -HUP "$SCHED_PID" &&
    wait_until 10 grep -q "cannot reload TLS: cannot load TLS certificate .*no PEM certificate in it; keeping" \
        "$TEST_DIR/sched/log" &&
    test "$(served_serial)" = "$(openssl x509 -in good.pem -noout -serial)" &&
    cp good.pem "$TLS_DIR/server.pem" && nodes_up_is 2
'

test_expect_success 'a scheduler restarted on TLS finds its agents; the job succeeds' '
    kill_scheduler && start_scheduler -o http_header_timeout_ms=2000 &&
    wait_nodes_up 2 30 &&
    wait_job_state "$(cat job.id)" SUCCEEDED 60 &&
    test "$(ls_cli show "$(cat job.id)" --json | jget "len(j[\"attempts\"])")" = 1
'

test_done
