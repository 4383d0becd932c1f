#!/bin/bash
# health.sh - what node health checks cost and how fast they act. Prints
# figures; asserts nothing.
#
#   bench/health.sh [--trials N] [--interval-ms MS] [--minutes M]
#
# Real daemons on loopback through the test harness (which cleans every
# process up by PID); the agents' GPUs are faked by deploy/fake-nvidia-smi
# (through a wrapper that reads the bench's overrides), their kernel log
# is a file of their own.
#
# 1. Overhead: one agent with every built-in check (disk, gpu with 8 fake
#    GPUs, kmsg, memory, nic, pcie) against the same agent with none, both
#    idle for M minutes (default 1) at the given interval: CPU seconds per
#    minute of the agent and the checks it reaped (utime + stime + cutime
#    + cstime), and what that is at the default interval (60 s).
# 2. Fault to exclusion: a 2-node job of shell ranks runs on 2 of 3 nodes;
#    one of its nodes' nvidia-smi starts reporting an uncorrectable ECC
#    error (N trials), then a node's kernel log gets an XID 79 line (once):
#    time from the fault to the node UNHEALTHY, and to the job's next
#    attempt RUNNING on the other nodes. The baseline is the check
#    interval: detection cannot beat it (a fault waits for the next run).
#    Each fault comes at a random point of the interval (a sleep of a
#    random fraction of it first): a node returns UP at a run of its
#    checks (the hold-down ends there), so without it every trial would
#    start just after a run and measure the worst case, a whole interval
#    plus the run.
# 3. Stragglers: bench/straggler.sh measures detection of a rank 20%
#    slower than its peers.
set -u
TRIALS=3
INTERVAL_MS=5000
MINUTES=1
while [ $# -gt 0 ]; do
    case $1 in
    --trials) TRIALS=$2; shift 2 ;;
    --interval-ms) INTERVAL_MS=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    *) echo "usage: bench/health.sh [--trials N] [--interval-ms MS] [--minutes M]" >&2
       exit 2 ;;
    esac
done

. "$(dirname "$0")/../tests/lib/harness.sh"

now_ms() { date +%s%3N; }
HZ=$(getconf CLK_TCK)

# cpu_s PID: CPU seconds of PID and its reaped children.
cpu_s() {
    awk -v hz="$HZ" '{ sub(/.*\) /, ""); split($0, f, " ");
        printf "%.3f\n", (f[12] + f[13] + f[14] + f[15]) / hz }' "/proc/$1/stat"
}

for k in 1 2 3 4 5; do
    d=$TEST_DIR/hc-n$k
    mkdir -p "$d"
    cat >"$d/nvidia-smi" <<EOF
#!/bin/sh
[ -f "$d/smi.env" ] && . "$d/smi.env"
exec "$SRC_DIR/deploy/fake-nvidia-smi" "\$@"
EOF
    chmod +x "$d/nvidia-smi"
done

HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000 KILL_GRACE_MS=2000
start_scheduler -o health_holddown_ms=1000 -o health_flap_count=1000 \
    >/dev/null

echo "== 1. check overhead (idle agent, ${MINUTES} min, interval ${INTERVAL_MS} ms)"
start_agent n4 -o gpus=0-7 -o health_checks=disk,gpu,kmsg,memory,nic,pcie \
    -o nvidia_smi="$TEST_DIR/hc-n4/nvidia-smi" \
    -o health_interval_ms="$INTERVAL_MS"
start_agent n5 -o gpus=0-7 -o health_checks= \
    -o health_interval_ms="$INTERVAL_MS"
wait_for 30 "ls_cli node n4 >/dev/null 2>&1 && ls_cli node n5 >/dev/null 2>&1" &&
    sleep 3
c4=$(cpu_s "${AGENT_PID[n4]}") c5=$(cpu_s "${AGENT_PID[n5]}")
sleep $((MINUTES * 60))
e4=$(cpu_s "${AGENT_PID[n4]}") e5=$(cpu_s "${AGENT_PID[n5]}")
"$PY" - "$c4" "$e4" "$c5" "$e5" "$MINUTES" "$INTERVAL_MS" <<'EOF'
import sys
c4, e4, c5, e5, m, iv = map(float, sys.argv[1:])
w, wo = (e4 - c4) / m, (e5 - c5) / m
checks = w - wo
print("agent with checks:    %.3f CPU s/min" % w)
print("agent without checks: %.3f CPU s/min (baseline)" % wo)
print("checks alone:         %.3f CPU s/min at %d ms = %.2f%% of one core;"
      " %.4f CPU s/min at the default 60 s interval"
      % (checks, iv, checks / 60 * 100, checks * iv / 60000))
