#!/bin/bash
# replicas.sh - what replication costs and how fast a failover is. Prints
# figures; asserts nothing. docs/operations.md "Replicas" points here.
#
#   bench/replicas.sh [--jobs N] [--threads T] [--trials K] [--et MS]
#
# On this machine, each on a fresh state (the plain build, its own
# temporary directory and free ports, synchronous=full for the single
# scheduler as by default):
#   - submit: N (default 2000) submissions of queued jobs over T (default
#     8) keep-alive connections to the Unix socket, to one lockstepd and
#     to the leader of three replicas: submissions per second, and each
#     submission's latency (p50, p99); then the same one at a time
#     (latency alone, no batching);
#   - failover: K (default 20) times, the leader of three replicas is
#     killed with SIGKILL and a client submits every 20 ms to every
#     replica until one acknowledges: the time from the kill to that
#     acknowledged submission (p50, p99, max), with
#     replica_election_timeout_ms MS (default 1000). The killed replica is
#     started again and catches up before the next trial.
# The three-replica figures are printed beside the single scheduler's and
# their ratio. Replicas on one machine share its disk and CPUs: on real
# machines each fsyncs its own log, and the network adds a round trip.
set -u
JOBS=2000 THREADS=8 TRIALS=20 ET=1000
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --et) ET=$2; shift 2 ;;
    *) sed -n 2,24p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
. "$(dirname "$0")/../tests/lib/replicas.sh"
MANY=$SRC_DIR/tests/helpers/submit-many.py
declare -A FIG=()

# record TAG LINE: keep each key=value of LINE as FIG[TAG.key].
record() {
    local tag=$1 kv
    echo "  [$tag] $2"
    for kv in $2; do FIG[$tag.${kv%%=*}]=${kv#*=}; done
}

many() { # SOCKETS COUNT THREADS PREFIX
    "$PY" "$MANY" --sockets "$1" --count "$2" --threads "$3" --prefix "$4"
}

# probe_ms: ms from now until a submission is acknowledged by any replica
# (20 ms between tries; connection failures and not_leader retried).
probe_ms() {
    "$PY" - "$LOCKSTEP_SERVER" <<'PY'
import http.client, json, socket, sys, time
socks = sys.argv[1].split(",")
class U(http.client.HTTPConnection):
    def __init__(self, p):
        super().__init__("localhost", timeout=10)
        self.p = p
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.p)
t0 = time.monotonic()
body = json.dumps({"version": 1, "name": "probe", "argv": ["true"],
                   "wait_for_nodes": True})
while time.monotonic() - t0 < 60:
    for s in socks:
        try:
            c = U(s)
            c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 201:
                print("%.0f" % ((time.monotonic() - t0) * 1000))
                sys.exit(0)
        except (OSError, http.client.HTTPException):
            pass
    time.sleep(0.02)
sys.exit(1)
PY
}

pct() { # P FILE: the P-th percentile of the numbers in FILE
    sort -n "$2" | awk -v p="$1" '{ v[NR] = $1 } END {
        i = int(NR * p / 100); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}

echo "# $(nproc) cores, $(uname -r), lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
echo "# submit: $JOBS jobs over $THREADS connections; failover: $TRIALS trials, election timeout $ET ms"

echo "== one scheduler"
start_scheduler || exit 1
record one "$(many "$LOCKSTEP_SERVER" "$JOBS" "$THREADS" one)"
record one1 "$(many "$LOCKSTEP_SERVER" 300 1 one-seq)"
stop_scheduler

echo "== three replicas"
REPLICA_ET_MS=$ET start_replicas 3 || exit 1
wait_leader 30 >/dev/null || exit 1
record three "$(many "$LOCKSTEP_SERVER" "$JOBS" "$THREADS" three)"
record three1 "$(many "$LOCKSTEP_SERVER" 300 1 three-seq)"

echo "== failover"
: >"$TEST_DIR/failover"
for t in $(seq 1 "$TRIALS"); do
    l=$(wait_leader 30) || { echo "no leader"; exit 1; }
    target=$(replica_health "$l" | jget 'j["applied"]')
    kill_replica "$l"
    ms=$(probe_ms) || { echo "trial $t: no new leader in 60 s"; exit 1; }
    echo "$ms" >>"$TEST_DIR/failover"
    echo "  trial $t: replica $l killed, a submission acknowledged after $ms ms"
    start_replica "$l"
    wait_for 60 "test \"\$(replica_health $l | jget 'j[\"applied\"]' 2>/dev/null || echo 0)\" -ge $target" ||
        { echo "replica $l did not catch up"; exit 1; }
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo
echo "figures (three replicas beside one scheduler, ratio three/one):"
printf '  %-34s %10s %10s %7s\n' "" one three ratio
for k in rate p50_ms p99_ms; do
    printf '  %-34s %10s %10s %7s\n' "submit, $THREADS connections: $k" \
        "${FIG[one.$k]}" "${FIG[three.$k]}" "$(ratio "${FIG[three.$k]}" "${FIG[one.$k]}")"
done
for k in rate p50_ms p99_ms; do
    printf '  %-34s %10s %10s %7s\n' "submit, one at a time: $k" \
        "${FIG[one1.$k]}" "${FIG[three1.$k]}" "$(ratio "${FIG[three1.$k]}" "${FIG[one1.$k]}")"
done
echo "  failover (kill -> next acknowledged submit, $TRIALS trials):" \
    "p50 $(pct 50 "$TEST_DIR/failover") ms, p99 $(pct 99 "$TEST_DIR/failover") ms," \
    "max $(sort -n "$TEST_DIR/failover" | tail -n 1) ms"
