#!/bin/bash
# t1016: TLS on the TCP API (docs/operations.md "TLS"). The scheduler
# serves its TCP port with a certificate from a CA of the test's own
# (deploy/tls-certs.sh); two agents connect over https:// trusting that
# CA (server_ca) and run a 2-node job end to end (launch, status long
# polls, log shipping, exits); the CLI works over https:// with
# LOCKSTEP_CA and a token. A client that does not trust the CA (curl, the
# CLI) is refused with the certificate problem named; plain HTTP sent to
# the TLS port gets a clean 400 tls_required and a close; the Unix socket
# stays plain; the scheduler serves on throughout.
. "$(dirname "$0")/../lib/harness.sh"

SCHED_TLS=1
start_scheduler
PORT=$(cat "$TEST_DIR/sched/port")
export AGENT_SERVER=$LOCKSTEP_URL
start_agent n1 -o server_ca="$TLS_DIR/ca.pem"
start_agent n2 -o server_ca="$TLS_DIR/ca.pem"

# rc_of CMD...: run CMD (stdout to out.txt, stderr to err.txt, shown), print
# its exit status.
rc_of() {
    "$@" >out.txt 2>err.txt
    echo $?
    cat err.txt >&2
}

metric() { # NAME{labels}: its value in /metrics, over the Unix socket
    curl -s --unix-socket "$TEST_DIR/sched/sock" http://x/metrics |
        awk -v m="$1" '$1 == m { print $2 }'
}

test_expect_success 'the agents register over https://' '
    case $LOCKSTEP_URL in https://127.0.0.1:*) ;; *) return 1 ;; esac &&
    wait_nodes_up 2 &&
    grep -q "server=https://127.0.0.1:$PORT" "$TEST_DIR/agent-n1/log" &&
    grep -q "loaded TLS certificate .*IP:127.0.0.1" "$TEST_DIR/sched/log" &&
    grep -q "tcp=127.0.0.1:$PORT (tls)" "$TEST_DIR/sched/log" &&
    test "$(metric lockstep_tls_handshakes_total)" -ge 2 &&
    test "$(metric lockstep_http_connections{class=\"agent\"})" -ge 2
'

test_expect_success 'a 2-node job runs end to end with the agents on TLS' '
    id=$(submit_id --name tls --nodes 2 --ranks-per-node 1 -- \
        sh -c "echo rank=\$RANK of \$WORLD_SIZE") &&
    wait_job_state "$id" SUCCEEDED 60 &&
    wait_until 20 sh -c "$CLI logs $id | grep -q \"rank=1 of 2\"" &&
    ls_cli logs "$id" | grep -q "rank=0 of 2"
'

test_expect_success 'the CLI works over https:// with LOCKSTEP_CA and a token' '
    ls_cli token create --user alice --json | jget "j[\"token\"]" >alice.tok &&
    export LOCKSTEP_TOKEN=$(cat alice.tok) &&
    test "$(LOCKSTEP_SERVER=$LOCKSTEP_URL ls_cli whoami)" = "alice (user)" &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL ls_cli submit --wait --nodes 1 -- \
        echo over-tls >out && cat out && grep -q SUCCEEDED out &&
    jid=$(LOCKSTEP_SERVER=$LOCKSTEP_URL ls_cli jobs --all --json |
        jget "j[-1][\"id\"]") &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL ls_cli logs "$jid" | grep -qx over-tls &&
    # --ca and a host name the certificate names work as well.
    test "$(env -u LOCKSTEP_CA "$CLI" --server "https://localhost:$PORT" \
        --ca "$TLS_DIR/ca.pem" whoami)" = "alice (user)" &&
    unset LOCKSTEP_TOKEN
'

test_expect_success 'curl verifies the scheduler with the CA' '
    tok=$(cat alice.tok) &&
    curl -sS --fail --cacert "$TLS_DIR/ca.pem" -H "Authorization: Bearer $tok" \
        "$LOCKSTEP_URL/v1/whoami" | jget "j[\"user\"]" | grep -qx alice
'

test_expect_success 'a client that does not trust the CA is refused' '
    tok=$(cat alice.tok) &&
    # curl with the system trust store only.
    test "$(rc_of env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -sS \
        -H "Authorization: Bearer $tok" "$LOCKSTEP_URL/v1/whoami")" = 60 &&
    grep -q "SSL certificate problem" err.txt &&
    # The CLI without LOCKSTEP_CA: it names the problem and the remedy.
    test "$(rc_of env -u LOCKSTEP_CA "$CLI" --server "$LOCKSTEP_URL" \
        --token "$tok" whoami)" = 1 &&
    grep -q "cannot verify the scheduler at $LOCKSTEP_URL: its TLS certificate was refused (SSL certificate problem" err.txt &&
    grep -q "LOCKSTEP_CA=FILE or --ca FILE" err.txt &&
    # The CLI trusting another CA.
    "$SRC_DIR/deploy/tls-certs.sh" other 127.0.0.1 >/dev/null &&
    test "$(LOCKSTEP_CA=other/ca.pem rc_of "$CLI" --server "$LOCKSTEP_URL" \
        --token "$tok" whoami)" = 1 &&
    grep -q "certificate was refused" err.txt &&
    # The scheduler says which client failed, and why.
    wait_until 10 grep -q "TLS handshake with 127.0.0.1 failed: .*unknown ca" \
        "$TEST_DIR/sched/log" &&
    test "$(metric lockstep_tls_failures_total{kind=\"tls\"})" -ge 1
'

test_expect_success 'plain HTTP to the TLS port: 400 tls_required, then a close' '
    curl -sS -i "http://127.0.0.1:$PORT/v1/whoami" >plain.txt &&
    cat plain.txt && head -n 1 plain.txt | grep -q "^HTTP/1.1 400" &&
    grep -qi "^Connection: close" plain.txt &&
    tail -n 1 plain.txt | jget "j[\"error\"][\"code\"]" | grep -qx tls_required &&
    test "$(rc_of "$CLI" --server "http://127.0.0.1:$PORT" \
        --token "$(cat alice.tok)" whoami)" = 1 &&
    grep -q "this port speaks TLS (HTTPS): use an https:// URL" err.txt &&
    # Neither TLS nor HTTP: closed without a word.
    "$PY" -c "
import socket, sys
s = socket.create_connection((\"127.0.0.1\", $PORT))
s.sendall(b\"\\x01\\x02\\x03 not tls\\r\\n\")
s.settimeout(10)
sys.exit(0 if s.recv(100) == b\"\" else 1)
" &&
    test "$(metric lockstep_tls_failures_total{kind=\"plain_http\"})" -ge 2 &&
    ls_cli whoami >/dev/null && nodes_up_is 2
'

test_expect_success 'the Unix socket stays plain HTTP' '
    curl -sS --fail --unix-socket "$TEST_DIR/sched/sock" http://x/v1/whoami |
        jget "j[\"user\"]" >/dev/null
'

test_expect_success 'promtool accepts /metrics with the TLS families' '
    curl -s --unix-socket "$TEST_DIR/sched/sock" http://x/metrics >metrics.txt &&
    grep -q "^lockstep_tls_certificate_expiry_seconds [1-9]" metrics.txt &&
    if [ -x /usr/bin/promtool ]; then
        /usr/bin/promtool check metrics <metrics.txt
    fi
'

test_expect_success 'the daemons stop cleanly' '
    stop_agent n1 && stop_agent n2 && stop_scheduler
'

test_done
