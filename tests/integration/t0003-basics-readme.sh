#!/bin/bash
# t0003: every command block of README.md runs as written against a local
# cluster (deploy/local-cluster.sh), in order: each command of a ```sh
# block and each "$ " line of a ```console block. A command must exit 0
# (non-zero where the README shows it FAILED or an error line "lockstep
# CMD: ..."), and its output must match
# what the README shows: line by line for outputs of up to 3 lines, the
# first line for longer ones (tables), with numbers, times and runs of
# blanks compared loosely and a "..." ending a line matching any rest.
# Read-only commands (nodes, jobs, show, logs, node) are retried for up
# to 20 s until they match, since a reader types them seconds apart.
# Every job a command submits must end SUCCEEDED before the next submit
# (CANCELLED if a README command cancelled it).
#
# Substitutions: /tmp/lsc (the cluster directory) becomes a directory of
# this test and /shared/ckpt one under it; the commands run in a scratch
# directory in which deploy/ is the source tree's, with LOCKSTEP_BUILD the
# suite's build, PYTHONPATH=<repo>/sdk/python as the README says, and
# /usr/bin first on PATH: the README's python3 is Debian's, which has
# mpi4py and torch (make deps installs them).
# Files the README's commands name are written by the test: train.py is
# the README's ```python block that comes before the command (the last
# one above it), with its undefined names (total, train_one_step, save,
# load) defined; allreduce.c and train_mpi4py.py are small MPI programs.
#
# Exceptions, not run here:
#   make demo, make test  they install packages and build in the source
#                         tree (make test runs this very suite); CI runs
#                         make test (.ci/run), and t0004 the install
#   meson setup build && ninja -C build
#                         the suite runs on a tree already built
#                         (LOCKSTEP_BUILD); building in the source tree
#                         would race the other tests
# and one is run differently:
#   lockstep logs 1 --rank 3 --follow
#                         it blocks until the job ends, which the next
#                         command (cancel 1) does: it runs in the
#                         background and must end within 20 s of it.
# The MPI block is skipped without mpicc, mpi4py or a PMIx build (as
# t2006 is).
. "$(dirname "$0")/../lib/harness.sh"

WORK=$TEST_DIR/work
mkdir -p "$WORK" "$TEST_DIR/shared/ckpt"
ln -s "$SRC_DIR/deploy" "$WORK/deploy"
export LOCKSTEP_BUILD=$BUILD_DIR
export PYTHONPATH=$SRC_DIR/sdk/python
export PATH=/usr/bin:$PATH
export LOCKSTEP_CLUSTER_TIMEOUT=60

have_mpi=1
if ! command -v mpicc >/dev/null 2>&1 || ! "$PY" -c "import mpi4py" 2>/dev/null ||
    ! grep -q "LOCKSTEP_HAVE_PMIX 1" "$BUILD_DIR/version.h"; then
    have_mpi=
fi

# Split the README into one directory per command: cmd (the text, with
# the substitutions), expect (the output lines to check), line, fail (1
# when the README shows it failing), py (the python block before it).
"$PY" - "$SRC_DIR/README.md" "$TEST_DIR" "$SRC_DIR/tests/helpers/doc-blocks.py" <<'PYEOF'
import json, os, re, subprocess, sys
readme, out, blocks = sys.argv[1:]
cmds = json.loads(subprocess.check_output([sys.executable, blocks, readme, "commands"]))
# python blocks with their line numbers
pys, lang, start = [], None, 0
for n, line in enumerate(open(readme), 1):
    if lang is None and re.match(r"^```python\s*$", line):
        lang, start, body = "python", n, []
    elif lang and line.startswith("```"):
        pys.append((start, "".join(body)))
        lang = None
    elif lang:
        body.append(line)
def subst(s):
    return s.replace("/tmp/lsc", os.path.join(out, "lsc")).replace(
        "/shared/ckpt", os.path.join(out, "shared/ckpt"))
items = []
for c in cmds:
    if c["lang"] == "sh":
        # one command per logical line; comment-only lines dropped
        cur, first = "", c["line"]
        for i, l in enumerate(c["cmd"].split("\n")):
            if not cur and (not l.strip() or l.strip().startswith("#")):
                continue
            if not cur:
                first = c["line"] + i
            cur += l + "\n"
            if not l.rstrip().endswith("\\"):
                items.append({"line": first, "cmd": cur, "output": []})
                cur = ""
    else:
        items.append(c)
for k, c in enumerate(items, 1):
    d = os.path.join(out, "cmd", "%03d" % k)
    os.makedirs(d)
    open(os.path.join(d, "cmd"), "w").write(subst(c["cmd"]).rstrip("\n") + "\n")
    outl = [l for l in c["output"] if l.strip()]
    if len(outl) > 3:
        outl = outl[:1]
    open(os.path.join(d, "expect"), "w").write("".join(subst(l) + "\n" for l in outl))
    open(os.path.join(d, "line"), "w").write("%d\n" % c["line"])
    open(os.path.join(d, "fail"), "w").write(
        "1\n" if any("FAILED" in l or re.match(r"lockstep [a-z-]+: ", l)
                     for l in c["output"]) else "0\n")
    before = [p for p in pys if p[0] < c["line"]]
    open(os.path.join(d, "py"), "w").write(before[-1][1] if before else "")
PYEOF

# The definitions train.py needs around the README's python blocks.
PRELUDE='import os, time
total = 300
def train_one_step():
    time.sleep(0.002)
def save(path):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "rank-%s" % os.environ["RANK"]), "w") as f:
        f.write("state\n")
