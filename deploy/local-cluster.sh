#!/usr/bin/env bash
# local-cluster.sh - a whole lockstep cluster on this machine, for trying
# lockstep out, demos and integration tests: one lockstepd and N
# lockstep-agents with fake GPUs, everything kept under one directory.
#
#   deploy/local-cluster.sh up --dir DIR --nodes N [--schedulers S]
#                              [--seed-from DB]
#                              [--gpus-per-node G] [--cpus-per-node C]
#                              [--agent-opt KEY=VALUE]...
#                              [--agent-opt-node I KEY=VALUE]...
#   deploy/local-cluster.sh down --dir DIR
#   deploy/local-cluster.sh status --dir DIR
#
# Each agent offers G fake GPUs (default 8) and C CPUs (default 8, so that
# jobs shaped for a real GPU node, 8 ranks of 1 CPU, fit on a small
# machine; the agents share the machine's real CPUs; 0 offers the real
# count), and the machine's memory. Both are kept in the agents' config
# files: they apply to agents created by this `up`. The fake GPUs come
# with a fake nvidia-smi (deploy/fake-nvidia-smi, through
# agents/node<i>/nvidia-smi) that reports them healthy, so the agents'
# gpu health check runs as on a real node; each agent reads its kernel log
# from agents/node<i>/kmsg (empty: append lines in /dev/kmsg's format to try
# the kmsg check), not the machine's.
#
# --agent-opt KEY=VALUE sets an agent setting (docs/config.md) on every
# agent this `up` starts, --agent-opt-node I KEY=VALUE on node<I>'s only
# (I from 1), after the config file (`lockstep-agent -o`); both repeatable.
# Agents already running keep theirs: `down` first. `up` waits for every
# node to be in service, or excluded by its own health checks once they
# have all run (it says which and why). For example, a node whose site
# check fails:
#   deploy/local-cluster.sh up --dir /tmp/lc --nodes 2 \
#       --agent-opt health_interval_ms=5000 \
#       --agent-opt-node 2 health_checks_dir=/tmp/failing-checks
#
# Layout under DIR:
#   cluster.secret                      the cluster secret (mode 0600)
#   tls/{ca.pem,ca.key,server.pem,server.key}
#                                       the cluster's own CA and the
#                                       scheduler's certificate for
#                                       127.0.0.1 and localhost
#                                       (deploy/tls-certs.sh)
#   env                                 `. DIR/env` points the CLI here
#   scheduler/{lockstepd.conf,state/,lockstepd.sock,port,pid,log}
#   agents/node<i>/{agent.conf,node.key,state/,shm/,pid,log,kmsg,nvidia-smi}
#                                       node.key: the node's own key
#                                       (lockstepd --derive-node-key)
#
# --schedulers S (3 or 5; 1, a single scheduler, is the default) starts S
# replicas of lockstepd instead (docs/operations.md "Replicas"): replica i
# under scheduler<i>/ with the same files as scheduler/ above, its API and
# its Raft port fixed when its config is written (replicas.ports), each
# serving TLS with the same certificate, the agents naming every
# replica's https:// URL and DIR/env every replica's socket and URL. The
# count is the cluster's once written: `up` on an existing DIR needs no
# --schedulers. With --seed-from DB (a `lockstep admin backup` file or a
# stopped scheduler's lockstep.db, e.g. another local cluster's
# scheduler/state/lockstep.db) the new replicas start from that state
# (docs/operations.md "From one scheduler to replicas"): replica 1
# bootstraps the set with `lockstepd --seed-from DB`, the others are
# written with an empty `replicas` and join it. Only for a new DIR.
#
# The scheduler listens on 127.0.0.1 with an ephemeral port (written to
# scheduler/port), speaking TLS with the certificate in tls/, and on
# scheduler/lockstepd.sock. The agents connect over TLS to
# https://127.0.0.1:<port>, trusting tls/ca.pem, as on a real cluster; the
# CLI of `. DIR/env` uses the socket (LOCKSTEP_URL and LOCKSTEP_CA are
# there for https://). Nothing is shared between directories, so several
# clusters can run at once. `up` is idempotent: it starts only what is not running (a
# daemon counts as running when its pid file names a live process that
# runs our binary with our config file) and keeps existing config files;
# remove DIR to start afresh. `down` cancels the jobs still running (so
# the agents tear their ranks down), then stops every daemon by the PID in
# its pid file: SIGTERM, then SIGKILL after a deadline. Processes are never
# looked up or killed by name.
#
# Binaries come from build/ at the top of the source tree, or from
# $LOCKSTEP_BUILD (relative to the current directory or the source tree),
# or, for an installed lockstep, from PATH. $LOCKSTEP_CLUSTER_TIMEOUT
# (seconds, default 30) bounds each wait.
set -euo pipefail

