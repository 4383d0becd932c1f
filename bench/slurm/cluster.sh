# shellcheck shell=bash disable=SC2034 # sets variables its caller uses
# cluster.sh - a private Slurm on this machine, for bench/vs-figures.sh
# and bench/vs-slurm.sh (source it; a development tool, not a test).
#
#   . bench/slurm/cluster.sh
#   slurm_start 16         # munged, slurmctld, 16 slurmd on loopback
#   sbatch ...             # SLURM_CONF points at this cluster's config
#   slurm_stop             # every process it started, by PID; its dir
#
# Debian 12's slurmctld/slurmd 22.05 and munge, installed on demand with
# tools/apt-install.sh (run as root: the daemons and the jobs run as
# root). Everything lives in one temporary directory: slurm.conf, the
# state and spool directories, the logs, a munge key and a munged of its
# own on its own socket (AuthInfo=socket=...), ports the kernel said were
# free. No system-wide Slurm or munge service is started, stopped or
# read; nothing is ever killed by name.
#
# Nodes: node1..nodeN, each a slurmd started with `-N nodeN` (Debian's
# slurmd is not built with --enable-multiple-slurmd, yet -N with a Port
# of its own per node works: every node has NodeAddr=127.0.0.1) in a UTS
# namespace of its own (unshare -u, hostname nodeN), so that each
# slurmd and the job steps it forks can be told apart by
# /proc/PID/ns/uts (slurm_node_pids) and killed alone. Each node has 8
# CPUs and 16 GiB (SlurmdParameters=config_overrides: the config, not
# this machine, says what a node has), as lockstep's test agents do.
#
# Settings changed from Slurm's defaults, and why (nothing that makes
# Slurm's scheduling or its node-loss detection faster than its default):
#   - MaxJobCount=200000 (default 10000): the memory figure holds 10,000
#     pending jobs besides the others
#   - SlurmdTimeout=$SLURMD_TIMEOUT, default 300 (Slurm's own default):
#     slurm_start takes it from the environment (bench/vs-slurm.sh
#     --slurmd-timeout); lockstep's node timeout is its default, 10 s
#   - ReturnToService=2: a node whose slurmd was killed comes back when
#     it registers again (between node-loss trials)
#   - no accounting (accounting_storage/none, jobacct_gather/none),
#     proctrack/linuxproc, task/none (no cgroups here), select/cons_tres,
#     sched/backfill (the defaults of a usual install)
#   - SlurmctldPort/SlurmdPort: free ports; all state under the dir
#   - SchedulerParameters: Slurm's defaults (batch_sched_delay=3 among
#     them: a batch job may wait up to 3 s for the scheduler), unless
#     $SLURM_SCHED_PARAMS says otherwise (bench/vs-slurm.sh
#     --slurm-sched-params)

SLURM_NODES=0
SLURM_DIR=
SLURM_CTLD_PID=
SLURM_MUNGED_PID=
declare -A SLURMD_PID=()

slurm_need() {
    local p missing=()
    for p in slurmctld slurmd munge slurm-client; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    "$(dirname "${BASH_SOURCE[0]}")/../../tools/apt-install.sh" "${missing[@]}"
}

# free_ports N: N TCP ports the kernel just handed out (and freed).
free_ports() {
    /usr/bin/python3 - "$1" <<'EOF'
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
EOF
}

slurm_conf() { # N PORTS...
    local n=$1 i d=$SLURM_DIR
    shift
    local ctld=$1
    shift
    cat <<EOF
# written by bench/slurm/cluster.sh
ClusterName=lsbench
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$ctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge.sock
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/spool/slurmd.%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/spool/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MaxJobCount=200000
SlurmdTimeout=${SLURMD_TIMEOUT:-300}
${SLURM_SCHED_PARAMS:+SchedulerParameters=$SLURM_SCHED_PARAMS}
ReturnToService=2
EOF
    for i in $(seq 1 "$n"); do
        echo "NodeName=node$i NodeAddr=127.0.0.1 Port=$1 CPUs=8 RealMemory=16384 State=UNKNOWN"
        shift
    done
    echo "PartitionName=bench Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP"
}

# slurm_start_node NAME: its slurmd, in a UTS namespace named NAME.
slurm_start_node() {
    mkdir -p "$SLURM_DIR/spool/$1"
    # shellcheck disable=SC2016 # expanded by that sh
    unshare -u /bin/sh -c 'hostname "$1" && exec slurmd -D -N "$1"' sh "$1" \
        >>"$SLURM_DIR/spool/$1.out" 2>&1 &
    SLURMD_PID[$1]=$!
    disown $! # killed by PID later, without bash reporting it
}

