# shellcheck shell=bash disable=SC2034 # sets variables its caller uses
# vs-lockstep.sh - the lockstep adapter of bench/vs-figures.sh (sourced
# by it with --system lockstep): the commands each figure runs, in
# lockstep's words; bench/slurm/system.sh is Slurm's. vs-figures.sh lists
# what each function must do.
#
# The cluster is the test harness's (tests/lib/harness.sh, as
# bench/recovery.sh uses it): one lockstepd and N real lockstep-agent
# processes n1..nN on loopback, each with 8 CPUs (and 4 fake GPUs),
# production timing defaults (heartbeat 1 s, node timeout 10 s, lease
# 5 s), every process cleaned up by PID. The CLI talks to the
# scheduler's Unix socket as root (an operator), as sbatch talks to
# slurmctld as root.

# shellcheck source=tests/lib/harness.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/harness.sh"

HEARTBEAT_MS=1000 NODE_TIMEOUT_MS=10000 LEASE_MS=5000 KILL_GRACE_MS=10000
SYS_LABEL="lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
# one job of one rank on one node, one CPU (restarted elsewhere if its
# node is lost: --max-infra-restarts defaults to 20)
SUBMIT1=("$CLI" submit --nodes 1 --name vs -- sh -c)
SUBMIT7=("$CLI" submit --nodes 1 --cpus-per-rank 7 --name vs7 -- sh -c)
IDLE_CMD="\"$CLI\" jobs --json --limit 1 | grep -qx '\\[\\]'"
LS_NODES=0

sys_start() {
    local k
    LS_NODES=$1
    start_scheduler >/dev/null || return 1
    for k in $(seq 1 "$1"); do start_agent "n$k"; done
    wait_nodes_up "$1" 120
}
sys_stop() { :; } # the harness's exit trap stops everything, by PID
sys_submit1() { submit_id "${SUBMIT1[@]:2}" "$1"; }
sys_submit7() { submit_id "${SUBMIT7[@]:2}" "$1"; }

sys_busy() {
    local id
    id=$(submit_id --nodes "$LS_NODES" --cpus-per-rank 8 --name busy -- sleep 1000000) || return 1
    wait_job_state "$id" RUNNING 60 >/dev/null || return 1
    echo "$id"
}

# specs N: N one-line specs of `true`, for --specs
specs() {
    "$PY" -c 'import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"argv": ["true"], "name": "a%d" % i}))' "$1"
}
sys_array_prep() { specs "$1" >"$TEST_DIR/array.jsonl"; }
sys_array() { "$CLI" submit --nodes 1 --specs - <"$TEST_DIR/array.jsonl" >/dev/null; }

# sys_fill N: N more pending jobs, 1,000 a request (how they get there
# does not matter to the memory and disk figures)
sys_fill() {
    local left=$1 n
    while [ "$left" -gt 0 ]; do
        n=$((left < 1000 ? left : 1000))
        specs "$n" | "$CLI" submit --nodes 1 --specs - >/dev/null || return 1
        left=$((left - n))
    done
}

no_pending() { [ "$("$CLI" jobs --state PENDING --limit 1 --json)" = "[]" ]; }
sys_cancel_pending() {
    "$CLI" cancel --all-users --state PENDING >/dev/null
    wait_until 120 no_pending
}
sys_cancel() { "$CLI" cancel "$@" >/dev/null; }
sys_cancel_all() {
    local s
    for s in PENDING PLACED RUNNING RESTARTING; do
        "$CLI" cancel --all-users --state $s >/dev/null 2>&1
    done
    wait_until 120 sh -c "$IDLE_CMD"
}

sys_running_on() {
    job_json "$1" '(j["attempts"][-1]["nodes"][0]["node"] if j["state"] == "RUNNING" else "")' |
        grep .
}
sys_ended_ok() { job_state_is "$1" SUCCEEDED; }

# sys_kill_node NODE: kill -9 its agent and every process of a job on it
# (the supervisors and ranks, which outlive an agent by design), as a
# machine that dies takes them with it.
sys_kill_node() {
    local p
    kill_agent "$1"
    for p in $(tagged_pids); do
        tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" |
            grep -qxF "LOCKSTEP_NODE=$1" && kill -9 "$p" 2>/dev/null
    done
}
sys_revive_node() {
    start_agent "$1"
    wait_for 60 "test \$(node_state $1) != LOST"
    # a node lost under jobs may be excluded (UNHEALTHY), as designed;
    # put it back as an operator would after an injected fault
    [ "$(node_state "$1")" = UP ] ||
        "$CLI" uncordon "$1" --reason "benchmark: agent restarted" >/dev/null
    wait_nodes_up "$LS_NODES" 60
}

sys_drain() { "$CLI" drain "$1" --reason bench >/dev/null; }
sys_drained() { [ "$(node_state "$1")" = CORDONED ]; }
sys_undrain() { "$CLI" uncordon "$1" --reason bench >/dev/null; }

sys_ctl_pid() { echo "$SCHED_PID"; }
sys_state_dir() { echo "$TEST_DIR/sched/state"; }
sys_ctl_stop() { stop_scheduler; }
sys_ctl_start() { start_scheduler >/dev/null; }
sys_answering() { "$CLI" show "$1" >/dev/null 2>&1; }
sys_dir() { echo "$TEST_DIR"; }