prog=local-cluster.sh
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
timeout=${LOCKSTEP_CLUSTER_TIMEOUT:-30}

die() {
    echo "$prog: $*" >&2
    exit 1
}

usage() {
    cat >&2 <<EOF
usage: $prog up --dir DIR --nodes N [--schedulers S] [--seed-from DB]
                [--gpus-per-node G]
                [--cpus-per-node C] [--agent-opt KEY=VALUE]...
                [--agent-opt-node I KEY=VALUE]...
       $prog down --dir DIR
       $prog status --dir DIR
EOF
    exit 2
}

# --- arguments -------------------------------------------------------------

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
up | down | status) ;;
-h | --help | help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
*)
    echo "$prog: unknown command '$cmd'" >&2
    usage
    ;;
esac

dir='' nodes='' gpus=8 cpus=8 schedulers='' seed=''
agent_opts=()           # -o KEY=VALUE for every agent
declare -A node_opts=() # node number -> its own "-o", "KEY=VALUE" lines
while [ $# -gt 0 ]; do
    case $1 in
    --agent-opt)
        [ $# -ge 2 ] || { echo "$prog: option '$1' requires a value" >&2; usage; }
        [[ $2 == ?*=* ]] || die "invalid --agent-opt '$2': expected KEY=VALUE"
        agent_opts+=(-o "$2")
        shift 2
        ;;
    --agent-opt=*)
        [[ ${1#*=} == ?*=* ]] || die "invalid --agent-opt '${1#*=}': expected KEY=VALUE"
        agent_opts+=(-o "${1#*=}")
        shift
        ;;
    --agent-opt-node)
        [ $# -ge 3 ] || { echo "$prog: option '$1' requires a node number and KEY=VALUE" >&2; usage; }
        [[ $2 =~ ^[1-9][0-9]*$ ]] || die "invalid --agent-opt-node node '$2': expected 1, 2, ... as in node<N>"
        [[ $3 == ?*=* ]] || die "invalid --agent-opt-node '$3': expected KEY=VALUE"
        node_opts[$2]+="-o"$'\n'"$3"$'\n'
        shift 3
        ;;
    --dir | --nodes | --gpus-per-node | --cpus-per-node | --schedulers | --seed-from)
        [ $# -ge 2 ] || { echo "$prog: option '$1' requires a value" >&2; usage; }
        case $1 in
        --dir) dir=$2 ;;
        --nodes) nodes=$2 ;;
        --schedulers) schedulers=$2 ;;
        --seed-from) seed=$2 ;;
        --gpus-per-node) gpus=$2 ;;
        --cpus-per-node) cpus=$2 ;;
        esac
        shift 2
        ;;
    --dir=*) dir=${1#*=}; shift ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --schedulers=*) schedulers=${1#*=}; shift ;;
    --seed-from=*) seed=${1#*=}; shift ;;
    --gpus-per-node=*) gpus=${1#*=}; shift ;;
    --cpus-per-node=*) cpus=${1#*=}; shift ;;
    *)
        echo "$prog: unknown option '$1'" >&2
        usage
        ;;
    esac
done
[ -n "$dir" ] || { echo "$prog: --dir is required" >&2; usage; }
if ! [[ $gpus =~ ^[0-9]+$ ]] || [ "$gpus" -gt 1024 ]; then
    die "invalid --gpus-per-node '$gpus': expected 0 to 1024"
fi
if ! [[ $cpus =~ ^[0-9]+$ ]] || [ "$cpus" -gt 4096 ]; then
    die "invalid --cpus-per-node '$cpus': expected 0 (the machine's count) to 4096"
fi
if [ -n "$schedulers" ] && ! [[ $schedulers =~ ^[135]$ ]]; then
    die "invalid --schedulers '$schedulers': expected 1, 3 or 5"
fi
if [ -n "$nodes" ]; then
    if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || [ "$nodes" -gt 1000 ]; then
        die "invalid --nodes '$nodes': expected 1 to 1000"
    fi
fi

if [ -n "$seed" ]; then
    if [ "$cmd" != up ] || [ "${schedulers:-1}" -eq 1 ] || [ -e "$dir" ]; then
        die "--seed-from seeds a new replica set: it needs up, --schedulers 3 or 5 and a new --dir"
    fi
    [ -f "$seed" ] || die "--seed-from: no file '$seed'"
    seed=$(cd "$(dirname "$seed")" && pwd)/$(basename "$seed")
