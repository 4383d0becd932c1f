#!/bin/bash
# t1010: GET /metrics. The real output passes `promtool check metrics`
# (Debian's prometheus package); it shows nodes and jobs by state, the
# failures by kind, ETTR, the loop lag, the request latency by route
# pattern (never the raw path) and the commit time; the jobs and
# attempts by state and the restarts, which the scheduler keeps as jobs
# change instead of counting them per scrape, equal a recount of its
# database after many changes and after a kill -9 and restart; it needs no
# credential unless metrics_token_required; and a real Prometheus, on a
# free loopback port with its own storage, scrapes it.
. "$(dirname "$0")/../lib/harness.sh"

PROMTOOL=/usr/bin/promtool
PROMETHEUS=/usr/bin/prometheus
if [ ! -x $PROMTOOL ] || [ ! -x $PROMETHEUS ]; then
    # make deps installs it (tools/apt-install.sh prometheus).
    echo "Bail out! the prometheus package is missing (make deps installs it)"
    exit 1
fi

fault_timeouts
start_scheduler
start_agent n1

metrics() { # [TOKEN]: the body to metrics.txt, prints the HTTP status
    local args=(-s -o "$TEST_DIR/metrics.txt" -D "$TEST_DIR/metrics.hdr"
        -w "%{http_code}")
    [ -n "${1:-}" ] && args+=(-H "Authorization: Bearer $1")
    curl "${args[@]}" "$LOCKSTEP_URL/metrics"
}

test_expect_success 'a job that succeeds and one that fails for good' '
    wait_nodes_up 1 &&
    ok=$(submit_id --nodes 1 -- true) && wait_job_state $ok SUCCEEDED 30 &&
    bad=$(submit_id --nodes 1 --max-restarts 0 -- false) &&
    wait_job_state $bad FAILED 30 &&
    ls_cli show $ok >/dev/null
'

test_expect_success '/metrics needs no credential by default, text 0.0.4' '
    test "$(metrics)" = 200 &&
    grep -i "^content-type: text/plain; version=0.0.4" metrics.hdr
'

test_expect_success 'promtool check metrics passes on the real output' '
    $PROMTOOL check metrics <metrics.txt
'

test_expect_success 'nodes and jobs by state, failures by kind, ETTR' '
    grep -x "lockstep_nodes{state=\"UP\"} 1" metrics.txt &&
    grep -x "lockstep_nodes{state=\"LOST\"} 0" metrics.txt &&
    grep -x "lockstep_jobs{state=\"SUCCEEDED\"} 1" metrics.txt &&
    grep -x "lockstep_jobs{state=\"FAILED\"} 1" metrics.txt &&
    grep -x "lockstep_attempts{state=\"FAILED\"} 1" metrics.txt &&
    grep -x "lockstep_attempt_failures_total{kind=\"rank_exit\"} 1" metrics.txt &&
    grep "^lockstep_job_restarts_total " metrics.txt &&
    grep "^# TYPE lockstep_ettr gauge" metrics.txt &&
    grep "^lockstep_ettr " metrics.txt
'

test_expect_success 'loop lag, commit time and request latency histograms' '
    grep "^# TYPE lockstep_loop_lag_seconds histogram" metrics.txt &&
    grep "^lockstep_loop_lag_seconds_bucket{le=\"+Inf\"} [1-9]" metrics.txt &&
    grep "^lockstep_db_commit_duration_seconds_count [1-9]" metrics.txt &&
    grep "^lockstep_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/jobs/{}\"} [1-9]" metrics.txt &&
    grep "^lockstep_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/jobs\"} 2$" metrics.txt &&
    ! grep "route=\"/v1/jobs/[0-9]" metrics.txt &&
    grep "^lockstep_alerts_queued 0" metrics.txt
'

test_expect_success 'metrics_token_required: 401 without a token, 200 with one' '
    ls_cli token create --user mon --role user --json | jget "j[\"token\"]" >mon.tok &&
    stop_scheduler &&
    start_scheduler -o metrics_token_required=true &&
    test "$(metrics)" = 401 &&
    test "$(metrics "$(cat mon.tok)")" = 200 &&
    $PROMTOOL check metrics <metrics.txt &&
    stop_scheduler && start_scheduler
