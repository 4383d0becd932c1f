#!/bin/bash
# attack.sh - lockstepd under a flood of trickling connections from one
# client (issue 11, "What must be true" 3). Prints figures; asserts
# nothing. docs/scale.md says what each figure means.
#
#   bench/attack.sh [--conns N] [--secs S] [--sim-nodes A]
#                   [--max-connections M] [--reserve R] [--per-peer P]
#
# A fresh lockstepd (the plain build, its own directory and port, the
# default deadlines: a request head within 10 s), two real agents and A
# (default 50) agents simulated by lockstep-sim, all over TCP from
# 127.0.0.1; an operator's token. Then N (default 3000) connections from
# 127.0.0.2 trickle a request head a byte every 500 ms for S (default 60)
# seconds (tests/helpers/slowloris.py; a connection closed by the
# scheduler is opened again at once). M, R and P set max_connections,
# agent_reserved_connections and max_connections_per_peer (default: the
# scheduler's own; P 0 lets the one address hold all N). Printed, before
# / during / after the attack:
#   - connections held: the attacker's open count (a connection the
#     scheduler shed counts until the attacker sees it closed) and the
#     scheduler's user connections, sampled each second: median and max;
#   - the simulated agents' status round trip (heartbeat delay) p50 and
#     p99 and reports/s, before and during;
#   - an operator's `lockstep nodes` over TCP every 2 s: answered / tried,
#     and the slowest;
#   - the scheduler's descriptors and RSS before, at the most during, and
#     15 s after the attack;
#   - node_lost events (must be 0).
set -u
N=3000 S=60 SIMN=50 MAXC= RES= PEER=
while [ $# -gt 0 ]; do
    case $1 in
    --conns) N=$2; shift 2 ;;
    --secs) S=$2; shift 2 ;;
    --sim-nodes) SIMN=$2; shift 2 ;;
    --max-connections) MAXC=$2; shift 2 ;;
    --reserve) RES=$2; shift 2 ;;
    --per-peer) PEER=$2; shift 2 ;;
    *) sed -n 2,30p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
ulimit -n "$(ulimit -Hn)" 2>/dev/null
HEARTBEAT_MS=1000

opts=()
[ -n "$MAXC" ] && opts+=(-o max_connections="$MAXC")
[ -n "$RES" ] && opts+=(-o agent_reserved_connections="$RES")
[ -n "$PEER" ] && opts+=(-o max_connections_per_peer="$PEER")
start_scheduler "${opts[@]}" || exit 1
export AGENT_SERVER=$LOCKSTEP_URL
start_agent n1
start_agent n2
PORT=$(cat "$TEST_DIR/sched/port")
wait_nodes_up 2 || { echo "agents did not come up" >&2; exit 1; }
OPTOK=$(ls_cli token create --user ops --role operator --json | jget 'j["token"]')

# The simulated agents, their report lines stamped with the time.
"$SIM" --server "$LOCKSTEP_URL" --cluster-secret-file "$CLUSTER_SECRET" \
    --nodes "$SIMN" --report-ms 5000 2>"$TEST_DIR/sim.err" |
    while IFS= read -r line; do echo "$(date +%s) $line"; done \
        >"$TEST_DIR/sim.out" &
EXTRA_PIDS+=($!)
SIM_PIPE=$!

metric() { # NAME{labels} over the Unix socket
    curl -s --unix-socket "$TEST_DIR/sched/sock" http://x/metrics |
        awk -v m="$1" '$1 == m { print $2 }'
}
fds() { ls /proc/"$SCHED_PID"/fd | wc -l; }
rss() { awk '/^VmRSS/ { print $2 }' /proc/"$SCHED_PID"/status; }

# Operator probes: `lockstep nodes` over TCP every 2 s, "ok MS" or
# "fail MS" per line, until the file stop exists.
op_probe() {
    local t0 t1 rc
    while [ ! -e "$TEST_DIR/op.stop" ]; do
        t0=$(date +%s%N)
        LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$OPTOK \
            timeout 20 "$CLI" nodes >/dev/null 2>>"$TEST_DIR/op.err"
        rc=$?
        t1=$(date +%s%N)
        echo "$([ $rc = 0 ] && echo ok || echo fail) $(((t1 - t0) / 1000000))"
        sleep 2
    done
}