fi

created=''
if [ "$cmd" = up ] && [ ! -d "$dir" ]; then
    mkdir -p "$dir" || die "cannot create '$dir'"
    created=1
fi
[ -d "$dir" ] || die "no cluster directory '$dir'"
dir=$(cd "$dir" && pwd)

# Relative LOCKSTEP_BUILD: from here, else from the source tree.
build=${LOCKSTEP_BUILD:-$root/build}
if [[ $build != /* ]]; then
    if [ -d "$build" ]; then
        build=$(cd "$build" && pwd)
    else
        build=$root/$build
    fi
fi
lockstepd=$build/scheduler/lockstepd
agentd=$build/agent/lockstep-agent
cli=$build/cli/lockstep
# Installed (meson install) rather than run from a source tree: use the
# binaries on PATH.
if [ -z "${LOCKSTEP_BUILD:-}" ] && [ ! -x "$lockstepd" ] &&
    command -v lockstepd >/dev/null 2>&1; then
    lockstepd=$(command -v lockstepd)
    agentd=$(command -v lockstep-agent || echo "${lockstepd%/*}/lockstep-agent")
    cli=$(command -v lockstep || echo "${lockstepd%/*}/lockstep")
fi

sdir=$dir/scheduler
sock=$sdir/lockstepd.sock
sconf=$sdir/lockstepd.conf
tls=$dir/tls
# Installed beside this script (share/lockstep/ or deploy/).
tls_certs=$(dirname "${BASH_SOURCE[0]}")/tls-certs.sh

# Replicas: how many the cluster has (its scheduler<i> directories), or
# --schedulers for a new one; nsched 1 is the single scheduler above.
nsched=0
for d in "$dir"/scheduler[0-9]*; do
    [ -d "$d" ] && nsched=$((nsched + 1))
done
if [ "$nsched" -eq 0 ]; then
    nsched=${schedulers:-1}
    [ "$nsched" -eq 1 ] || [ ! -d "$sdir" ] ||
        die "'$dir' has a single scheduler; --schedulers $nsched needs a new --dir"
elif [ -n "$schedulers" ] && [ "$schedulers" != "$nsched" ]; then
    die "'$dir' has $nsched scheduler replicas; --schedulers $schedulers needs a new --dir"
fi
if [ "$nsched" -gt 1 ]; then
    sock=
    for ((i = 1; i <= nsched; i++)); do
        sock+="${sock:+,}$dir/scheduler$i/lockstepd.sock"
    done
fi

# The scheduler's directories and config files (one, or each replica's).
sdirs=("$sdir") sconfs=("$sconf")
if [ "$nsched" -gt 1 ]; then
    sdirs=() sconfs=()
    for ((i = 1; i <= nsched; i++)); do
        sdirs+=("$dir/scheduler$i")
        sconfs+=("$dir/scheduler$i/lockstepd.conf")
    done
fi

# sun_path holds 108 bytes including the terminating NUL.
IFS=, read -r -a socks <<<"$sock"
for s1 in "${socks[@]}"; do
    sock_len=$(printf %s "$s1" | wc -c)
    if [ "$sock_len" -gt 107 ]; then
        [ -z "$created" ] || rmdir "$dir" 2>/dev/null || true
        die "socket path '$s1' is $sock_len bytes; Unix socket paths are limited to 107: use a shorter --dir"
    fi
done

python=
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1; then
        python=$p
        break
    fi
done

# --- processes -------------------------------------------------------------

# running PIDFILE CONF: prints the PID when PIDFILE names a live process
# that runs a lockstep daemon with -c CONF (not a recycled PID, not a
# zombie).
running() {
    local pidfile=$1 conf=$2 pid arg prev='' ours=''
    [ -s "$pidfile" ] || return 1
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    alive "$pid" || return 1
    {
        IFS= read -r -d '' arg || return 1
        case ${arg##*/} in
        lockstepd | lockstep-agent) ;;
        *) return 1 ;;
        esac
        while IFS= read -r -d '' arg; do
            if [ "$prev" = -c ] && [ "$arg" = "$conf" ]; then
                ours=1
            fi
            prev=$arg
        done
    } <"/proc/$pid/cmdline"
    [ -n "$ours" ] || return 1
    echo "$pid"
}

# alive PID: the process exists and is not a zombie.
alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) ||
        return 1
    [ "$state" != Z ]
}