def load(path):
    assert os.path.isdir(path), path
'

cat >"$WORK/allreduce.c" <<'EOF2'
#include <mpi.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
    int rank, size, one = 1, sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return sum == size ? 0 : 1;
}
EOF2
cat >"$WORK/train_mpi4py.py" <<'EOF2'
from mpi4py import MPI
c = MPI.COMM_WORLD
s = c.allreduce(1)
print("rank %d of %d sum %d" % (c.Get_rank(), c.Get_size(), s))
assert s == c.Get_size()
EOF2

# norm: numbers become N, runs of blanks one blank.
norm() {
    sed -E 's/[0-9]+/N/g; s/[[:space:]]+/ /g; s/^ //; s/ $//'
}

# output_matches EXPECT ACTUAL: each expected line, in order, is the start
# of an actual non-empty line (after norm); "..." ends a prefix.
output_matches() {
    "$PY" - "$1" "$2" <<'PYEOF'
import re, sys
def norm(s):
    return re.sub(r"\s+", " ", re.sub(r"[0-9]+", "N", s)).strip()
exp = [norm(l) for l in open(sys.argv[1]) if l.strip()]
act = [norm(l) for l in open(sys.argv[2], errors="replace") if l.strip()]
i = 0
for e in exp:
    full = not e.endswith("...") and not e.endswith("…")
    e = e.rstrip(".…").rstrip() if not full else e
    while i < len(act) and not (act[i] == e if full else act[i].startswith(e)):
        i += 1
    if i == len(act):
        print("expected a line %s %r" % ("==" if full else "starting", e))
        sys.exit(1)
    i += 1
PYEOF
}

last_job=
cancelled=
follow_pid=

# settle_job: the job the last submit started has ended as it should.
settle_job() {
    [ -n "$last_job" ] || return 0
    local want=SUCCEEDED
    case " $cancelled " in *" $last_job "*) want=CANCELLED ;; esac
    wait_for 120 "case \$(lockstep show $last_job --json | jget 'j[\"state\"]') in SUCCEEDED|FAILED|CANCELLED) true ;; *) false ;; esac" &&
        if [ "$(lockstep show "$last_job" --json | jget 'j["state"]')" != "$want" ]; then
            echo "job $last_job did not end $want:"
            lockstep show "$last_job"
            lockstep logs "$last_job" --stream err | tail -n 20
            return 1
        fi
    last_job=
}

# run_cmd DIR: run one README command as the test above says.
run_cmd() {
    local d=$1 cmd rc=0 fail deadline
    cmd=$(<"$d/cmd")
    fail=$(<"$d/fail")
    case $cmd in
    "make demo"* | "make test"* | "meson setup build && ninja -C build"*)
        echo "# not run (see the list at the top of the test): $cmd"
        return 0
        ;;
    "mpicc "* | *" ./allreduce"* | *train_mpi4py.py*)
        if [ -z "$have_mpi" ]; then
            echo "# skipped: mpicc, mpi4py or libpmix missing"
            return 0
        fi
        ;;
    esac
    case $cmd in
    *"lockstep submit"* | "deploy/local-cluster.sh down"*) settle_job || return 1 ;;
    esac
    if [ -s "$d/py" ]; then
        { printf '%s' "$PRELUDE"; cat "$d/py"; } >"$WORK/train.py"
    fi
    echo "\$ $cmd"
    cd "$WORK" || return 1
    case $cmd in
    *"--follow"*)
        eval "$cmd" >"$d/out" 2>&1 &
        follow_pid=$!
        EXTRA_PIDS+=("$follow_pid")
        return 0
        ;;
    esac
    deadline=$((SECONDS + 20))
    while :; do
        rc=0
        eval "$cmd" >"$d/out" 2>&1 || rc=$?
        case $cmd in
        "lockstep nodes"* | "lockstep jobs"* | "lockstep show"* | \
            "lockstep logs"* | "lockstep node "*)
            if [ $rc = 0 ] && ! output_matches "$d/expect" "$d/out" >/dev/null &&
                [ $SECONDS -lt $deadline ]; then
                sleep 0.5
                continue
            fi
            ;;
        esac
        break
    done
    cat "$d/out"
    if [ "$fail" = 1 ]; then
        [ $rc != 0 ] || { echo "exit status 0; the README shows it failing"; return 1; }
    else
        [ $rc = 0 ] || { echo "exit status $rc"; return 1; }
    fi
    output_matches "$d/expect" "$d/out" || return 1
    case $cmd in
    "lockstep cancel"*)
        cancelled="$cancelled ${cmd#lockstep cancel }"
        if [ -n "$follow_pid" ]; then
            wait_until 20 eval "! kill -0 $follow_pid" || {
                echo "logs --follow did not end with the job"
                return 1
            }
            follow_pid=
        fi
        ;;
    *"lockstep submit"*)
        [ "$fail" = 1 ] ||
            last_job=$(sed -n 's/^submitted job \([0-9][0-9]*\).*/\1/p' "$d/out" | head -n 1)
        ;;
    "deploy/local-cluster.sh down"*) ;;
    esac
    return 0
}

for d in "$TEST_DIR"/cmd/*; do
    c=$(head -n 1 "$d/cmd")
    [ "$(wc -l <"$d/cmd")" -gt 1 ] && c="$c ..."
    test_expect_success "README.md:$(<"$d/line"): ${c:0:70}" "run_cmd $d"
done

test_expect_success 'the README has command blocks and every job ended' '
    test "$(ls "$TEST_DIR/cmd" | wc -l)" -ge 15 && test -z "$last_job"
'

test_done
