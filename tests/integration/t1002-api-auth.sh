#!/bin/bash
# t1002: identity and authorisation. TCP needs a bearer token (401
# without); user A cannot see or cancel user B's job (403); an operator can;
# Unix-socket callers are identified by uid; agents need the cluster HMAC.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler

http() { # METHOD PATH [TOKEN] [BODY] -> prints "STATUS BODY"
    local args=(-s -o "$TEST_DIR/.body" -w "%{http_code}" -X "$1")
    [ -n "${3:-}" ] && args+=(-H "Authorization: Bearer $3")
    [ -n "${4:-}" ] && args+=(-H "Content-Type: application/json" -d "$4")
    local code
    code=$(curl "${args[@]}" "$LOCKSTEP_URL$2")
    echo "$code $(cat "$TEST_DIR/.body")"
}

test_expect_success 'root on the Unix socket is an operator' '
    ls_cli whoami --json >me.json &&
    test "$(jget "j[\"role\"]" <me.json)" = operator &&
    test "$(jget "j[\"user\"]" <me.json)" = "$(id -un)"
'

test_expect_success 'an operator creates tokens for alice, bob and carol' '
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    ls_cli token create --user bob --role user --json | jget "j[\"token\"]" >bob.tok &&
    ls_cli token create --user carol --role operator --json | jget "j[\"token\"]" >carol.tok &&
    grep -q "^lst_" alice.tok
'

test_expect_success 'tokens are stored hashed, never in clear' '
    test "$(db_query "SELECT count(*) FROM tokens")" = 3 &&
    ! sqlite3 -readonly "$TEST_DIR/sched/state/lockstep.db" .dump | grep -qF "$(cat alice.tok)"
'

test_expect_success 'TCP without a token is 401 with a JSON error' '
    out=$(http GET /v1/jobs) &&
    echo "$out" | grep -q "^401 " &&
    echo "$out" | cut -d" " -f2- | jget "j[\"error\"][\"code\"]" | grep -qx unauthorized
'

test_expect_success 'TCP with a wrong token is 401' '
    http GET /v1/jobs lst_0000 | grep -q "^401 " &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=lst_bogus ls_cli jobs 2>err.txt;
    test $? = 1 && cat err.txt && test -s err.txt
'

test_expect_success 'alice submits over TCP with her token; the job is hers' '
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli submit --json -- sleep 100 | jget "j[\"id\"]" >ajob &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli show $(cat ajob) --json | jget "j[\"user\"]" | grep -qx alice
'

test_expect_success 'bob cannot see alice s job (403) nor list it' '
    test "$(http GET /v1/jobs/$(cat ajob) $(cat bob.tok) | cut -d" " -f1)" = 403 &&
    test "$(http GET /v1/jobs $(cat bob.tok) | cut -d" " -f2- | jget "len(j)")" = 0
'

test_expect_success 'bob cannot cancel alice s job (403); it stays PENDING' '
    out=$(http POST /v1/jobs/$(cat ajob)/cancel $(cat bob.tok) "{\"version\":1}") &&
    echo "$out" | grep -q "^403 " &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat bob.tok) \
        ls_cli cancel $(cat ajob) 2>err.txt; test $? = 1 &&
    test "$(job_state $(cat ajob))" = PENDING
'

test_expect_success 'bob cannot create tokens or cordon nodes (403)' '
    http POST /v1/tokens $(cat bob.tok) "{\"version\":1,\"user\":\"bob\",\"role\":\"operator\"}" | grep -q "^403 "
'

test_expect_success 'operator carol sees and cancels alice s job' '
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat carol.tok) \
        ls_cli show $(cat ajob) --json | jget "j[\"user\"]" | grep -qx alice &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat carol.tok) \
        ls_cli cancel $(cat ajob) &&
    test "$(job_state $(cat ajob))" = CANCELLED
'

test_expect_success 'the cancel is in the event log with its actor' '
    db_events job/$(cat ajob) | grep -q "^carol "
'

test_expect_success 'agent endpoints refuse a wrong cluster credential' '
    out=$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Agent n9:deadbeef" \
        -d "{\"version\":1,\"node\":\"n9\",\"agent_id\":\"x\",\"addr\":\"a\",\"cpus\":1,\"memory_mb\":1}" \
        $LOCKSTEP_URL/v1/agent/status) &&
    test "$out" = 401 &&
    test "$(ls_cli nodes --json | jget "len(j)")" = 0
'

test_expect_success 'health needs no credential' '
    http GET /v1/health | grep -q "^200 "
'

test_done
