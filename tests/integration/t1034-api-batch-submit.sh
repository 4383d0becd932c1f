#!/bin/bash
# t1034: many jobs in one request (docs/api.md "Many jobs in one
# request"): `lockstep submit --specs FILE` sends JSON lines as one batch
# with the command line's options as common fields; a batch is all or
# nothing (a bad spec, an unsatisfiable one or the queued-jobs limit
# refuses it whole, naming the job); it counts as one request for the
# submission rate and as its jobs for the queued-jobs limit; the jobs run.
. "$(dirname "$0")/../lib/harness.sh"

# A short node timeout: the fit check refuses nothing within it of the
# start (agents are still registering).
NODE_TIMEOUT_MS=3000 LEASE_MS=1500 start_scheduler -o user_max_queued_jobs=12 -o user_submit_rate=1 \
    -o user_submit_burst=1
# When that grace is surely over (the scheduler started before this).
GRACE_END=$("$PY" -c "import time; print(time.time() + 3.5)")

# batch TOKEN BODY: POST it over TCP; prints "STATUS MESSAGE-OR-COUNT".
batch() {
    "$PY" - "$LOCKSTEP_URL" "$1" "$2" <<'PYEOF'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
c.request("POST", "/v1/jobs", sys.argv[3], {"Authorization": "Bearer " + sys.argv[2],
          "Content-Type": "application/json"})
r = c.getresponse()
j = json.loads(r.read().decode())
print(r.status, j["count"] if r.status == 201 else j["error"]["message"])
PYEOF
}

jobs_named() { # PATTERN: how many jobs have a name LIKE it
    db_query "SELECT count(*) FROM jobs WHERE name LIKE '$1'"
}

test_expect_success 'two 4-CPU nodes' '
    start_agent n1 -o cpus=4 && start_agent n2 -o cpus=4 && wait_nodes_up 2
'

test_expect_success 'submit --specs: 6 jobs in one request, options common' '
    for i in 1 2 3 4 5 6; do
        echo "{\"argv\": [\"sh\", \"-c\", \"echo job $i:\$GREETING\"], \"name\": \"sweep-$i\"}"
    done >sweep.jsonl &&
    echo "# a comment, and a blank line" >>sweep.jsonl && echo >>sweep.jsonl &&
    GREETING=hello ls_cli submit --cpus-per-rank 2 --specs sweep.jsonl >out &&
    cat out && grep -q "^submitted 6 jobs: " out &&
    test "$(jobs_named "sweep-%")" = 6 &&
    test "$(db_query "SELECT DISTINCT cpus_per_rank FROM jobs WHERE name LIKE '\''sweep-%'\''")" = 2
'

test_expect_success 'they run with the environment they were sent with' '
    for i in 1 2 3 4 5 6; do
        id=$(db_query "SELECT id FROM jobs WHERE name = '\''sweep-$i'\''") &&
        wait_job_state $id SUCCEEDED 60 &&
        ls_cli logs $id | grep -qx "job $i:hello" || return 1
    done
'

test_expect_success 'a line sets its own field over the common one' '
    echo "{\"argv\": [\"true\"], \"name\": \"own\", \"cpus_per_rank\": 1}" |
        ls_cli submit --cpus-per-rank 3 --json --specs - >own.json &&
    test "$(jget "j[\"count\"]" <own.json)" = 1 &&
    test "$(db_query "SELECT cpus_per_rank FROM jobs WHERE name = '\''own'\''")" = 1
'

test_expect_success 'a bad line is refused before anything is sent' '
    printf "{\"argv\": [\"true\"], \"name\": \"bad-1\"}\n{oops\n" >bad.jsonl &&
    ! ls_cli submit --specs bad.jsonl 2>err &&
    cat err && grep -q "bad.jsonl:2: not a JSON object: {oops$" err &&
    test "$(jobs_named "bad-%")" = 0
'

test_expect_success 'an invalid spec refuses the whole batch, naming it' '
    printf "{\"argv\": [\"true\"], \"name\": \"inv-1\"}\n{\"argv\": [\"true\"], \"nodes\": 0}\n" >inv.jsonl &&
    ! ls_cli submit --specs - <inv.jsonl 2>err &&
    cat err &&
    grep -q "jobs\[1\]: field .nodes.: must be between 1 and 10000, got 0" err &&
    test "$(jobs_named "inv-%")" = 0
'

test_expect_success 'an unsatisfiable job refuses the whole batch with 422' '
    "$PY" -c "import time; time.sleep(max(0, $GRACE_END - time.time()))" &&
    printf "{\"argv\": [\"true\"], \"name\": \"un-1\"}\n{\"argv\": [\"true\"], \"name\": \"un-2\", \"nodes\": 3}\n" >un.jsonl &&
    ! ls_cli submit --specs - <un.jsonl 2>err &&
    cat err && grep -q "jobs\[1\]: this job can never run on this cluster: needs 3 nodes" err &&
    test "$(jobs_named "un-%")" = 0
'

test_expect_success 'a user: a batch is one request for the rate limit' '
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    batch $(cat alice.tok) "{\"version\":1,\"jobs\":[{\"argv\":[\"sleep\",\"100\"],\"nodes\":2,\"cpus_per_rank\":4,\"name\":\"al-1\"},{\"argv\":[\"sleep\",\"100\"],\"nodes\":2,\"cpus_per_rank\":4,\"name\":\"al-2\"},{\"argv\":[\"sleep\",\"100\"],\"nodes\":2,\"cpus_per_rank\":4,\"name\":\"al-3\"}],\"common\":{\"env\":{\"A\":\"1\"}}}" >b1 &&
    cat b1 && test "$(cat b1)" = "201 3" &&
    batch $(cat alice.tok) "{\"version\":1,\"jobs\":[{\"argv\":[\"true\"]}]}" >b2 &&
    cat b2 && grep -q "^429 user alice submits too fast" b2
'

test_expect_success 'and its jobs count for the queued-jobs limit, all or none' '
    sleep 1.2 &&
    body=$("$PY" -c "import json; print(json.dumps({\"version\": 1, \"jobs\": [{\"argv\": [\"true\"], \"name\": \"lim-%d\" % i, \"nodes\": 2, \"cpus_per_rank\": 4} for i in range(11)]}))") &&
    batch $(cat alice.tok) "$body" >b3 &&
    cat b3 &&
    grep -q "^429 user alice has [0-9]* queued jobs; 11 more would pass the limit of 12" b3 &&
    test "$(jobs_named "lim-%")" = 0
'

test_done