# start NAME EXE CONF DIR [ARG...]: start a daemon in its own session,
# output to DIR/log, its PID in DIR/pid. The PID is written by the process that then
# execs the daemon, so it is right even when setsid has to fork.
start() {
    local name=$1 exe=$2 conf=$3 d=$4 i
    shift 4
    rm -f "$d/pid"
    printf '\n=== %s: starting %s\n' "$(date '+%F %T')" "$name" >>"$d/log"
    # shellcheck disable=SC2016 # expanded by the inner shell
    setsid bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
        "$d/pid" "$exe" -c "$conf" "$@" </dev/null >>"$d/log" 2>&1 &
    for ((i = 0; i < 50; i++)); do
        [ -s "$d/pid" ] && break
        sleep 0.1
    done
    [ -s "$d/pid" ] || die "$name did not start; see $d/log"
    started_pid=$(<"$d/pid")
    echo "started $name (pid $started_pid)"
}

log_tail() {
    local log=$1
    [ -f "$log" ] || return 0
    echo "--- last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
}

# stop NAME DIR CONF [NAME DIR CONF]...: SIGTERM the daemons that run,
# wait up to 10 s, SIGKILL what is left; sets stop_failed if one survives.
stop() {
    local -a names=() dirs=() pids=()
    local name d conf pid i left deadline
    while [ $# -ge 3 ]; do
        name=$1 d=$2 conf=$3
        shift 3
        if pid=$(running "$d/pid" "$conf"); then
            kill -TERM "$pid" 2>/dev/null || true
            names+=("$name") dirs+=("$d") pids+=("$pid")
        else
            rm -f "$d/pid"
        fi
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    deadline=$((SECONDS + 10))
    while :; do
        left=0
        for i in "${!pids[@]}"; do
            if alive "${pids[$i]}"; then
                left=1
            fi
        done
        [ $left = 1 ] || break
        if [ $SECONDS -ge $deadline ]; then
            for i in "${!pids[@]}"; do
                if kill -0 "${pids[$i]}" 2>/dev/null; then
                    echo "${names[$i]} (pid ${pids[$i]}) ignored SIGTERM; sending SIGKILL" >&2
                    kill -KILL "${pids[$i]}" 2>/dev/null || true
                fi
            done
            sleep 0.5
            break
        fi
        sleep 0.1
    done
    for i in "${!pids[@]}"; do
        if alive "${pids[$i]}"; then
            echo "$prog: ${names[$i]} (pid ${pids[$i]}) is still running" >&2
            stop_failed=1
        else
            rm -f "${dirs[$i]}/pid"
            echo "stopped ${names[$i]} (pid ${pids[$i]})"
        fi
    done
}

# --- the cluster -----------------------------------------------------------

# The nodes of this cluster: from --nodes, else from DIR/agents.
agent_count() {
    local n=0 d
    if [ -n "$nodes" ]; then
        echo "$nodes"
        return
    fi
    for d in "$dir"/agents/node*; do
        [ -d "$d" ] && n=$((n + 1))
    done
    echo "$n"
}

lscli() {
    "$cli" --server "$sock" "$@"
}

# nodes_ready N: prints "ready" when node1..nodeN are connected (UP or
# SUSPECT, CORDONED/DRAINING by an operator's earlier decision, or
# UNHEALTHY because its health checks, done with their first full pass,
# exclude it: a node set up with a failing check, as in the header's
# example), else the states.
nodes_ready() {
    local n=$1 json
    json=$(lscli nodes --json 2>/dev/null) || return 1
    if [ -n "$python" ]; then
        "$python" -c '
import json, sys
n = int(sys.argv[1])
nodes = {x.get("name"): x for x in json.loads(sys.stdin.read())}
ok = ("UP", "SUSPECT", "CORDONED", "DRAINING")
missing = []
def checked_out(x):
    h = x.get("health") or {}
    return (x.get("state") == "UNHEALTHY" and not h.get("waiting", True)
            and h.get("excluding", 0) > 0)
for i in range(1, n + 1):
    x = nodes.get("node%d" % i)
    if x is None or (x.get("state") not in ok and not checked_out(x)):
        missing.append("node%d=%s" % (i, x.get("state") if x else "unregistered"))
    elif x.get("state") != "UP":
        print("note: node%d is %s: %s" % (i, x["state"], x.get("reason", "")),
              file=sys.stderr)
print("ready" if not missing else " ".join(missing))
' "$n" <<<"$json"
    else
        # No python3: read the CLI's own table.
        lscli nodes 2>/dev/null | awk -v n="$n" '
            NR > 1 && $1 ~ /^node[0-9]+$/ && ($2 == "UP" || $2 == "SUSPECT" || $2 == "CORDONED" || $2 == "DRAINING") {
                i = substr($1, 5) + 0
                if (i >= 1 && i <= n) up++
            }
            END { print (up == n ? "ready" : "waiting for " n - up " node(s)") }'
    fi
}

write_scheduler_conf() {
    # Jobs of clusters that run side by side must not be handed the same
    # MASTER_PORT, so each cluster draws its own range below the kernel's
    # ephemeral ports (32768 and up).
    local base=$((20000 + (RANDOM % 60) * 200))
    cat >"$sconf.tmp" <<EOF
# lockstepd for the local cluster in $dir
# (written by deploy/local-cluster.sh; kept across runs of 'up')
listen = 127.0.0.1:0
port_file = $sdir/port
$(write_tls_conf)
socket = $sock
state_dir = $sdir/state
cluster_secret_file = $dir/cluster.secret
master_port_base = $base
master_port_count = 200
log_level = info
EOF
    mv "$sconf.tmp" "$sconf"
}

# The scheduler's TLS settings (also added to a config file written
# before there were any).
write_tls_conf() {
    cat <<EOF
# TLS on the TCP port, with the cluster's own CA (tls/)
tls_cert = $tls/server.pem
tls_key = $tls/server.key
tls_ca = $tls/ca.pem
EOF
}

# replica_ports: "i api raft" for each replica, chosen once (free ports
# on 127.0.0.1 when chosen) and kept in DIR/replicas.ports.
replica_ports() {
    local f=$dir/replicas.ports i base
    if [ ! -s "$f" ]; then
        if [ -n "$python" ]; then
            "$python" -c '
import socket, sys
n = int(sys.argv[1])
socks = [socket.socket() for _ in range(2 * n)]
for s in socks:
    s.bind(("127.0.0.1", 0))
for i in range(n):
    print(i + 1, socks[2 * i].getsockname()[1], socks[2 * i + 1].getsockname()[1])
' "$nsched" >"$f.tmp"
        else
            base=$((40000 + (RANDOM % 100) * 100))
            for ((i = 1; i <= nsched; i++)); do
                echo "$i $((base + 2 * i)) $((base + 2 * i + 1))"
            done >"$f.tmp"
        fi
        mv "$f.tmp" "$f"
    fi
    cat "$f"
}

# write_replica_conf I API RAFT PEERS BASE: replica I's lockstepd.conf.
write_replica_conf() {
    local i=$1 api=$2 raft=$3 peers=$4 base=$5 d=$dir/scheduler$1
    cat >"$d/lockstepd.conf.tmp" <<EOF
# lockstepd replica $i of the local cluster in $dir
# (written by deploy/local-cluster.sh; kept across runs of 'up')
listen = 127.0.0.1:$api
port_file = $d/port
socket = $d/lockstepd.sock
state_dir = $d/state
cluster_secret_file = $dir/cluster.secret
master_port_base = $base
master_port_count = 200
log_level = info
replica_id = $i
replica_address = 127.0.0.1:$raft
replicas = $peers
EOF
    mv "$d/lockstepd.conf.tmp" "$d/lockstepd.conf"
}

write_replica_confs() {
    local i api raft peers='' base=$((20000 + (RANDOM % 60) * 200))
    while read -r i api raft; do
        peers+="${peers:+,}$i@127.0.0.1:$raft"
    done < <(replica_ports)
    while read -r i api raft; do
        mkdir -p "$dir/scheduler$i/state"
        # Seeded, replica 1 alone bootstraps the set; the others join it.
        [ -f "$dir/scheduler$i/lockstepd.conf" ] ||
            write_replica_conf "$i" "$api" "$raft" \
                "$([ -n "$seed" ] && [ "$i" != 1 ] || echo "$peers")" "$base"
    done < <(replica_ports)
}

# start_replicas_up: start every replica that does not run, then wait
# until one leads and answers.
start_replicas_up() {
    local i d pid deadline seed_args
    for ((i = 1; i <= nsched; i++)); do
        d=$dir/scheduler$i
        if pid=$(running "$d/pid" "$d/lockstepd.conf"); then
            echo "scheduler replica $i already running (pid $pid)"
        else
            rm -f "$d/port" "$d/lockstepd.sock"
            seed_args=()
            [ -n "$seed" ] && [ "$i" = 1 ] && seed_args=(--seed-from "$seed")
            start "scheduler replica $i" "$lockstepd" "$d/lockstepd.conf" "$d" \
                "${seed_args[@]}"
        fi
    done
    deadline=$((SECONDS + timeout))
    for ((i = 1; i <= nsched; i++)); do
        d=$dir/scheduler$i
        until [ -s "$d/port" ] && [ -S "$d/lockstepd.sock" ]; do
            if ! alive "$(<"$d/pid")" || [ $SECONDS -ge $deadline ]; then
                log_tail "$d/log"
                die "scheduler replica $i did not start"
            fi
            sleep 0.1
        done
    done
    until lscli whoami >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            for ((i = 1; i <= nsched; i++)); do
                log_tail "$dir/scheduler$i/log"
            done
            die "no scheduler replica leads and answers within ${timeout}s"
        fi
        sleep 0.2
    done
}

write_agent_conf() {
    local i=$1 d=$2 ids=none
    [ "$gpus" -gt 0 ] && ids=0-$((gpus - 1))
    cat >"$d/agent.conf.tmp" <<EOF
# lockstep-agent node$i of the local cluster in $dir
# (written by deploy/local-cluster.sh; kept across runs of 'up')
# The scheduler is https://127.0.0.1:<its port>, trusted through the
# cluster's CA: both are given when 'up' starts the agent (-o server=...
# -o server_ca=$tls/ca.pem), since the port is chosen when the scheduler
# starts.
node_name = node$i
addr = 127.0.0.1
gpus = $ids
# CPUs offered to jobs: more than the machine has is fine for trying
# lockstep out (0 offers the machine's real count).
cpus = $cpus
labels = rack=r$i
state_dir = $d/state
# The node's own key, derived from the cluster secret (docs/operations.md
# "Node keys"): the agent never reads the secret.
node_key_file = $d/node.key
# Witness queries (docs/fault-tolerance.md "Scheduler outages"): every
# agent of this machine on a free UDP port of its own.
witness_port = 0
# Every rank runs as the user who started the cluster.
run_as_submitter = false
log_level = info
# Health checks: the fake GPUs' own nvidia-smi, and a kernel log of this
# node's own (empty) rather than the machine's.
nvidia_smi = $d/nvidia-smi
kmsg_path = $d/kmsg
EOF
    mv "$d/agent.conf.tmp" "$d/agent.conf"
    printf '#!/bin/sh\n# the fake GPUs of node%s (deploy/fake-nvidia-smi)\nFAKE_NVIDIA_SMI_GPUS=%s exec %q "$@"\n' \
        "$i" "$gpus" "$root/deploy/fake-nvidia-smi" >"$d/nvidia-smi"
    chmod +x "$d/nvidia-smi"
    touch "$d/kmsg"
}

# agent_args I [URL]: prints the -o arguments of node<I>'s agent, one a
# line: the scheduler's URL (when given: server_urls) and its CA, then the
# --agent-opt settings.
agent_args() {
    local a
    if [ -n "${2:-}" ]; then
        printf '%s\n' -o "server=$2" -o "server_ca=$tls/ca.pem"
    fi
    for a in "${agent_opts[@]}"; do
        printf '%s\n' "$a"
    done
    printf '%s' "${node_opts[$1]:-}"
}

# server_urls: the scheduler's https:// URL, or each replica's, comma-
# separated (the agents' server and LOCKSTEP_URL).
server_urls() {
    local url='' d
    for d in "${sdirs[@]}"; do
        url+="${url:+,}https://127.0.0.1:$(<"$d/port")"
    done
    echo "$url"
}

write_env() {
    local url=$1
    {
        echo "# . this file to point the lockstep CLI at the local cluster in $dir"
        printf 'export LOCKSTEP_SERVER=%q\n' "$sock"
        printf 'export LOCKSTEP_URL=%q\n' "$url"
        printf 'export LOCKSTEP_CA=%q\n' "$tls/ca.pem"
        # shellcheck disable=SC2016 # $PATH is for whoever sources the file
        printf 'export PATH=%q:"$PATH"\n' "${cli%/*}"
    } >"$dir/env.tmp"
    mv "$dir/env.tmp" "$dir/env"
}

# start_scheduler [ARG...]: start lockstepd and wait until it answers on
# its socket. Returns 1 (after showing its log) if it exits during
# start-up; exits if it does not answer in time.
start_scheduler() {
    local deadline
    rm -f "$sdir/port" "$sock"
    start scheduler "$lockstepd" "$sconf" "$sdir" "$@"
    deadline=$((SECONDS + timeout))
    until [ -s "$sdir/port" ] && [ -S "$sock" ] &&
        lscli whoami >/dev/null 2>&1; do
        if ! alive "$started_pid"; then
            log_tail "$sdir/log"
            return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log_tail "$sdir/log"
            die "the scheduler did not answer on $sock within ${timeout}s"
        fi
        sleep 0.1
    done
}

cluster_up() {
    local n i d pid state deadline server_url old_port args c
    n=$(agent_count)
    [ "$n" -ge 1 ] || die "--nodes is required (no agents exist in '$dir' yet)"
    for b in "$lockstepd" "$agentd" "$cli"; do
        [ -x "$b" ] || die "'$b' not found: build first (meson setup build && ninja -C build), or set LOCKSTEP_BUILD"
    done

    mkdir -p "$dir/agents"
    if [ ! -s "$dir/cluster.secret" ]; then
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 |
            tr -d ' \n' >"$dir/cluster.secret")
    fi
    chmod 600 "$dir/cluster.secret"
    if [ ! -s "$tls/server.pem" ] || [ ! -s "$tls/server.key" ]; then
        "$tls_certs" "$tls" 127.0.0.1 localhost >/dev/null ||
            die "cannot make the TLS certificate in $tls"
    fi
    if [ "$nsched" -gt 1 ]; then
        write_replica_confs
    else
        mkdir -p "$sdir/state"
        [ -f "$sconf" ] || write_scheduler_conf
    fi
    for c in "${sconfs[@]}"; do
        grep -q '^tls' "$c" || write_tls_conf >>"$c"
    done
    for ((i = 1; i <= n; i++)); do
        d=$dir/agents/node$i
        mkdir -p "$d/state"
        [ -f "$d/agent.conf" ] || write_agent_conf "$i" "$d"
        if [ ! -s "$d/node.key" ]; then
            (umask 077 && "$lockstepd" -c "${sconfs[0]}" \
                --derive-node-key "node$i" >"$d/node.key.tmp") ||
                die "cannot derive the key of node$i"
            mv "$d/node.key.tmp" "$d/node.key"
        fi
    done

    # A broken config fails here, with the daemon's own message.
    for c in "${sconfs[@]}"; do
        "$lockstepd" -c "$c" --check-config >/dev/null ||
            die "invalid scheduler configuration in $c"
    done
    for i in "${!node_opts[@]}"; do
        [ "$i" -le "$n" ] || die "--agent-opt-node $i: the cluster has $n nodes"
    done
    for ((i = 1; i <= n; i++)); do
        mapfile -t args < <(agent_args "$i")
        "$agentd" -c "$dir/agents/node$i/agent.conf" "${args[@]}" \
            --check-config >/dev/null ||
            die "invalid agent configuration in $dir/agents/node$i/agent.conf${args[*]:+ with ${args[*]}}"
    done

    # The scheduler first: the agents connect to its socket.
    if [ "$nsched" -gt 1 ]; then
        start_replicas_up
    elif pid=$(running "$sdir/pid" "$sconf"); then
        echo "scheduler already running (pid $pid)"
    else
        # A scheduler that died is restarted on the TCP port it had, so
        # that LOCKSTEP_URL in open shells stays right; if that port has
        # been taken since, on a new one.
        old_port=
        if [ -s "$sdir/port" ]; then
            old_port=$(<"$sdir/port")
            [[ $old_port =~ ^[0-9]+$ ]] || old_port=
        fi
        if [ -n "$old_port" ] && start_scheduler -o "listen=127.0.0.1:$old_port"
        then
            :
        else
            [ -z "$old_port" ] ||
                echo "port $old_port is taken; starting on a new port"
            start_scheduler || die "the scheduler exited during start-up"
        fi
    fi
    server_url=$(server_urls)

    for ((i = 1; i <= n; i++)); do
        d=$dir/agents/node$i
        if pid=$(running "$d/pid" "$d/agent.conf") &&
            ! tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null |
            grep -qxF "server=$server_url"; then
            # It talks to the port a scheduler had before: a restarted
            # agent adopts its running ranks (docs/fault-tolerance.md).
            echo "node$i agent (pid $pid) talks to another port; restarting it"
            stop "node$i agent" "$d" "$d/agent.conf"
        fi
        if pid=$(running "$d/pid" "$d/agent.conf"); then
            echo "node$i agent already running (pid $pid)"
        else
            # Several agents on one host: Open MPI must use TCP over
            # loopback between them and a shared-memory directory of
            # each agent's own (README "Running an MPI program"); the
            # ranks inherit these from the agent.
            mkdir -p "$d/shm"
            mapfile -t args < <(agent_args "$i" "$server_url")
            OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo \
                OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_backing_directory="$d/shm" \
                start "node$i agent" "$agentd" "$d/agent.conf" "$d" "${args[@]}"
        fi
    done

    deadline=$((SECONDS + timeout))
    while :; do
        state=$(nodes_ready "$n" || echo "scheduler not answering")
        [ "$state" = ready ] && break
        for ((i = 1; i <= n; i++)); do
            d=$dir/agents/node$i
            if ! alive "$(<"$d/pid")"; then
                log_tail "$d/log"
                die "the node$i agent exited"
            fi
        done
        if [ $SECONDS -ge $deadline ]; then
            echo "$prog: not all $n nodes came up within ${timeout}s: $state" >&2
            for d in "${sdirs[@]}"; do
                log_tail "$d/log"
            done
            for ((i = 1; i <= n; i++)); do
                log_tail "$dir/agents/node$i/log"
            done
            echo "$prog: the daemons are left running; stop them with: $prog down --dir $dir" >&2
            exit 1
        fi
        sleep 0.2
    done

    write_env "$server_url"
    if [ "$nsched" -gt 1 ]; then
        echo "cluster up: $n node(s), $nsched scheduler replicas on $sock and $server_url"
    else
        echo "cluster up: $n node(s), scheduler on $sock and $server_url"
    fi
    echo "use it with: . $dir/env"
}