print("ratio with/without:   %.2fx" % (w / wo if wo > 0 else float("inf")))
EOF
stop_agent n4
stop_agent n5

echo
echo "== 2. fault to exclusion to the job running elsewhere (interval ${INTERVAL_MS} ms)"
for k in 1 2 3; do
    start_agent n$k -o nvidia_smi="$TEST_DIR/hc-n$k/nvidia-smi" \
        -o health_interval_ms="$INTERVAL_MS"
done
wait_nodes_up 3 60 || { echo "cluster did not come up"; exit 1; }

# trial KIND: one fault on the job's node rank 1; prints "excluded rerun".
trial() {
    local id node t0 t1 t2 n
    id=$(submit_id --nodes 2 -- sleep 600) || return 1
    wait_job_state "$id" RUNNING 60 || return 1
    n=$(ls_cli show "$id" --json | jget "len(j[\"attempts\"])")
    node=$(ls_cli show "$id" --json | jget "j[\"attempts\"][-1][\"nodes\"][1][\"node\"]")
    sleep "$(awk -v r="$RANDOM" -v iv="$INTERVAL_MS" 'BEGIN { printf "%.3f", r / 32768 * iv / 1000 }')"
    t0=$(now_ms)
    if [ "$1" = gpu ]; then
        echo 'export FAKE_NVIDIA_SMI_SET="2:ecc.errors.uncorrected.volatile.total=1"' \
            >"$TEST_DIR/hc-$node/smi.env"
    else
        seq=$(($(wc -l <"$TEST_DIR/agent-$node/kmsg") + 1))
        echo "3,$seq,5000000,-;NVRM: Xid (PCI:0000:1a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." \
            >>"$TEST_DIR/agent-$node/kmsg"
    fi
    wait_for 120 "test \"\$(node_state $node)\" = UNHEALTHY" || return 1
    t1=$(now_ms)
    wait_for 120 "ls_cli show $id --json | jget \"len(j[\\\"attempts\\\"]) > $n and j[\\\"attempts\\\"][-1][\\\"state\\\"] == \\\"RUNNING\\\"\" | grep -qx True" ||
        return 1
    t2=$(now_ms)
    echo "$((t1 - t0)) $((t2 - t0)) $node"
    ls_cli cancel "$id" >/dev/null
    if [ "$1" = gpu ]; then
        rm -f "$TEST_DIR/hc-$node/smi.env"
        wait_for 60 "test \"\$(node_state $node)\" = UP" || true
    fi
}

results=$TEST_DIR/results
for i in $(seq 1 "$TRIALS"); do
    trial gpu >>"$results" || echo "gpu trial $i failed"
done
trial kmsg >"$TEST_DIR/kmsg-result" || echo "kmsg trial failed"
"$PY" - "$results" "$TEST_DIR/kmsg-result" "$INTERVAL_MS" <<'EOF'
import statistics, sys
rows = [list(map(int, l.split()[:2])) for l in open(sys.argv[1]) if l.strip()]
iv = int(sys.argv[3])
if rows:
    ex = statistics.median(r[0] for r in rows)
    rr = statistics.median(r[1] for r in rows)
    print("nvidia-smi ECC error (%d trials): excluded after %d ms (median; %.2f"
          " intervals; min %d, max %d), job running elsewhere after %d ms"
          " (%.2f intervals)"
          % (len(rows), ex, ex / iv, min(r[0] for r in rows),
             max(r[0] for r in rows), rr, rr / iv))
    print("  each trial (excluded, running elsewhere): %s" % rows)
k = [l.split() for l in open(sys.argv[2]) if l.strip()]
if k:
    ex, rr = int(k[0][0]), int(k[0][1])
    print("kernel log XID 79: excluded after %d ms (%.2f intervals), job"
          " running elsewhere after %d ms (%.2f intervals)"
          % (ex, ex / iv, rr, rr / iv))
EOF
