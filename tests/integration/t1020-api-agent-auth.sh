#!/bin/bash
# t1020: agent credentials that cannot be replayed (docs/api.md "Agent
# credentials"). Every agent request carries a MAC under its node's key
# over the method, path, body digest, a timestamp and a nonce: a real
# agent with only its node key works; a request signed from the spec
# (tests/helpers/agentcred.py) works once, and its replay, a tampered
# body or path, a clock out of the window, another node's key and the
# static credential of before are refused with a 401 that says which.
# Every refusal (401 and 403, agents' and users') is counted and
# recorded as an event within a rate limit; users do not see agents'.
# The agent refuses a key file of another node or one others can read,
# and still starts from the cluster secret (the transition), warning.
. "$(dirname "$0")/../lib/harness.sh"

AC=$SRC_DIR/tests/helpers/agentcred.py
start_scheduler

# agent NODE METHOD TARGET [agentcred.py options]: "STATUS BODY" lines.
agent() {
    local node=$1 method=$2 target=$3
    shift 3
    "$PY" "$AC" request "$LOCKSTEP_URL" "$method" "$target" \
        --key "$(node_key "$node")" --node "$node" "$@"
}

status_body() { # NODE [agentcred options]: a register status of NODE
    local node=$1
    shift
    agent "$node" POST /v1/agent/status --body "{\"version\":1,\"node\":\"$node\",\"register\":true,\"agent_id\":\"a-$node\",\"addr\":\"127.0.0.1\",\"cpus\":1,\"memory_mb\":64,\"gpus\":[],\"labels\":{},\"jobs\":[]}" "$@"
}

# events KIND: the events of that kind as JSON (an operator's view).
events() { ls_cli events --kind "$1" --json; }

test_expect_success 'an agent holding only its node key registers' '
    start_agent n1 &&
    wait_nodes_up 1 30 &&
    ! grep -q cluster.secret "$(node_key n1)" &&
    grep -q "^key = " "$(node_key n1)" &&
    ! grep -q "holds the cluster secret" "$TEST_DIR/agent-n1/log"
'

test_expect_success 'a request signed as the spec says is accepted once; its replay is 401 replay' '
    status_body n2 --times 2 >out &&
    cat out &&
    test "$(sed -n 1p out | cut -d" " -f1)" = 200 &&
    test "$(sed -n 2p out | cut -d" " -f1)" = 401 &&
    sed -n 2p out | cut -d" " -f2- | jget "j[\"error\"][\"code\"]" | grep -qx replay &&
    sed -n 2p out | grep -q "used already"
'

test_expect_success 'a GET with a query is signed over path and query' '
    agent n2 GET "/v1/agent/work?node=n2&gen=0&wait_ms=0" >out &&
    grep -q "^200 " out
'

test_expect_success 'a clock out of the window is 401 clock_skew with the scheduler time' '
    status_body n2 --skew-ms 120000 >ahead &&
    status_body n2 --skew-ms -120000 >behind &&
    cat ahead behind &&
    grep -q "^401 " ahead && grep -q "^401 " behind &&
    cut -d" " -f2- ahead | jget "j[\"error\"][\"code\"]" | grep -qx clock_skew &&
    now=$(date +%s%3N) &&
    st=$(cut -d" " -f2- ahead | jget "j[\"error\"][\"server_time_ms\"]") &&
    test $((st - now)) -lt 60000 && test $((now - st)) -lt 60000 &&
    grep -q "ahead of the scheduler" ahead && grep -q "behind the scheduler" behind &&
    grep -q NTP ahead &&
    status_body n2 --skew-ms 10000 | grep -q "^200 "
'