'

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_query EXPR: the first sample value of an instant query, or nothing.
prom_query() {
    curl -s -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode "query=$1" |
        jget "j[\"data\"][\"result\"][0][\"value\"][1] if j[\"data\"][\"result\"] else \"\""
}

test_expect_success 'a real Prometheus scrapes it: up is 1, lockstep metrics are there' '
    PROM_PORT=$(free_port) &&
    cat >prom.yml <<-EOF &&
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: lockstep
	    static_configs:
	      - targets: ["127.0.0.1:$(cat sched/port)"]
	EOF
    mkdir -p prom || return 1
    # Started on its own line: in an && chain, & would fork the chain.
    $PROMETHEUS --config.file=prom.yml --storage.tsdb.path=prom \
        --web.listen-address=127.0.0.1:$PROM_PORT >prom.log 2>&1 &
    PROM_PID=$!
    EXTRA_PIDS+=($PROM_PID)
    wait_for 60 "test \"\$(prom_query up)\" = 1" &&
    wait_for 30 "test \"\$(prom_query "lockstep_nodes{state=\\\"UP\\\"}")\" = 1" &&
    test "$(prom_query "lockstep_jobs{state=\"FAILED\"}")" = 1 &&
    kill $PROM_PID && { wait $PROM_PID; true; } && ! kill -0 $PROM_PID 2>/dev/null
'

# recount: each job and attempt state and the restarts, as /metrics gives
# them and as the database holds them, one "name state metrics database" per line.
recount() {
    metrics >/dev/null &&
    for s in PENDING PLACED RUNNING RESTARTING SUCCEEDED FAILED CANCELLED; do
        echo "jobs $s $(sed -n "s/^lockstep_jobs{state=\"$s\"} //p" metrics.txt)" \
            "$(sqlite3 sched/state/lockstep.db \
                "SELECT COUNT(*) FROM jobs WHERE state = '$s'")"
    done &&
    for s in STARTING RUNNING SUCCEEDED FAILED CANCELLED; do
        echo "attempts $s $(sed -n "s/^lockstep_attempts{state=\"$s\"} //p" metrics.txt)" \
            "$(sqlite3 sched/state/lockstep.db \
                "SELECT COUNT(*) FROM attempts WHERE state = '$s'")"
    done &&
    echo "restarts - $(sed -n "s/^lockstep_job_restarts_total //p" metrics.txt)" \
        "$(sqlite3 sched/state/lockstep.db \
            "SELECT SUM(restarts) + SUM(infra_restarts) FROM jobs")"
}

# counts_agree: every count of /metrics equals the database's.
counts_agree() {
    recount >recount.txt &&
    awk '$3 != $4 { bad = 1; print "differs: " $0 } END { exit bad }' recount.txt
}

test_expect_success 'the counts by state equal a recount after many changes' '
    a=$(submit_id --nodes 1 --max-restarts 2 -- false) &&
    wait_job_state $a FAILED 60 &&
    h=$(submit_id --nodes 3 --wait-for-nodes -- true) &&
    ls_cli hold $h >/dev/null &&
    p=$(submit_id --nodes 5 --wait-for-nodes -- true) &&
    ls_cli cancel $p >/dev/null && wait_job_state $p CANCELLED 30 &&
    r=$(submit_id --nodes 1 -- sleep 600) && wait_job_state $r RUNNING 30 &&
    q=$(submit_id --nodes 2 --wait-for-nodes -- true) &&
    counts_agree &&
    grep -x "restarts - 2 2" recount.txt &&
    grep -x "jobs RUNNING 1 1" recount.txt &&
    grep -x "jobs PENDING 2 2" recount.txt &&
    ls_cli cancel $r >/dev/null && wait_job_state $r CANCELLED 30 &&
    counts_agree
'

test_expect_success 'and after lockstepd is killed and started again' '
    kill_scheduler && start_scheduler &&
    counts_agree &&
    ls_cli cancel $h $q >/dev/null && wait_job_state $q CANCELLED 30 &&
    counts_agree && grep -x "jobs PENDING 0 0" recount.txt
'

test_done