# slurm_up_count: nodes slurmctld reports idle, mixed or allocated.
slurm_up_count() {
    sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^(idle|mix|alloc)$/' | wc -l
}

slurm_wait() { # SECONDS CMD...: poll CMD every 0.1 s
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -ge $deadline ] && return 1
        sleep 0.1
    done
}

slurm_nodes_up() { [ "$(slurm_up_count)" -ge "$1" ]; }
slurm_job_is() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = "$2" ]; } # ID STATE

# slurm_start_ctld: slurmctld (again, on the same state: -R would be
# needed only to recover from a state file it cannot read).
slurm_start_ctld() {
    slurmctld -D >>"$SLURM_DIR/slurmctld.out" 2>&1 &
    SLURM_CTLD_PID=$!
    disown $!
}

# slurm_gone PID: PID has exited (or is a zombie)
slurm_gone() {
    local st
    st=$(sed -n 's/^[0-9]* (.*) \(.\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
    [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

slurm_start() { # N
    local n=$1 ports
    slurm_need || return 1
    SLURM_NODES=$n
    SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/slurm-bench.XXXXXX") || return 1
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/munge"
    chmod 700 "$SLURM_DIR/munge"
    (umask 077 && head -c 1024 /dev/urandom >"$SLURM_DIR/munge/munge.key")
    munged -F -f --socket="$SLURM_DIR/munge.sock" \
        --key-file="$SLURM_DIR/munge/munge.key" \
        --pid-file="$SLURM_DIR/munge/munged.pid" \
        --log-file="$SLURM_DIR/munge/munged.log" \
        --seed-file="$SLURM_DIR/munge/munged.seed" \
        >>"$SLURM_DIR/munge/out" 2>&1 &
    SLURM_MUNGED_PID=$!
    disown $!
    slurm_wait 10 test -S "$SLURM_DIR/munge.sock" ||
        { echo "munged did not start" >&2; cat "$SLURM_DIR/munge/out" >&2; return 1; }
    ports=$(free_ports $((n + 1)))
    # shellcheck disable=SC2086 # a list of ports
    slurm_conf "$n" $ports >"$SLURM_DIR/slurm.conf"
    export SLURM_CONF=$SLURM_DIR/slurm.conf
    slurm_start_ctld
    slurm_wait 30 scontrol ping ||
        { echo "slurmctld did not start" >&2; tail "$SLURM_DIR/slurmctld.log" >&2; return 1; }
    for i in $(seq 1 "$n"); do slurm_start_node "node$i"; done
    slurm_wait 120 slurm_nodes_up "$n" ||
        { echo "nodes did not come up" >&2; sinfo -N >&2; return 1; }
}

# slurm_node_pids NAME: every process in node NAME's UTS namespace (its
# slurmd, the slurmstepd and job processes it forked).
slurm_node_pids() {
    local pid=${SLURMD_PID[$1]:-} ns f p
    [ -n "$pid" ] || return 0
    # the unshare'd shell exec'd slurmd: the recorded PID is slurmd's
    ns=$(readlink "/proc/$pid/ns/uts" 2>/dev/null) || return 0
    for f in /proc/[0-9]*/ns/uts; do
        p=${f#/proc/}
        p=${p%%/*}
        [ "$(readlink "$f" 2>/dev/null)" = "$ns" ] && echo "$p"
    done
}

# slurm_kill_node NAME: kill -9 the node's slurmd and everything it ran,
# as a machine that dies takes its jobs with it.
slurm_kill_node() {
    local p
    for p in $(slurm_node_pids "$1"); do kill -9 "$p" 2>/dev/null; done
    slurm_wait 10 slurm_gone "${SLURMD_PID[$1]}"
    SLURMD_PID[$1]=
}

slurm_stop() {
    local name p
    [ -n "$SLURM_DIR" ] || return 0
    for name in "${!SLURMD_PID[@]}"; do
        for p in $(slurm_node_pids "$name"); do kill -9 "$p" 2>/dev/null; done
    done
    for p in "$SLURM_CTLD_PID" "$SLURM_MUNGED_PID"; do
        [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
    for p in "${SLURMD_PID[@]}" "$SLURM_CTLD_PID" "$SLURM_MUNGED_PID"; do
        [ -n "$p" ] && slurm_wait 10 slurm_gone "$p"
    done
    SLURMD_PID=() SLURM_CTLD_PID='' SLURM_MUNGED_PID=''
    if [ "${SLURM_KEEP_DIR:-}" = 1 ]; then
        echo "# slurm directory kept: $SLURM_DIR" >&2
    else
        rm -rf "$SLURM_DIR"
    fi
    SLURM_DIR=
}
