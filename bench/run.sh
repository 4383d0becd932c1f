#!/bin/bash
# run.sh - start a 4-node local cluster in a temporary directory, run the
# benchmarks against it, and stop it again.
#
#   bench/run.sh [BUILD_DIR] [bench.py options...]
#
# Prints figures; asserts nothing (timings on shared machines are noisy).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
dir=$(mktemp -d "${TMPDIR:-/tmp}/ls-bench.XXXXXX")
cleanup() {
    "$root/deploy/local-cluster.sh" down --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
LOCKSTEP_BUILD=$build "$root/deploy/local-cluster.sh" up --dir "$dir" --nodes 4 >/dev/null
. "$dir/env"
echo "# $(nproc) cores, $(uname -r), lockstep $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
/usr/bin/python3 "$root/bench/bench.py" --socket "$LOCKSTEP_SERVER" "$@"