test_expect_success 'a tampered body or path does not verify (401)' '
    key=$(node_key n2) &&
    "$PY" - "$SRC_DIR/tests/helpers" "$key" "$LOCKSTEP_URL" >out <<-\EOF &&
	import sys
	sys.path.insert(0, sys.argv[1])
	import agentcred as ac
	node, key = ac.read_key_file(sys.argv[2])
	url = sys.argv[3]
	body = b"{\"version\":1,\"node\":\"n2\",\"agent_id\":\"a-n2\",\"addr\":\"127.0.0.1\",\"cpus\":1,\"memory_mb\":64,\"gpus\":[],\"labels\":{},\"jobs\":[]}"
	auth = ac.sign(key, node, "POST", "/v1/agent/status", body)
	print(ac.send(url, "POST", "/v1/agent/status", auth, body.replace(b"\"cpus\":1", b"\"cpus\":9"))[0])
	auth = ac.sign(key, node, "GET", "/v1/agent/work?node=n2&gen=0&wait_ms=0")
	print(ac.send(url, "GET", "/v1/agent/work?node=n2&gen=5&wait_ms=0", auth)[0])
	auth = ac.sign(key, node, "GET", "/v1/agent/work?node=n2&gen=0&wait_ms=0")
	print(ac.send(url, "GET", "/v1/agent/work?node=n2&gen=0&wait_ms=0", auth)[0])
	EOF
    cat out &&
    test "$(cat out | tr "\n" " ")" = "401 401 200 "
'

test_expect_success 'a node key never speaks for another node' '
    agent n2 GET "/v1/agent/work?node=n1&gen=0&wait_ms=0" >other &&
    cat other && grep -q "^403 " other && grep -q "for node .n2., not .n1." other &&
    agent n2 GET "/v1/agent/work?node=n1&gen=0&wait_ms=0" --claim n1 >claim &&
    cat claim && grep -q "^401 " claim && grep -q "bad agent credential for node .n1." claim
'

test_expect_success 'the static credential of before is refused, saying what to do' '
    "$PY" "$AC" request "$LOCKSTEP_URL" GET "/v1/agent/work?node=n2&gen=0&wait_ms=0" \
        --secret "$CLUSTER_SECRET" --node n2 --legacy >out &&
    cat out && grep -q "^401 " out && grep -q "upgrade its agent" out &&
    grep -q agent_auth_legacy out
'

test_expect_success 'agent refusals are events with the node and the reason' '
    events auth_refused >ev.json &&
    jget "sorted(set(e[\"detail\"][\"code\"] for e in j[\"events\"] if e[\"subject\"] == \"agent/n2\"))" <ev.json >codes &&
    cat codes &&
    grep -q replay codes && grep -q clock_skew codes && grep -q bad_mac codes &&
    grep -q legacy_credential codes &&
    jget "any(110000 < e[\"detail\"][\"skew_ms\"] <= 120000 for e in j[\"events\"] if e[\"detail\"][\"code\"] == \"clock_skew\")" <ev.json | grep -qx True &&
    jget "[e[\"actor\"] for e in j[\"events\"] if e[\"subject\"] == \"agent/n2\"]" <ev.json | grep -q "agent/n2" &&
    events request_refused | jget "[e[\"detail\"][\"code\"] for e in j[\"events\"] if e[\"subject\"] == \"agent/n2\"]" | grep -q forbidden
'

