#!/bin/bash
# t1015: per-user submission limits. A user over the queued-jobs limit or
# the submission rate gets 429 with Retry-After and a message naming the
# limit and the user's count (the CLI prints it); other users are
# unaffected, operators are exempt, nothing accepted is lost, each refusal
# is a submit_refused event and counted in /metrics.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler -o user_max_queued_jobs=3 -o user_submit_rate=1 \
    -o user_submit_burst=2

# post_jobs TOKEN N: N submissions at once on one keep-alive connection;
# prints "STATUS RETRY-AFTER MESSAGE" per line, then "elapsed SECONDS".
post_jobs() {
    "$PY" - "$LOCKSTEP_URL" "$1" "$2" <<'PYEOF'
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
body = json.dumps({"version": 1, "argv": ["sleep", "100"], "nodes": 1})
t0 = time.monotonic()
for _ in range(int(sys.argv[3])):
    c.request("POST", "/v1/jobs", body, {"Authorization": "Bearer " + sys.argv[2],
              "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    msg = json.loads(data).get("error", {}).get("message", "") if r.status != 201 else ""
    print(r.status, r.getheader("Retry-After", "-"), msg)
print("elapsed %.3f" % (time.monotonic() - t0))
PYEOF
}

queued() { # USER: PENDING jobs of USER in the database
    db_query "SELECT count(*) FROM jobs WHERE user = '$1' AND state = 'PENDING'"
}

test_expect_success 'tokens for alice and bob (users) and carol (operator)' '
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    ls_cli token create --user bob --role user --json | jget "j[\"token\"]" >bob.tok &&
    ls_cli token create --user carol --role operator --json | jget "j[\"token\"]" >carol.tok
'

test_expect_success 'alice: a burst of 2, then 429 for the rate with Retry-After' '
    post_jobs $(cat alice.tok) 3 >rate.out && cat rate.out &&
    test "$(sed -n 1p rate.out | cut -d" " -f1)" = 201 &&
    test "$(sed -n 2p rate.out | cut -d" " -f1)" = 201 &&
    sed -n 3p rate.out | grep -q "^429 1 user alice submits too fast: the limit is 1 per second (burst 2); 2 jobs queued$" &&
    "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1.0 else 1)" \
        "$(sed -n 4p rate.out | cut -d" " -f2)" &&
    test "$(queued alice)" = 2
'

test_expect_success 'a second later alice may submit again (3 queued)' '
    sleep 1.2 &&
    post_jobs $(cat alice.tok) 1 | tee one.out | grep -q "^201 " &&
    test "$(queued alice)" = 3
'

test_expect_success 'alice at her queued limit: 429 naming the limit and her count' '
    sleep 1.2 &&
    post_jobs $(cat alice.tok) 1 >q.out && cat q.out &&
    grep -q "^429 30 user alice has 3 queued jobs; the limit is 3 (max queued jobs per user)$" q.out &&
    test "$(queued alice)" = 3
'

test_expect_success 'the CLI prints the refusal and exits non-zero' '
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli submit -- sleep 100 >out.txt 2>err.txt; rc=$? &&
    cat err.txt && test $rc != 0 &&
    grep -q "alice has 3 queued jobs; the limit is 3" err.txt
'

test_expect_success 'bob is unaffected by alice' '
    post_jobs $(cat bob.tok) 2 >bob.out && cat bob.out &&
    test "$(grep -c "^201 " bob.out)" = 2 && test "$(queued bob)" = 2
'

test_expect_success 'carol (operator) is exempt: 6 at once, all accepted' '
    post_jobs $(cat carol.tok) 6 >carol.out &&
    test "$(grep -c "^201 " carol.out)" = 6 && test "$(queued carol)" = 6
'

test_expect_success 'root on the Unix socket (operator) is exempt too' '
    for i in 1 2 3 4; do submit_id -- sleep 100 >/dev/null || return 1; done &&
    test "$(queued "$(id -un)")" = 4
'

test_expect_success 'a cancelled job makes room: alice submits again' '
    id=$(db_query "SELECT min(id) FROM jobs WHERE user = '\''alice'\''") &&
    ls_cli cancel $id && sleep 1.2 &&
    post_jobs $(cat alice.tok) 1 | grep -q "^201 " &&
    test "$(queued alice)" = 3
'

test_expect_success 'each refusal kind is an event on user/alice, with the reason' '
    db_query "SELECT kind, detail FROM events WHERE subject = '\''user/alice'\''" >ev.txt &&
    cat ev.txt &&
    grep "^submit_refused|" ev.txt | grep -q "\"limit\":\"rate\"" &&
    grep "^submit_refused|" ev.txt | grep -q "\"limit\":\"queued\""
'

test_expect_success '/metrics counts the refusals by limit' '
    curl -s "$LOCKSTEP_URL/metrics" >m.txt &&
    grep -q "^lockstep_submissions_refused_total{limit=\"rate\"} 1$" m.txt &&
    grep -q "^lockstep_submissions_refused_total{limit=\"queued\"} 2$" m.txt
'

test_done
