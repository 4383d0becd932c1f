# harness.sh - shared helpers for integration tests (source it)
#
# Each test script gets its own temporary directory, starts real daemons on
# 127.0.0.1 with ephemeral ports, and prints TAP. Every process it starts is
# killed on exit, by PID: the daemons from their recorded PIDs, and the ranks
# the agents spawned (which outlive a kill -9'd agent, by design) from a
# unique LOCKSTEP_TEST_TAG variable that the harness puts in each daemon's
# environment and the agents pass on to ranks. Nothing is ever killed by
# name, so tests can run in parallel with each other and with a developer's
# own cluster.
#
#   . "$(dirname "$0")/../lib/harness.sh"
#   start_scheduler
#   start_agent n1 -o gpus=0-3
#   wait_nodes_up 1
#   test_expect_success 'job succeeds' '
#       id=$(submit_id --nodes 1 -- true) &&
#       wait_job_state "$id" SUCCEEDED
#   '
#   test_done

set -u

# A test that mounts file systems (a small tmpfs for a full disk) sets
# HARNESS_MOUNT_NS=1 before sourcing this: it then runs in a mount
# namespace of its own (unshare -m, private propagation), so its mounts
# are seen only by it and the daemons it starts, and vanish with it. That
# needs root: elsewhere the test is skipped.
if [ "${HARNESS_MOUNT_NS:-}" = 1 ] && [ "${HARNESS_IN_MOUNT_NS:-}" != 1 ]; then
    if [ "$(id -u)" != 0 ] ||
        ! unshare -m --propagation private true 2>/dev/null; then
        echo "1..0 # SKIP needs root and a mount namespace (unshare -m)"
        exit 0
    fi
    HARNESS_IN_MOUNT_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

TEST_NAME=$(basename "$0" .sh)
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${LOCKSTEP_BUILD:=$SRC_DIR/build}"
BUILD_DIR=$(cd "$LOCKSTEP_BUILD" && pwd)
LOCKSTEPD=$BUILD_DIR/scheduler/lockstepd
AGENTD=$BUILD_DIR/agent/lockstep-agent
CLI=$BUILD_DIR/cli/lockstep
PY=/usr/bin/python3

# Unix socket paths must stay under 108 bytes: keep the directory short.
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ls-${TEST_NAME%%-*}.XXXXXX")
LOCKSTEP_TEST_TAG="lockstep-test:$TEST_DIR"
export LOCKSTEP_TEST_TAG

test_count=0
test_failed=0
SCHED_PID=
declare -A AGENT_PID=()
declare -a EXTRA_PIDS=()
declare -a TEST_MOUNTS=()

# --- process bookkeeping --------------------------------------------------

# env_pids GREP_OPTION... PATTERN: PIDs of every live process (but this
# shell) one line of whose environment grep matches so.
env_pids() {
    local f pid
    for f in /proc/[0-9]*/environ; do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" = "$$" ] && continue
        if tr '\0' '\n' 2>/dev/null <"$f" | grep -q "$@"; then
            echo "$pid"
        fi
    done
}

# PIDs of every live process carrying this test's tag (ranks, daemons).
tagged_pids() {
    env_pids -xF "LOCKSTEP_TEST_TAG=$LOCKSTEP_TEST_TAG"
}

# PIDs of the tagged processes that belong to job $1 (its ranks and their
# children), optionally only on node $2.
job_pids() {
    local job=$1 node=${2:-} pid env
    for pid in $(tagged_pids); do
        env=$(tr '\0' '\n' 2>/dev/null </proc/"$pid"/environ) || continue
        echo "$env" | grep -qxF "LOCKSTEP_JOB_ID=$job" || continue
        if [ -n "$node" ]; then
            echo "$env" | grep -qxF "LOCKSTEP_NODE=$node" || continue
        fi
        # Zombies hold no resources and are reaped by their parent.
        [ "$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null)" = Z ] && continue
        echo "$pid"
    done
}

# job_gone ID [NODE]: no process of job ID is alive (on NODE).
job_gone() {
    [ -z "$(job_pids "$@")" ]
}

# job_nprocs_ge ID N: at least N processes of job ID are alive.
job_nprocs_ge() {
    [ "$(job_pids "$1" | wc -l)" -ge "$2" ]
}

