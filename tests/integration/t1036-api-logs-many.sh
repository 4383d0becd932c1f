#!/bin/bash
# t1036: the many-ranks read of a job's output (docs/api.md, GET
# /v1/jobs/ID/logs without rank=). A one-node job of 16 ranks, each
# printing three lines (rank 5's last without a newline): `lockstep logs`
# reads every rank in one request (the scheduler's own request count for
# the route says so) and prints them complete, in rank order, as the
# per-rank reads did (following, an unfinished last line comes at the
# end, as before); --follow and --json too; a small limit pages (X-Lockstep-Log-More)
# and each rank's offsets carry on where the last reply stopped, giving
# the same bytes as the per-rank form, which still answers as before; bad
# ranks and offsets are refused with a message naming them.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
start_agent n1 -o cpus=16

api() { # PATH: the body to api.body, the headers to api.hdr; prints the status
    curl -s --unix-socket "$LOCKSTEP_SERVER" -o "$TEST_DIR/api.body" \
        -D "$TEST_DIR/api.hdr" -w "%{http_code}" "http://lockstep$1"
}

# logs_requests: GET /v1/jobs/{}/logs requests the scheduler has served.
logs_requests() {
    curl -s "$LOCKSTEP_URL/metrics" | sed -n \
        's/^lockstep_http_request_duration_seconds_count{method="GET",route="\/v1\/jobs\/{}\/logs"} //p' |
        grep . || echo 0
}

test_expect_success 'a job of 16 ranks, each printing three lines' '
    wait_nodes_up 1 &&
    id=$(submit_id --nodes 1 --ranks-per-node 16 -- sh -c \
        "echo rank \$RANK one; echo rank \$RANK two; if [ \$RANK = 5 ]; then printf \"rank 5 end\"; else echo rank \$RANK three; fi") &&
    wait_job_state $id SUCCEEDED 60 &&
    for r in $(seq 0 15); do
        echo "[rank $r] rank $r one" && echo "[rank $r] rank $r two" &&
        if [ $r = 5 ]; then echo "[rank 5] rank 5 end"; else echo "[rank $r] rank $r three"; fi
    done >expect
'

test_expect_success 'lockstep logs: every rank in one request, in rank order' '
    before=$(logs_requests) &&
    wait_for 30 "ls_cli logs $id >out && diff -u expect out" &&
    before=$(logs_requests) &&
    ls_cli logs $id >out && diff -u expect out &&
    after=$(logs_requests) &&
    test $((after - before)) = 1 &&
    { grep -v "rank 5 end" expect && echo "[rank 5] rank 5 end"; } >fexpect &&
    ls_cli logs $id --follow >fout && diff -u fexpect fout
'

test_expect_success 'lockstep logs --json: one object per line, rank order' '
    ls_cli logs $id --json >json &&
    test $(wc -l <json) = 48 &&
    "$PY" -c "
import json, sys
rows = [json.loads(l) for l in open(\"json\")]
assert [r[\"rank\"] for r in rows] == sorted(r[\"rank\"] for r in rows)
assert rows[17][\"text\"] == \"rank 5 end\", rows[17]
assert all(r[\"attempt\"] == 1 and r[\"stream\"] == \"out\" for r in rows)
"
'

test_expect_success 'a small limit pages; offsets carry on; the same bytes as rank=R' '
    for r in $(seq 0 15); do
        test "$(api "/v1/jobs/$id/logs?rank=$r")" = 200 &&
        cat api.body >>per-rank || return 1
    done &&
    "$PY" - "$LOCKSTEP_SERVER" $id >paged <<-\PYEOF &&
	import http.client, socket, sys
	class C(http.client.HTTPConnection):
	    def connect(self):
	        self.sock = socket.socket(socket.AF_UNIX)
	        self.sock.connect(sys.argv[1])
	off, out, reqs, cut = [0] * 16, {}, 0, 0
	while True:
	    c = C("lockstep")
	    q = "ranks=0-15&limit=7&offsets=" + ",".join(map(str, off))
	    c.request("GET", "/v1/jobs/%s/logs?%s" % (sys.argv[2], q))
	    r = c.getresponse(); body = r.read(); reqs += 1
	    assert r.status == 200, (r.status, body)
	    p = 0
	    while p < len(body):
	        nl = body.index(b"\n", p)
	        f = dict(kv.split(b"=") for kv in body[p:nl].split())
	        rank, start, n = int(f[b"rank"]), int(f[b"start"]), int(f[b"len"])
	        assert start == off[rank] and n <= 7
	        out.setdefault(rank, b"")
	        out[rank] += body[nl + 1:nl + 1 + n]
	        off[rank] += n
	        assert body[nl + 1 + n:nl + 2 + n] == b"\n"
	        p = nl + 2 + n
	    if r.getheader("X-Lockstep-Log-More") is None:
	        break
	    cut += 1
	assert cut > 10 and reqs == cut + 1, (reqs, cut)
	sys.stdout.buffer.write(b"".join(out[r] for r in sorted(out)))
	PYEOF
    cmp per-rank paged
'

test_expect_success 'the per-rank form answers as before' '
    test "$(api "/v1/jobs/$id/logs?rank=3&offset=7")" = 200 &&
    printf "one\nrank 3 two\nrank 3 three\n" >want && cmp want api.body &&
    grep -i "^X-Lockstep-Log-Size: 35" api.hdr &&
    grep -i "^X-Lockstep-Log-Offset: 7" api.hdr &&
    test "$(api "/v1/jobs/$id/logs?rank=16")" = 404 &&
    grep "has no rank 16 (world size 16)" api.body &&
    test "$(api "/v1/jobs/$id/logs?rank=0&attempt=2")" = 404 &&
    grep "has no attempt 2" api.body &&
    test "$(api "/v1/jobs/$id/logs?attempt=2")" = 404 &&
    grep "has no attempt 2" api.body
'

test_expect_success 'a range and offsets that are wrong are refused, named' '
    test "$(api "/v1/jobs/$id/logs?ranks=3-1")" = 400 &&
    grep "ranks" api.body &&
    test "$(api "/v1/jobs/$id/logs?ranks=x")" = 400 &&
    test "$(api "/v1/jobs/$id/logs?ranks=0-3&offsets=1,,2")" = 400 &&
    grep "offsets" api.body &&
    test "$(api "/v1/jobs/$id/logs?ranks=0-1&offsets=1,2,3")" = 400 &&
    test "$(api "/v1/jobs/$id/logs?ranks=16-20")" = 404 &&
    test "$(api "/v1/jobs/$id/logs?ranks=14-99")" = 200 &&
    grep -i "^X-Lockstep-Log-Ranks: 14-15" api.hdr
'

test_done