test_expect_success 'users do not see agents refusals' '
    ls_cli token create --user alice --json | jget "j[\"token\"]" >alice.tok &&
    curl -s -H "Authorization: Bearer $(cat alice.tok)" \
        "$LOCKSTEP_URL/v1/events?kind=auth_refused" >u.json &&
    test "$(jget "len([e for e in j[\"events\"] if e[\"subject\"].startswith(\"agent/\")])" <u.json)" = 0
'

test_expect_success 'users refusals are events too: expired and revoked tokens, another user s job' '
    ls_cli token create --user alice --ttl 1s --json | jget "j[\"token\"]" >short.tok &&
    ls_cli token create --user bob --json >b.json &&
    jget "j[\"token\"]" <b.json >bob.tok &&
    ls_cli token revoke "$(jget "j[\"id\"]" <b.json)" &&
    id=$(LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) ls_cli submit --json -- true | jget "j[\"id\"]") &&
    curl -s -o /dev/null -H "Authorization: Bearer $(cat bob.tok)" "$LOCKSTEP_URL/v1/jobs" &&
    curl -s -o /dev/null "$LOCKSTEP_URL/v1/jobs" &&
    wait_for 10 "test \"\$(curl -s -o /dev/null -w %{http_code} -H \"Authorization: Bearer \$(cat short.tok)\" $LOCKSTEP_URL/v1/whoami)\" = 401" &&
    ls_cli token create --user carol --json | jget "j[\"token\"]" >carol.tok &&
    test "$(curl -s -o /dev/null -w %{http_code} -H "Authorization: Bearer $(cat carol.tok)" "$LOCKSTEP_URL/v1/jobs/$id")" = 403 &&
    events auth_refused >ev.json &&
    jget "[(e[\"subject\"], e[\"detail\"][\"code\"]) for e in j[\"events\"] if not e[\"subject\"].startswith(\"agent/\")]" <ev.json >pairs &&
    cat pairs &&
    grep -qF "[\"user/bob\", \"token_revoked\"]" pairs &&
    grep -qF "[\"user/alice\", \"token_expired\"]" pairs &&
    grep -qF "[\"auth/anonymous\", \"no_credential\"]" pairs &&
    events request_refused | jget "[(e[\"actor\"], e[\"subject\"], e[\"detail\"][\"code\"]) for e in j[\"events\"]]" |
        grep -qF "[\"carol\", \"job/$id\", \"forbidden\"]" &&
    curl -s -H "Authorization: Bearer $(cat alice.tok)" "$LOCKSTEP_URL/v1/events?kind=auth_refused" |
        jget "sorted(set(e[\"subject\"] for e in j[\"events\"]))" | grep -qx "\[\"user/alice\"\]"
'

# After the checks that each refusal is an event: the flood empties the
# bucket of the overall rate (refusals.h), and the events of refusals in
# the seconds after it are kept out by design.
test_expect_success 'a flood of refusals is counted in full but recorded within the rate limit' '
    before=$(db_query "SELECT count(*) FROM events WHERE kind = '\''auth_refused'\''") &&
    "$PY" - "$SRC_DIR/tests/helpers" "$LOCKSTEP_URL" <<-\EOF &&
	import sys
	sys.path.insert(0, sys.argv[1])
	import agentcred as ac
	bad = "0" * 64
	for i in range(150):
	    auth = "Agent x%d:1:00112233445566778899aabbccddeeff:%s" % (i, bad)
	    assert ac.send(sys.argv[2], "POST", "/v1/agent/status", auth, b"{}")[0] == 401
	EOF
    after=$(db_query "SELECT count(*) FROM events WHERE kind = '\''auth_refused'\''") &&
    echo "events: $before -> $after" &&
    test $((after - before)) -le $((50 + 5 * 10)) &&
    test $((after - before)) -ge 1 &&
    curl -s "$LOCKSTEP_URL/metrics" >m.txt &&
    n=$(sed -n "s/^lockstep_requests_refused_total{reason=\"bad_mac\"} //p" m.txt) &&
    echo "bad_mac refusals: $n" && test "${n%.*}" -ge 150 &&
    grep -q "^lockstep_agent_auth_total{key=\"current\"} " m.txt &&
    grep -q "^lockstep_agent_nonces " m.txt
'

test_expect_success 'the agent refuses another node s key file, and one others can read' '
    $AGENTD -o node_name=n1 -o node_key_file="$(node_key n2)" \
        -o state_dir="$TEST_DIR/x" --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "is the key of node .n2., not of .n1." err &&
    cp "$(node_key n1)" open.key && chmod 644 open.key &&
    $AGENTD -o node_name=n1 -o node_key_file=open.key \
        -o state_dir="$TEST_DIR/x" --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "accessible to other users" err
'

test_expect_success 'an agent given the cluster secret still works (the transition), and warns' '
    kill_agent n1 &&
    start_agent n1 -o node_key_file= -o cluster_secret_file="$CLUSTER_SECRET" &&
    wait_for 30 "grep -q \"holds the cluster secret\" $TEST_DIR/agent-n1/log" &&
    id=$(submit_id --nodes 1 --gpus-per-node 1 -- true) &&
    wait_job_state $id SUCCEEDED 60
'

test_expect_success 'with agent_auth_legacy the static credential is accepted (an upgrade)' '
    kill_agent n1 &&
    stop_scheduler &&
    start_scheduler -o agent_auth_legacy=true &&
    "$PY" "$AC" request "$LOCKSTEP_URL" GET "/v1/agent/work?node=n2&gen=0&wait_ms=0" \
        --secret "$CLUSTER_SECRET" --node n2 --legacy >out &&
    cat out && grep -q "^200 " out &&
    curl -s "$LOCKSTEP_URL/metrics" | grep -q "^lockstep_agent_auth_total{key=\"legacy\"} 1" &&
    grep -q "static credential (agent_auth_legacy)" "$TEST_DIR/sched/log"
'

test_expect_success 'the scheduler stops cleanly (nothing leaked under ASan)' '
    stop_scheduler
'

test_done
