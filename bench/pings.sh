#!/bin/bash
# pings.sh - what lease pings cost the scheduler. Prints figures; asserts
# nothing (docs/scale.md "Node loss in seconds").
#
#   bench/pings.sh [--nodes N] [--rate R] [--seconds S]
#
# A fresh lockstepd (production timing) and N simulated agents
# (bench/sim.c, 2,500 a process, heartbeat 1 s; default 2,000). Then, for
# S seconds each (default 10), alternated twice: the scheduler's CPU with
# the agents' statuses alone (the baseline), and with signed lease pings
# of every simulated node added at R a second in all (default 10,000:
# 3,000 busy nodes pinging every 300 ms), sent round robin over UDP by
# one Python process that counts the answers. Prints the CPU of each
# round in ms a second, the pings answered, and the CPU a ping costs
# (the difference over the pings answered), and what that makes at
# 10,000 busy nodes (33,333 pings a second).
set -u
NODES=2000 RATE=10000 SECS=10
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    *) sed -n 2,16p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"

HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000
start_scheduler >/dev/null || exit 1
ulimit -n "$(ulimit -Hn)" 2>/dev/null
start_sims "$NODES" 2500 load --report-ms 60000
wait_nodes_up "$NODES" 300 || { echo "the simulated agents did not come up"; exit 1; }
sleep 3

# cpu_ms: the scheduler's user + system CPU so far, in ms.
cpu_ms() {
    awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' \
        "/proc/$SCHED_PID/stat"
}

# flood SECONDS RATE: lease pings of sim1..simN at RATE a second for
# SECONDS; prints "sent answered".
flood() {
    "$PY" - "$CLUSTER_SECRET" "$(cat "$TEST_DIR/sched/port")" "$NODES" "$1" "$2" <<'PY'
import hashlib, hmac, socket, sys, time
secret = open(sys.argv[1], "rb").read().rstrip()
port, n, secs, rate = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def mac(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
msgs = []
for i in range(1, n + 1):
    node = "sim%d" % i
    nk = hmac.new(secret, ("lockstep-node-key:" + node).encode(), hashlib.sha256).digest()
    key = mac(nk, "lockstep-lease-v1").encode()
    text = "LSP1 %s %d run" % (node, i)
    msgs.append(("%s %s" % (text, mac(key, text))).encode())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.setblocking(False)
addr = ("127.0.0.1", port)
sent = answered = 0
def drain():
    global answered
    while True:
        try:
            s.recvfrom(512)
            answered += 1
        except BlockingIOError:
            return
t0 = time.monotonic()
while True:
    el = time.monotonic() - t0
    if el >= secs:
        break
    due = int(el * rate)
    while sent < due:
        try:
            s.sendto(msgs[sent % n], addr)
        except BlockingIOError:
            break
        sent += 1
    drain()
    time.sleep(0.001)
time.sleep(0.2)
drain()
print(sent, answered)
PY
}

echo "# lease pings: lockstepd CPU with $NODES simulated agents (heartbeat 1 s)"
echo "# rounds of $SECS s, alternated; pings at $RATE/s round robin over the nodes; 2 cores"
printf '%-8s %10s %10s %10s\n' round cpu_ms/s sent answered
base_total=0 ping_total=0 answered_total=0
for r in 1 2; do
    c0=$(cpu_ms)
    sleep "$SECS"
    c1=$(cpu_ms)
    b=$(((c1 - c0) / SECS))
    printf '%-8s %10d %10s %10s\n' "base$r" "$b" - -
    c0=$(cpu_ms)
    read -r sent answered < <(flood "$SECS" "$RATE")
    c1=$(cpu_ms)
    p=$(((c1 - c0) / SECS))
    printf '%-8s %10d %10d %10d\n' "pings$r" "$p" "$sent" "$answered"
    base_total=$((base_total + b))
    ping_total=$((ping_total + p))
    answered_total=$((answered_total + answered))
done
"$PY" - "$base_total" "$ping_total" "$answered_total" "$SECS" <<'PY'
import sys
b, p, a, secs = (float(x) for x in sys.argv[1:])
per_s = a / (2 * secs)
us = (p - b) / 2 * 1000 / per_s if per_s else float("nan")
print("pings answered: %.0f/s; CPU %.0f ms/s against %.0f ms/s without: %.1f us a ping"
      % (per_s, p / 2, b / 2, us))
print("at 10,000 busy nodes (33,333 pings/s): %.2f of a core" % (us * 33333 / 1e6))
PY
