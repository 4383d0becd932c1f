#!/bin/bash
# t1001: bad input gets a clear 4xx (or CLI usage error) naming the
# problem; the daemon keeps serving and its database is unchanged.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler

# post PATH BODY -> "STATUS CODE MESSAGE" using the Unix socket as root.
post() {
    local code
    code=$(curl -s --unix-socket "$LOCKSTEP_SERVER" -o "$TEST_DIR/.body" \
        -w "%{http_code}" -H "Content-Type: application/json" \
        --data-binary "$2" "http://lockstep$1")
    echo "$code $(jget "j[\"error\"][\"code\"] + \" \" + j[\"error\"][\"message\"]" <"$TEST_DIR/.body")"
}

get() {
    curl -s --unix-socket "$LOCKSTEP_SERVER" -o "$TEST_DIR/.body" \
        -w "%{http_code}" "http://lockstep$1"
}

db_snapshot() {
    sqlite3 -readonly "$TEST_DIR/sched/state/lockstep.db" \
        "SELECT 'jobs', count(*) FROM jobs UNION ALL
         SELECT 'events', count(*) FROM events UNION ALL
         SELECT 'attempts', count(*) FROM attempts" >"$TEST_DIR/$1"
}

test_expect_success 'one good job to start from' '
    submit_id --nodes 1 -- true >good && db_snapshot before
'

# expect_4xx DESC BODY STATUS WORD NEEDLE
check() {
    local out
    out=$(post /v1/jobs "$1")
    echo "got: $out"
    case $out in
        "$2 $3 "*) ;;
        *) return 1 ;;
    esac
    echo "$out" | grep -qi -- "$4"
}

test_expect_success 'malformed JSON is 400 invalid_json' '
    check "{\"version\":1,\"argv\":[\"sh\"" 400 invalid_json "invalid JSON"
'
test_expect_success 'wrong type is 400 naming the field' '
    check "{\"version\":1,\"argv\":[\"sh\"],\"nodes\":\"two\"}" 400 invalid_field "nodes"
'
test_expect_success 'unknown field is 400 naming the field' '
    check "{\"version\":1,\"argv\":[\"sh\"],\"gpus\":2}" 400 unknown_field "gpus"
'
test_expect_success 'zero nodes is 400 naming the field and the range' '
    check "{\"version\":1,\"argv\":[\"sh\"],\"nodes\":0}" 400 invalid_field "nodes.*between"
'
test_expect_success 'negative ranks is 400 naming the field' '
    check "{\"version\":1,\"argv\":[\"sh\"],\"ranks_per_node\":-1}" 400 invalid_field "ranks_per_node"
'
test_expect_success 'empty argv is 400' '
    check "{\"version\":1,\"argv\":[]}" 400 invalid_field "empty"
'
test_expect_success 'missing version is 400 missing_field' '
    check "{\"argv\":[\"sh\"]}" 400 missing_field "version"
'
test_expect_success 'a JSON array body is 400' '
    check "[1,2,3]" 400 invalid_json "object"
'
test_expect_success 'a body over the size limit is 413 too_large' '
    head -c 2000000 /dev/zero | tr "\0" a >big &&
    code=$(curl -s --unix-socket "$LOCKSTEP_SERVER" -o .body -w "%{http_code}" \
        -H "Content-Type: application/json" --data-binary @big http://lockstep/v1/jobs) &&
    test "$code" = 413 &&
    jget "j[\"error\"][\"code\"]" <.body | grep -qx too_large
'
test_expect_success 'an unknown job id is 404 not_found' '
    test "$(get /v1/jobs/999999)" = 404 &&
    jget "j[\"error\"][\"code\"]" <.body | grep -qx not_found &&
    ls_cli show 999999 2>err; test $? = 1 && grep -q "999999" err
'
test_expect_success 'a non-numeric job id is 400 or 404' '
    code=$(get /v1/jobs/abc) && { test $code = 404 || test $code = 400; }
'
test_expect_success 'an unknown path is 404, a wrong method 405' '
    test "$(get /v1/nope)" = 404 &&
    code=$(curl -s --unix-socket "$LOCKSTEP_SERVER" -o .body -w "%{http_code}" \
        -X DELETE http://lockstep/v1/jobs) &&
    test "$code" = 405
'
test_expect_success 'garbage instead of HTTP gets 400 and a close' '
    printf "NOT HTTP AT ALL\r\n\r\n" | timeout 5 $PY -c "
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.stdin.buffer.read())
print(s.recv(4096).decode(errors=\"replace\"))" "$LOCKSTEP_SERVER" >raw &&
    grep -q "^HTTP/1.1 400" raw
'
test_expect_success 'CLI: an empty command is a usage error naming it' '
    ls_cli submit --nodes 1 -- 2>err; rc=$?; cat err; test $rc = 2 &&
    grep -qi "command" err
'
test_expect_success 'CLI: an unknown flag is a usage error naming it' '
    ls_cli submit --bogus-flag -- true 2>err; rc=$?; cat err; test $rc = 2 &&
    grep -q "bogus-flag" err
'
test_expect_success 'CLI: a bad --nodes value is refused before sending' '
    ls_cli submit --nodes 0 -- true 2>err; rc=$?; cat err; test $rc != 0 &&
    grep -qi "nodes" err
'
test_expect_success 'CLI: an unknown subcommand is a usage error' '
    ls_cli frobnicate 2>err; test $? = 2 && grep -q frobnicate err
'
test_expect_success 'the database is unchanged by all of it' '
    db_snapshot after && cmp before after
'
test_expect_success 'the daemon still serves' '
    test "$(get /v1/health)" = 200 && id=$(submit_id -- true) && test -n "$id"
'
test_done