# all_alive PIDFILE: every pid in the file is alive (says which is not).
all_alive() {
    local p
    for p in $(cat "$1"); do
        kill -0 "$p" 2>/dev/null || { echo "pid $p is gone"; return 1; }
    done
}

harness_cleanup() {
    local pid
    for pid in $SCHED_PID "${AGENT_PID[@]}" "${EXTRA_PIDS[@]}"; do
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    done
    for pid in $(tagged_pids); do
        kill -9 "$pid" 2>/dev/null
    done
    for pid in "${TEST_MOUNTS[@]}"; do
        umount -l "$pid" 2>/dev/null
    done
    if [ "${LOCKSTEP_KEEP_TEST_DIR:-}" = 1 ] || [ "$test_failed" -gt 0 ]; then
        echo "# test directory kept: $TEST_DIR"
    else
        rm -rf "$TEST_DIR"
    fi
}
trap harness_cleanup EXIT
trap 'exit 130' INT TERM

# --- TAP ------------------------------------------------------------------

# test_expect_success DESCRIPTION BODY: run BODY (shell code, chained with
# &&) as a function in this shell, so daemons it starts or kills stay known
# to the cleanup trap; print TAP, with the body's output on failure.
test_expect_success() {
    local desc=$1 body=$2 rc
    test_count=$((test_count + 1))
    eval "test_body_() {
$body
}"
    cd "$TEST_DIR" || exit 1
    test_body_ >"$TEST_DIR/.test-output" 2>&1
    rc=$?
    cd "$TEST_DIR" || exit 1
    if [ $rc -eq 0 ]; then
        echo "ok $test_count - $desc"
    else
        test_failed=$((test_failed + 1))
        echo "not ok $test_count - $desc"
        tail -n 40 "$TEST_DIR/.test-output" | sed 's/^/#   /'
    fi
    return 0
}

test_done() {
    echo "1..$test_count"
    if [ "$test_failed" -gt 0 ]; then
        echo "# failed $test_failed of $test_count"
        dump_logs
        exit 1
    fi
    exit 0
}

dump_logs() {
    local f
    for f in "$TEST_DIR"/sched/log "$TEST_DIR"/agent-*/log "$TEST_DIR"/rep*/log; do
        [ -f "$f" ] || continue
        echo "# --- tail of $f"
        tail -n 25 "$f" | sed 's/^/#   /'
    done
}

fail() {
    echo "FAIL: $*" >&2
    return 1
}

# wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_until() {
    local limit=$1
    shift
    local deadline=$((SECONDS + limit))
    while ! "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "timed out after ${limit}s waiting for: $*" >&2
            return 1
        fi
        sleep 0.1
    done
}

# wait_for SECONDS EXPR: like wait_until, but EXPR (shell code) is
# evaluated afresh on every poll.
wait_for() {
    local limit=$1 expr=$2
    local deadline=$((SECONDS + limit))
    until eval "$expr" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "timed out after ${limit}s waiting for: $expr" >&2
            return 1
        fi
        sleep 0.1
    done
}

# --- daemons --------------------------------------------------------------

# Each test's jobs get MASTER_PORTs from their own range of 20, so DDP
# jobs of tests running in parallel do not collide; all of it below the
# kernel's ephemeral ports (32768 and up), where any outgoing connection
# could already hold the port (EADDRINUSE at rendezvous).
MASTER_PORT_BASE=$((20000 + (RANDOM % 600) * 20))

CLUSTER_SECRET=$TEST_DIR/cluster.secret
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$CLUSTER_SECRET"
chmod 600 "$CLUSTER_SECRET"

# tls_certs: a CA and a certificate for 127.0.0.1 and localhost in
# $TEST_DIR/tls (deploy/tls-certs.sh; made once, kept after).
TLS_DIR=$TEST_DIR/tls
tls_certs() {
    [ -s "$TLS_DIR/server.pem" ] ||
        "$SRC_DIR/deploy/tls-certs.sh" "$TLS_DIR" 127.0.0.1 localhost >/dev/null
}

# node_key NAME [SECRET_FILE]: the path of node NAME's key file, derived
# from the cluster secret (or SECRET_FILE) by lockstepd --derive-node-key
# (docs/operations.md "Node keys"); made once per secret.
node_key() {
    local name=$1 secret=${2:-$CLUSTER_SECRET} f
    f=$TEST_DIR/keys/$(basename "$secret")-$name.key
    if [ ! -s "$f" ]; then
        mkdir -p "$TEST_DIR/keys"
        (umask 077 && "$LOCKSTEPD" -o tls=off \
            -o cluster_secret_file="$secret" \
            --derive-node-key "$name" >"$f.tmp") && mv "$f.tmp" "$f" ||
            return 1
    fi
    echo "$f"
}

