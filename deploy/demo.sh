#!/bin/bash
# demo.sh - the five-minute tour on a running local cluster (make demo):
# a 2-node x 2-rank PyTorch DDP job (CPU, gloo), followed to the end.
#
#   deploy/demo.sh DIR      (DIR as given to local-cluster.sh up)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: deploy/demo.sh DIR}
. "$dir/env"
cli=${LOCKSTEP_BUILD:-$root/build}/cli/lockstep
work=$(cd "$dir" && pwd)/demo
mkdir -p "$work"

run() { echo "\$ lockstep $*"; "$cli" "$@"; echo; }

run nodes
echo "\$ lockstep submit --name ddp-demo --nodes 2 --ranks-per-node 2 --checkpoint-dir $work/ckpt -- python3 ddp_train.py --steps 60 --step-time 0.05"
id=$("$cli" submit --json --name ddp-demo --nodes 2 --ranks-per-node 2 \
    --checkpoint-dir "$work/ckpt" --workdir "$work" \
    -- /usr/bin/python3 "$root/tests/helpers/ddp_train.py" \
    --steps 60 --step-time 0.05 --out "$work/out" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "submitted job $id"
echo
run jobs
echo "\$ lockstep logs $id --rank 0 --follow"
"$cli" logs "$id" --rank 0 --follow
echo
run show "$id"
echo "The cluster is still up: . $dir/env; $cli nodes"
echo "Stop it with: make demo-down"
