#!/bin/bash
# t1012: who may see and do what (docs/api.md "Visibility and
# permissions"). A plain user never sees another user's command line,
# environment, output or failure evidence: not through show, logs, the
# job list, the events, nor a node's detail whose events carry blame
# evidence; the operator sees it all and the owner their own. Priority
# above the default needs the operator role (403 naming it, recorded as a
# request_refused event); a user may lower their own.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

as_alice() { # CLI over TCP with alice's token
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat "$TEST_DIR/alice.tok") \
        ls_cli "$@"
}

test_expect_success 'the operator runs a failing job whose stderr is a secret' '
    wait_nodes_up 1 &&
    ls_cli token create --user alice --role user --json |
        jget "j[\"token\"]" >alice.tok &&
    id=$(submit_id --nodes 1 --max-restarts 0 --env SECRET_ENV=opsval -- \
        sh -c "echo SECRETOUT; echo SECRETERR-ImportError >&2; exit 1") &&
    echo $id >job1 && wait_job_state $id FAILED 30 &&
    wait_for 10 "ls_cli node n1 --json | grep -q SECRETERR"
'

test_expect_success 'alice cannot see the job: show, logs, list (403 or absent)' '
    ! as_alice show $(cat job1) 2>err && grep -q "another user" err &&
    ! as_alice logs $(cat job1) >out 2>err && ! grep -q SECRET out &&
    grep -q "another user" err &&
    as_alice jobs --all --json >list.json && ! grep -q SECRET list.json &&
    code=$(curl -s -o body -w "%{http_code}" \
        -H "Authorization: Bearer $(cat alice.tok)" \
        "$LOCKSTEP_URL/v1/jobs?user=root&all=1") &&
    test "$code" = 403 && grep -q "only operators" body
'

test_expect_success 'the node detail and events show alice no other user'"'"'s evidence' '
    as_alice node n1 --json >n1.json &&
    ! grep -q SECRET n1.json &&
    jget "[e[\"detail\"].get(\"redacted\") for e in j[\"events\"] if e[\"kind\"] == \"node_blamed\"]" <n1.json |
        grep -qx "\[true\]" &&
    jget "[e[\"detail\"][\"job\"] for e in j[\"events\"] if e[\"kind\"] == \"node_blamed\"]" <n1.json |
        grep -qx "\[$(cat job1)\]" &&
    as_alice events --json >ev.json && ! grep -q SECRET ev.json &&
    grep -q node_blamed ev.json &&
    as_alice events --node n1 --json >evn.json && ! grep -q SECRET evn.json &&
    curl -s -H "Authorization: Bearer $(cat alice.tok)" \
        "$LOCKSTEP_URL/v1/nodes/n1" >raw.json && ! grep -q SECRET raw.json &&
    curl -s -H "Authorization: Bearer $(cat alice.tok)" \
        "$LOCKSTEP_URL/v1/events?kind=node_*" >rawev.json && ! grep -q SECRET rawev.json
'

test_expect_success 'the operator sees everything' '
    ls_cli node n1 --json | grep -q SECRETERR &&
    ls_cli events --node n1 --json | grep -q SECRETERR &&
    ls_cli show $(cat job1) --json | grep -q SECRETERR &&
    ls_cli logs $(cat job1) | grep -q SECRETOUT
'

test_expect_success 'alice sees her own job'"'"'s evidence, output and env' '
    id=$(as_alice submit --json --nodes 1 --max-restarts 0 --env MINE=aliceval -- \
        sh -c "echo ALICEOUT; echo ALICEERR >&2; exit 1" | jget "j[\"id\"]") &&
    echo $id >job2 && wait_job_state $id FAILED 30 &&
    as_alice show $id --json | grep -q ALICEERR &&
    as_alice show $id --json | grep -q aliceval &&
    as_alice logs $id | grep -q ALICEOUT &&
    wait_for 10 "as_alice node n1 --json | grep -q ALICEERR" &&
    ! as_alice node n1 --json | grep -q SECRET
'

test_expect_success 'priority above the default needs the operator role' '
    before=$(ls_cli events --kind request_refused --json | jget "len(j[\"events\"])") &&
    ! as_alice submit --priority 1000 --nodes 1 -- true 2>err &&
    cat err && grep -q "priority 1000" err && grep -q "operator role" err &&
    code=$(curl -s -o body -w "%{http_code}" -X POST \
        -H "Authorization: Bearer $(cat alice.tok)" \
        -d "{\"version\":1,\"argv\":[\"true\"],\"priority\":5}" \
        "$LOCKSTEP_URL/v1/jobs") &&
    test "$code" = 403 && grep -q "operator role" body &&
    ls_cli events --kind request_refused --json >ref.json &&
    test "$(jget "len(j[\"events\"])" <ref.json)" = $((before + 2)) &&
    jget "[(e[\"actor\"], e[\"detail\"][\"path\"]) for e in j[\"events\"]]" <ref.json |
        grep -qF "[\"alice\", \"/v1/jobs\"]" &&
    jget "j[\"events\"][-1][\"detail\"][\"reason\"]" <ref.json | grep -q "priority 5" &&
    test "$(db_query "SELECT count(*) FROM jobs WHERE user = '\''alice'\'' AND priority > 0")" = 0
'

test_expect_success 'a user may lower priority; the operator may raise it' '
    id=$(as_alice submit --json --priority -10 --nodes 1 -- true | jget "j[\"id\"]") &&
    test "$(ls_cli show $id --json | jget "j[\"priority\"]")" = -10 &&
    id=$(submit_id --priority 500 --nodes 1 -- true) &&
    test "$(ls_cli show $id --json | jget "j[\"priority\"]")" = 500
'

test_done