# start_scheduler_udp [ARGS]: start_scheduler, and again (3 tries) while
# its UDP socket for fence notices and lease pings cannot bind: it takes
# the TCP port the kernel picked, whose UDP twin another test's socket
# may hold.
start_scheduler_udp() {
    local try
    for try in 1 2 3; do
        start_scheduler "$@" || return 1
        wait_until 10 grep -q "fence notices" "$TEST_DIR/sched/log"
        grep -q "fence notices received on UDP" "$TEST_DIR/sched/log" &&
            return 0
        stop_scheduler
        rm -f "$TEST_DIR/sched/port" "$TEST_DIR/sched/log"
    done
    return 1
}

# start_scheduler [-o key=value]...: start lockstepd (again, after a kill,
# on the same state and the same TCP port). Its TCP listener speaks plain
# HTTP (tls = off: the suite's curl calls and its speed want it), unless
# SCHED_TLS is set: then TLS with tls_certs' certificate, LOCKSTEP_URL is
# https:// and LOCKSTEP_CA names the CA.
start_scheduler() {
    local d=$TEST_DIR/sched listen
    local -a tls=(-o tls=off)
    mkdir -p "$d/state"
    if [ -s "$d/port" ]; then
        listen=127.0.0.1:$(cat "$d/port")
    else
        listen=127.0.0.1:0
    fi
    if [ -n "${SCHED_TLS:-}" ]; then
        tls_certs || return 1
        tls=(-o tls=on -o tls_cert="$TLS_DIR/server.pem"
            -o tls_key="$TLS_DIR/server.key" -o tls_ca="$TLS_DIR/ca.pem")
        export LOCKSTEP_CA=$TLS_DIR/ca.pem
    fi
    rm -f "$d/port"
    "$LOCKSTEPD" -o listen="$listen" -o port_file="$d/port" "${tls[@]}" \
        -o socket="$d/sock" -o state_dir="$d/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" \
        -o node_timeout_ms="${NODE_TIMEOUT_MS:-10000}" \
        -o heartbeat_ms="${HEARTBEAT_MS:-500}" \
        ${LEASE_MS:+-o lease_ms="$LEASE_MS"} \
        -o master_port_base="$MASTER_PORT_BASE" -o master_port_count=20 \
        "$@" >>"$d/log" 2>&1 &
    SCHED_PID=$!
    export LOCKSTEP_SERVER=$d/sock
    if ! wait_until 20 test -S "$d/sock" || ! wait_until 20 test -s "$d/port"
    then
        tail -n 20 "$d/log" >&2
        return 1
    fi
    LOCKSTEP_URL=http${SCHED_TLS:+s}://127.0.0.1:$(cat "$d/port")
    export LOCKSTEP_URL
}

# wait_dead PID: until PID is gone or a zombie (its descriptors closed),
# at most 10 s.
wait_dead() {
    local i state
    for ((i = 0; i < 200; i++)); do
        state=$(sed -n "s/^[0-9]* (.*) \(.\) .*/\1/p" "/proc/$1/stat" 2>/dev/null)
        [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ] && return 0
        sleep 0.05
    done
    return 1
}

# sock_refuses PATH: a connection to the Unix socket PATH is refused (or
# the socket is gone): nothing listens there any more.
sock_refuses() {
    "$PY" - "$1" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except (ConnectionRefusedError, FileNotFoundError):
    sys.exit(0)
sys.exit(1)
PYEOF
}

# kill_scheduler: SIGKILL lockstepd; returns once nothing listens on its
# socket (a client connecting while the dying process still held it got
# "connection reset", not "refused", under ASan).
kill_scheduler() {
    [ -n "$SCHED_PID" ] || return 0
    kill -9 "$SCHED_PID" 2>/dev/null
    wait "$SCHED_PID" 2>/dev/null
    wait_dead "$SCHED_PID"
    wait_until 10 sock_refuses "$TEST_DIR/sched/sock"
    SCHED_PID=
}

