#!/bin/bash
# t1010: GET /metrics. The real output passes `promtool check metrics`
# (Debian's prometheus package); it shows nodes and jobs by state, the
# failures by kind, ETTR, the loop lag, the request latency by route
# pattern (never the raw path) and the commit time; it needs no
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

test_done