# sim_figures FROM TO: of the report lines stamped in [FROM, TO), the
# median p50, the worst p99 of any 5 s window, and reports/s.
sim_figures() {
    "$PY" - "$1" "$2" "$TEST_DIR/sim.out" <<'PYEOF'
import sys
a, b = int(sys.argv[1]), int(sys.argv[2])
w = []
for line in open(sys.argv[3]):
    f = line.split()
    if len(f) > 2 and f[1] == "sim:" and a <= int(f[0]) < b:
        w.append(dict(x.split("=", 1) for x in f[2:] if "=" in x))
if not w:
    print("no sim reports")
    sys.exit()
p50 = sorted(float(x["rtt_p50_ms"]) for x in w)[(len(w) - 1) // 2]
p99 = max(float(x["rtt_p99_ms"]) for x in w)
rps = sum(float(x["reports/s"]) for x in w) / len(w)
print("rtt_p50_ms=%.1f rtt_p99_ms=%.1f (worst 5 s window) reports/s=%.0f "
      "(%d windows)" % (p50, p99, rps, len(w)))
PYEOF
}

echo "lockstepd: max_connections=$(metric 'lockstep_http_connection_limit{limit="max"}')" \
    "agent_reserve=$(metric 'lockstep_http_connection_limit{limit="agent_reserve"}')" \
    "per_peer=$(metric 'lockstep_http_connection_limit{limit="per_peer"}');" \
    "2 agents, $SIMN simulated, heartbeat ${HEARTBEAT_MS} ms"
sleep 20
b0=$(date +%s)
sleep 20
b1=$(date +%s)
fds0=$(fds) rss0=$(rss)
op_probe >"$TEST_DIR/op.before" &
EXTRA_PIDS+=($!)
sleep 6
touch "$TEST_DIR/op.stop"; wait $!; rm -f "$TEST_DIR/op.stop"

echo "attack: $N connections from 127.0.0.2 for $S s ..."
a0=$(date +%s)
"$PY" "$SRC_DIR/tests/helpers/slowloris.py" 127.0.0.1 "$PORT" "$N" "$S" \
    "$TEST_DIR/loris.json" --source 127.0.0.2 &
EXTRA_PIDS+=($!)
LORIS=$!
op_probe >"$TEST_DIR/op.during" &
EXTRA_PIDS+=($!)
OPP=$!
fdsmax=0 rssmax=0
: >"$TEST_DIR/held"
while kill -0 "$LORIS" 2>/dev/null; do
    sleep 1
    f=$(fds) r=$(rss)
    [ "$f" -gt "$fdsmax" ] && fdsmax=$f
    [ "$r" -gt "$rssmax" ] && rssmax=$r
    if [ -s "$TEST_DIR/loris.json" ]; then
        echo "$(jget 'j["open_now"]' <"$TEST_DIR/loris.json") $(metric 'lockstep_http_connections{class="user"}')" \
            >>"$TEST_DIR/held"
    fi
done
a1=$(date +%s)
touch "$TEST_DIR/op.stop"; wait "$OPP"; rm -f "$TEST_DIR/op.stop"
sleep 15
fds2=$(fds) rss2=$(rss)
kill "$SIM_PIPE" 2>/dev/null

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "connections held: attacker's count median $(cut -d' ' -f1 "$TEST_DIR/held" | median)," \
    "max $(cut -d' ' -f1 "$TEST_DIR/held" | sort -n | tail -n 1);" \
    "the scheduler's user connections median $(cut -d' ' -f2 "$TEST_DIR/held" | median)," \
    "max $(cut -d' ' -f2 "$TEST_DIR/held" | sort -n | tail -n 1)"
echo "attacker: $(cat "$TEST_DIR/loris.json")"
# The windows wholly inside each phase (the first 10 s of the attack
# are its ramp).
echo "heartbeat before: $(sim_figures "$b0" "$b1")"
echo "heartbeat during: $(sim_figures $((a0 + 10)) "$a1")"
for p in before during; do
    echo "operator nodes over TCP $p: $(grep -c '^ok' "$TEST_DIR/op.$p")/$(wc -l <"$TEST_DIR/op.$p") answered," \
        "slowest $(cut -d' ' -f2 "$TEST_DIR/op.$p" | sort -n | tail -n 1) ms"
done
echo "descriptors: before $fds0, during max $fdsmax, 15 s after $fds2"
echo "RSS KiB:     before $rss0, during max $rssmax, 15 s after $rss2"
echo "node_lost events: $(db_query "SELECT count(*) FROM events WHERE kind = 'node_lost'")"
echo "nodes UP now: $(nodes_up_count) of $((SIMN + 2))"