stop_scheduler() {
    [ -n "$SCHED_PID" ] || return 0
    kill -TERM "$SCHED_PID" 2>/dev/null
    wait "$SCHED_PID"
    local rc=$?
    SCHED_PID=
    return $rc
}

# gpu_count LIST: how many GPUs an agent's `gpus` setting names (0-3,
# 0,2,4, none).
gpu_count() {
    local list=$1 n=0 item
    [ "$list" = none ] && { echo 0; return; }
    for item in ${list//,/ }; do
        if [[ $item == *-* ]]; then
            n=$((n + ${item#*-} - ${item%-*} + 1))
        else
            n=$((n + 1))
        fi
    done
    echo "$n"
}

# start_agent NAME [-o key=value]...: start an agent for node NAME with 8
# CPUs, 4 fake GPUs, its own node key (node_key) and its own state and log
# directories. It talks to the
# scheduler's Unix socket, or to $AGENT_SERVER when set. Its health checks
# ($HEALTH_CHECKS, default disk,gpu,kmsg,memory: not nic and pcie, which
# read this machine's own sysfs, which a test does not control) run every
# $HEALTH_INTERVAL_MS (30000: each run costs CPU that the timing-sensitive
# tests running beside it feel, under ASan most), read the kernel log from
# its own (empty) file
# and ask deploy/fake-nvidia-smi about as many GPUs as it has. A node is
# schedulable once its checks have all run (the first full pass). Its
# witness port is chosen by the kernel, unless AGENT_NO_WITNESS_PORT is
# set (an agent of a build older than witnesses: t5003).
start_agent() {
    local name=$1
    shift
    local d=$TEST_DIR/agent-$name gpus=0-3 a key wopt=(-o witness_port=0)
    [ -n "${AGENT_NO_WITNESS_PORT:-}" ] && wopt=()
    key=$(node_key "$name") || return 1
    mkdir -p "$d/state"
    touch "$d/kmsg"
    for a in "$@"; do
        case $a in gpus=*) gpus=${a#gpus=} ;; esac
    done
    # HWLOC_COMPONENTS=-pci: PMIx's hwloc then finds PCI devices in sysfs
    # without libpciaccess naming them from pci.ids, which takes an
    # ASan-built agent 1.1 s of its start (0.05 s without): more than the
    # lease a restarted agent must re-adopt its ranks within (t4105).
    FAKE_NVIDIA_SMI_GPUS=$(gpu_count "$gpus") HWLOC_COMPONENTS=-pci \
    "$AGENTD" -o server="${AGENT_SERVER:-$TEST_DIR/sched/sock}" \
        -o node_name="$name" \
        -o addr=127.0.0.1 -o cpus=8 -o memory_mb=16384 -o gpus=0-3 \
        -o labels="rack=r-$name" -o state_dir="$d/state" \
        -o log_dir="$d/logs" -o node_key_file="$key" \
        -o run_as_submitter=false -o kill_grace_ms="${KILL_GRACE_MS:-3000}" \
        -o kmsg_path="$d/kmsg" -o nvidia_smi="$SRC_DIR/deploy/fake-nvidia-smi" \
        -o health_interval_ms="${HEALTH_INTERVAL_MS:-30000}" \
        -o health_checks="${HEALTH_CHECKS-disk,gpu,kmsg,memory}" \
        "${wopt[@]}" "$@" >>"$d/log" 2>&1 &
    AGENT_PID[$name]=$!
}

kill_agent() {
    local pid=${AGENT_PID[$1]:-}
    [ -n "$pid" ] || return 0
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    wait_dead "$pid"
    AGENT_PID[$1]=
}

stop_agent() {
    local pid=${AGENT_PID[$1]:-}
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    local rc=$?
    AGENT_PID[$1]=
    return $rc
}

# --- CLI and JSON ---------------------------------------------------------

ls_cli() {
    "$CLI" "$@"
}

# jget EXPR: evaluate a Python expression over the JSON document on stdin,
# bound to `j`; prints str() of the result (JSON for dicts and lists).
jget() {
    "$PY" -c '
import json, sys
j = json.load(sys.stdin)
v = eval(sys.argv[1], {"j": j, "len": len, "sorted": sorted, "set": set,
                    "sum": sum, "any": any, "all": all})
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
' "$1"
}

# submit_id ARGS...: submit through the CLI, print the new job id.
submit_id() {
    ls_cli submit --json "$@" | jget 'j["id"]'
}

job_state() {
    ls_cli show "$1" --json | jget 'j["state"]'
}

job_state_is() {
    [ "$(job_state "$1")" = "$2" ]
}

# wait_job_state ID STATE [SECONDS]
wait_job_state() {
    if ! wait_until "${3:-30}" job_state_is "$1" "$2"; then
        echo "job $1 is $(job_state "$1"), wanted $2" >&2
        ls_cli show "$1" >&2
        return 1
    fi
}

node_state() {
    ls_cli node "$1" --json | jget 'j["state"]'
}

nodes_up_count() {
    ls_cli nodes --json | jget 'len([n for n in j if n["state"] == "UP"])'
}

nodes_up_is() {
    [ "$(nodes_up_count)" = "$1" ]
}

# Placements held on all nodes together (0 when the cluster is idle).
nodes_busy_count() {
    ls_cli nodes --json | jget 'sum(len(n["jobs"]) for n in j)'
}

nodes_idle() {
    [ "$(nodes_busy_count)" = 0 ]
}

# wait_nodes_up N: wait until N nodes are UP.
wait_nodes_up() {
    wait_until "${2:-20}" nodes_up_is "$1"
}

# Direct SQL on the scheduler's database (read-only checks).
db_query() {
    sqlite3 -readonly "$TEST_DIR/sched/state/lockstep.db" "$1"
}

# db_events SUBJECT: "actor kind" for each event about SUBJECT (job/12).
db_events() {
    db_query "SELECT actor || ' ' || kind FROM events WHERE subject = '$1' ORDER BY id"
}

# --- fault-injection helpers (t4xxx) --------------------------------------

# mount_tmpfs DIR SIZE: a tmpfs of SIZE (mount's size=, like 8m) on DIR
# (created), unmounted by the cleanup. Needs HARNESS_MOUNT_NS=1.
mount_tmpfs() {
    [ "${HARNESS_IN_MOUNT_NS:-}" = 1 ] || fail "mount_tmpfs: set HARNESS_MOUNT_NS=1" || return
    mkdir -p "$1" && mount -t tmpfs -o size="$2",mode=0755 tmpfs "$1" &&
        TEST_MOUNTS+=("$1")
}

# fill_disk DIR: write DIR/filler until the file system is full (what is
# left is less than a block); free_disk DIR removes it.
fill_disk() {
    dd if=/dev/zero of="$1/filler" bs=64k status=none 2>/dev/null
    dd if=/dev/zero of="$1/filler" bs=512 oflag=append conv=notrunc \
        status=none 2>/dev/null
    [ "$(stat -f -c %a "$1")" = 0 ]
}
free_disk() {
    rm -f "$1/filler"
}

DDP_TRAIN=$SRC_DIR/tests/helpers/ddp_train.py
CADENCE_TRAIN=$SRC_DIR/tests/helpers/cadence_train.py

# fault_timeouts: the short timeouts of the fault tests, so that a lost
# node, an expired lease or a hang is seen within seconds. Call before
# starting the daemons.
fault_timeouts() {
    NODE_TIMEOUT_MS=3000 HEARTBEAT_MS=300 LEASE_MS=1500 KILL_GRACE_MS=1000
}

# fault_cluster N [-o key=value]...: fault_timeouts, a scheduler (with the
# options given) and the agents n1 .. nN.
fault_cluster() {
    local n=$1 k
    shift
    fault_timeouts
    start_scheduler "$@"
    for k in $(seq 1 "$n"); do start_agent "n$k"; done
}

# test_reference_run [DESCRIPTION]: the test that keeps in ref.sha the
# digest of an uninterrupted run with the options in TRAIN.
test_reference_run() {
    test_expect_success "${1:-reference run}" '
    reference_sha "${TRAIN[@]}" >ref.sha && test -s ref.sha && cat ref.sha
'
}

# ddp_running N NAME [submit options] -- [ddp_train.py options]: once N
# nodes are UP, submit the DDP job NAME (ddp_submit), keep its id in the
# file ./job, watch its attempts and wait until it runs.
ddp_running() {
    local n=$1 id
    shift
    wait_nodes_up "$n" &&
        id=$(ddp_submit "$@") && echo "$id" >job &&
        watch_attempts "$id" &&
        wait_job_state "$id" RUNNING 60
}

# ddp_submit NAME [submit options] -- [ddp_train.py options]: submit the
# deterministic PyTorch DDP job (2 nodes x 2 ranks unless overridden),
# checkpointing under $TEST_DIR/NAME/ck, final parameters to
# $TEST_DIR/NAME/out; prints the job id.
ddp_submit() {
    local name=$1
    shift
    local sopts=() topts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    topts=("$@")
    mkdir -p "$TEST_DIR/$name"
    submit_id --name "$name" --nodes 2 --ranks-per-node 2 \
        --checkpoint-dir "$TEST_DIR/$name/ck" --workdir "$TEST_DIR/$name" \
        --env PYTHONPATH="$SRC_DIR/sdk/python" "${sopts[@]}" \
        -- "$PY" "$DDP_TRAIN" --out "$TEST_DIR/$name/out" "${topts[@]}"
}

# cadence_submit NAME NODES RPN [submit options] -- [cadence_train.py
# options]: submit tests/helpers/cadence_train.py as job NAME (checkpoints
# under $TEST_DIR/NAME/ck, the ranks' records in $TEST_DIR/NAME/rec);
# prints the job id.
cadence_submit() {
    local name=$1 nodes=$2 rpn=$3
    shift 3
    local sopts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    mkdir -p "$TEST_DIR/$name"
    submit_id --name "$name" --nodes "$nodes" --ranks-per-node "$rpn" \
        --checkpoint-dir "$TEST_DIR/$name/ck" --workdir "$TEST_DIR/$name" \
        --env PYTHONPATH="$SRC_DIR/sdk/python" "${sopts[@]}" \
        -- "$PY" "$CADENCE_TRAIN" --out "$TEST_DIR/$name/rec" "$@"
}

# records NAME EXPR: evaluate EXPR over the list of every rank's records of
# job NAME (`recs`, sorted by attempt then rank).
records() {
    "$PY" - "$TEST_DIR/$1/rec" "$2" <<'PY'
import glob, json, os, sys
recs = [json.load(open(p)) for p in glob.glob(os.path.join(sys.argv[1], "*.json"))]
recs.sort(key=lambda r: (r["attempt"], r["rank"]))
v = eval(sys.argv[2], {"recs": recs, "len": len, "set": set, "all": all,
                       "any": any, "sorted": sorted, "min": min, "max": max})
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
PY
}

# reference_sha [ddp_train.py options]: the final parameter digest of an
# uninterrupted run, computed without lockstep (4 local processes wired
# the torchrun way), so a restarted run can be compared bit for bit.
reference_sha() {
    local d=$TEST_DIR/reference port pids r try ok
    for try in 1 2 3; do
        rm -rf "$d"
        mkdir -p "$d"
        pids=() ok=1
        port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        for r in 0 1 2 3; do
            RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) MASTER_ADDR=127.0.0.1 \
                MASTER_PORT=$port LOCKSTEP_CHECKPOINT_DIR=$d/ck \
                "$PY" "$DDP_TRAIN" --out "$d/out" "$@" >"$d/rank-$r.log" 2>&1 &
            pids+=($!)
            EXTRA_PIDS+=($!)
        done
        for r in "${pids[@]}"; do wait "$r" || { ok=0; break; }; done
        if [ "$ok" = 1 ]; then
            sed -n 's/.*final sha256 //p' "$d/rank-0.log"
            return 0
        fi
        for r in "${pids[@]}"; do kill -9 "$r" 2>/dev/null; wait "$r" 2>/dev/null; done
        # Only another test taking the port between the probe above and
        # rank 0's bind is worth another try.
        grep -q "Address already in use" "$d"/rank-*.log || return 1
        echo "reference run: port $port was taken meanwhile; again" >&2
    done
    return 1
}

# final_sha JOB: the digest the job's rank 0 printed (through the API).
final_sha() {
    ls_cli logs "$1" --rank 0 | sed -n 's/.*final sha256 //p' | tail -n 1
}

# ckpt_complete NAME STEP: step-STEP of job NAME has its COMPLETE marker.
ckpt_complete() {
    [ -f "$TEST_DIR/$1/ck/step-$2/COMPLETE" ]
}

# attempt_pids JOB ATTEMPT [NODE]: live processes of that attempt.
attempt_pids() {
    local pid env
    for pid in $(job_pids "$1" "${3:-}"); do
        env=$(tr '\0' '\n' 2>/dev/null </proc/"$pid"/environ) || continue
        echo "$env" | grep -qxF "LOCKSTEP_ATTEMPT=$2" && echo "$pid"
    done
}

# rank_pid JOB RANK: the pid of the rank process itself (the direct child
# of its supervisor, i.e. the process-group leader).
rank_pid() {
    local pid env
    for pid in $(job_pids "$1"); do
        env=$(tr '\0' '\n' 2>/dev/null </proc/"$pid"/environ) || continue
        echo "$env" | grep -qxF "RANK=$2" || continue
        [ "$(awk '{print $5}' /proc/"$pid"/stat 2>/dev/null)" = "$pid" ] &&
            echo "$pid"
    done | head -n 1
}

# watch_attempts JOB: record, in the background, which attempts of JOB
# have live processes (tests/helpers/watch-attempts.py).
watch_attempts() {
    "$PY" "$SRC_DIR/tests/helpers/watch-attempts.py" \
        --tag "$LOCKSTEP_TEST_TAG" --job "$1" --out "$TEST_DIR/watch-$1" &
    WATCH_PID=$!
    EXTRA_PIDS+=($!)
}

stop_watch() {
    [ -n "${WATCH_PID:-}" ] && kill "$WATCH_PID" 2>/dev/null
    WATCH_PID=
    return 0
}

# one_attempt_at_a_time JOB: no sample saw two attempts alive at once.
one_attempt_at_a_time() {
    "$PY" - "$TEST_DIR/watch-$1" <<'PY'
import sys
bad = []
for line in open(sys.argv[1]):
    parts = line.split()
    attempts = {p.split(":")[0] for p in parts[1:]}
    if len(attempts) > 1:
        bad.append(line.strip())
if bad:
    print("two attempts alive at once:", *bad[:5], sep="\n  ")
    sys.exit(1)
PY
}

# attempts_seen JOB: the attempt numbers the watcher saw, in order.
attempts_seen() {
    awk '{for (i = 2; i <= NF; i++) { split($i, a, ":"); print a[1] }}' \
        "$TEST_DIR/watch-$1" | awk '!seen[$0]++' | tr '\n' ' '
}

# start_sims N PER TAG [lockstep-sim options...]: N simulated agents
# (bench/sim.c; nodes sim1..simN) of this test's scheduler, over TCP, in
# processes of at most PER nodes each, every one ramping its nodes up 2 ms
# apart; their PIDs in SIM_PIDS (and EXTRA_PIDS), their output in
# $TEST_DIR/sim-TAG-FIRST.log (FIRST: its first node's number).
SIM_PIDS=()
start_sims() {
    local n=$1 per=$2 tag=$3 first=1 k
    shift 3
    while [ "$first" -le "$n" ]; do
        k=$((n - first + 1 < per ? n - first + 1 : per))
        "$BUILD_DIR/bench/lockstep-sim" --server "$LOCKSTEP_URL" \
            --cluster-secret-file "$CLUSTER_SECRET" --nodes "$k" \
            --first "$first" --ramp-ms $((k * 2)) "$@" \
            >>"$TEST_DIR/sim-$tag-$first.log" 2>&1 &
        SIM_PIDS+=($!)
        EXTRA_PIDS+=($!)
        first=$((first + k))
    done
}

# stop_sims: stop the simulators start_sims started, and wait for them.
stop_sims() {
    local pid
    for pid in "${SIM_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${SIM_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    SIM_PIDS=()
}

# start_proxy: a TCP proxy in front of the scheduler that tests can cut
# (tests/helpers/tcp-proxy.py); PROXY_URL is its address.
start_proxy() {
    rm -f "$TEST_DIR/proxy.port"
    "$PY" "$SRC_DIR/tests/helpers/tcp-proxy.py" \
        --target "127.0.0.1:$(cat "$TEST_DIR/sched/port")" \
        --port-file "$TEST_DIR/proxy.port" &
    PROXY_PID=$!
    EXTRA_PIDS+=($!)
    wait_until 10 test -s "$TEST_DIR/proxy.port" || return 1
    PROXY_URL=http://127.0.0.1:$(cat "$TEST_DIR/proxy.port")
}

proxy_block() { kill -USR1 "$PROXY_PID"; }
proxy_heal() { kill -USR2 "$PROXY_PID"; }

# job_json JOB EXPR: evaluate EXPR over `lockstep show JOB --json`.
job_json() {
    ls_cli show "$1" --json | jget "$2"
}