# Cancel what still runs so that the agents kill the ranks, and wait until
# no node holds a job. Best effort: down goes on if the scheduler is sick.
cancel_jobs() {
    local ids deadline busy
    [ -n "$python" ] || return 0
    ids=$(lscli jobs --json 2>/dev/null |
        "$python" -c 'import json, sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)))' \
            2>/dev/null) || return 0
    [ -n "$ids" ] || return 0
    echo "cancelling job(s) $ids"
    # shellcheck disable=SC2086
    lscli cancel $ids >/dev/null || true
    deadline=$((SECONDS + timeout))
    while [ $SECONDS -lt $deadline ]; do
        busy=$(lscli nodes --json 2>/dev/null |
            "$python" -c 'import json, sys; print(sum(len(n.get("jobs") or []) for n in json.load(sys.stdin)))' \
                2>/dev/null) || return 0
        [ "$busy" = 0 ] && return 0
        sleep 0.2
    done
    echo "$prog: ranks were still running after ${timeout}s; stopping anyway" >&2
}

cluster_down() {
    local -a args=() sargs=()
    local d i any=
    stop_failed=
    for i in "${!sdirs[@]}"; do
        running "${sdirs[$i]}/pid" "${sconfs[$i]}" >/dev/null && any=1
        sargs+=("scheduler${sdirs[$i]##*/scheduler}" "${sdirs[$i]}" "${sconfs[$i]}")
    done
    if [ -n "$any" ]; then
        cancel_jobs
    fi
    for d in "$dir"/agents/node*; do
        [ -d "$d" ] || continue
        args+=("${d##*/} agent" "$d" "$d/agent.conf")
    done
    # Agents first: a scheduler that outlived its agents would only mark
    # their nodes LOST.
    [ ${#args[@]} -eq 0 ] || stop "${args[@]}"
    stop "${sargs[@]}"
    for i in "${!sdirs[@]}"; do
        if ! running "${sdirs[$i]}/pid" "${sconfs[$i]}" >/dev/null; then
            rm -f "${sdirs[$i]}/port" "${socks[$i]}"
        fi
    done
    [ -z "$stop_failed" ] || exit 1
}

cluster_status() {
    local d pid port all=0 i name
    for i in "${!sdirs[@]}"; do
        name=scheduler${sdirs[$i]##*/scheduler}
        port=
        [ -s "${sdirs[$i]}/port" ] && port=$(<"${sdirs[$i]}/port")
        if pid=$(running "${sdirs[$i]}/pid" "${sconfs[$i]}"); then
            printf '%-12s pid %-8s running  %s%s\n' "$name" "$pid" \
                "${socks[$i]}" "${port:+  https://127.0.0.1:$port}"
        else
            printf '%-12s %-12s stopped\n' "$name" -
            all=1
        fi
    done
    for d in "$dir"/agents/node*; do
        [ -d "$d" ] || continue
        if pid=$(running "$d/pid" "$d/agent.conf"); then
            printf '%-12s pid %-8s running\n' "${d##*/}" "$pid"
        else
            printf '%-12s %-12s stopped\n' "${d##*/}" -
            all=1
        fi
    done
    return $all
}

case $cmd in
up) cluster_up ;;
down) cluster_down ;;
status) cluster_status ;;
esac
