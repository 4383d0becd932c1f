#!/bin/bash
# t0006: deploy/local-cluster.sh's --agent-opt KEY=VALUE (every agent) and
# --agent-opt-node N KEY=VALUE (node<N> only), as its header shows them: a
# local cluster of 2 nodes whose node2 alone runs a directory of site
# checks holding a failing one comes up (`up` notes node2's exclusion)
# with node2 excluded, citing that check's result, and node1 in service;
# the setting for every agent reached both. Values that are not KEY=VALUE, a node number out of range
# and an unknown key are refused before anything starts, naming what was
# wrong.
. "$(dirname "$0")/../lib/harness.sh"

LC=$SRC_DIR/deploy/local-cluster.sh
CLUSTER=$TEST_DIR/lc
CHECKS=$TEST_DIR/checks
export LOCKSTEP_BUILD=$BUILD_DIR LOCKSTEP_CLUSTER_TIMEOUT=60
mkdir -p "$CHECKS"
cat >"$CHECKS/raid" <<'EOF'
#!/bin/sh
# lockstep: interval=1s timeout=5s
echo '{"status":"FAIL","code":"site.raid_degraded","evidence":"md0: 1 of 2 disks"}'
EOF
chmod +x "$CHECKS/raid"

# refused ARGS... : up fails with ARGS; its message in err.
refused() {
    ! "$LC" up --dir "$CLUSTER" --nodes 2 "$@" >out 2>err && cat err
}

test_expect_success 'bad --agent-opt and --agent-opt-node values are refused' '
    refused --agent-opt novalue &&
    grep -q "invalid --agent-opt '"'"'novalue'"'"': expected KEY=VALUE" err &&
    refused --agent-opt-node 0 health_interval_ms=1000 &&
    grep -q "invalid --agent-opt-node node '"'"'0'"'"'" err &&
    refused --agent-opt-node 2 novalue &&
    grep -q "invalid --agent-opt-node '"'"'novalue'"'"': expected KEY=VALUE" err &&
    refused --agent-opt-node 3 health_checks_dir="$CHECKS" &&
    grep -q "agent-opt-node 3: the cluster has 2 nodes" err &&
    refused --agent-opt no_such_key=1 &&
    grep -q "invalid agent configuration" err &&
    ! test -e "$CLUSTER/scheduler/pid" &&
    rm -rf "$CLUSTER"
'

test_expect_success 'up with an option for every agent and one for node2' '
    "$LC" up --dir "$CLUSTER" --nodes 2 --gpus-per-node 2 \
        --agent-opt health_interval_ms=1000 \
        --agent-opt-node 2 health_checks_dir="$CHECKS" >out 2>err &&
    cat out err &&
    grep -q "^cluster up: 2 node(s)" out &&
    grep -q "^note: node2 is UNHEALTHY: health check failed: FAIL site.raid_degraded" err &&
    . "$CLUSTER/env"
'

checks_of() { # checks_of NODE: the node's checks, sorted, one a line
    ls_cli node "$1" --json | jget "\"\\n\".join(sorted(c[\"check\"] for c in j.get(\"checks\", [])))"
}

test_expect_success 'node2 alone is excluded, with its site check result' '
    wait_for 60 "test \"\$(node_state node2)\" = UNHEALTHY && ls_cli node node2 --json | jget \"j[\\\"reason\\\"]\" | grep -q site.raid_degraded" &&
    ls_cli node node2 --json | jget "j[\"reason\"]" >reason && cat reason &&
    grep -q "^health check failed: FAIL site.raid_degraded node: md0: 1 of 2 disks" reason &&
    checks_of node2 | grep -qx site:raid &&
    wait_for 30 "test \"\$(node_state node1)\" = UP" &&
    ! checks_of node1 | grep -q "^site:"
'

test_expect_success '--agent-opt reached every agent' '
    for i in 1 2; do
        grep -q "health checks=[0-9]* interval_ms=1000 " "$CLUSTER/agents/node$i/log" ||
            return 1
    done
'

test_expect_success 'down' '
    "$LC" down --dir "$CLUSTER" &&
    ! "$LC" status --dir "$CLUSTER" | grep -q "running (pid"
'

test_done
