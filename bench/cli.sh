#!/bin/bash
# cli.sh - what one `lockstep` call costs: the process itself, and a
# shell loop submitting one job per call. Prints figures; asserts
# nothing. docs/scale.md says what each means.
#
#   bench/cli.sh [-n CALLS] [-j JOBS] [-r ROUNDS] [--before BIN | --before-rev REV]
#
# For the CLI of the build (and, given, another one: --before BIN, or
# --before-rev REV, which builds REV's CLI from `git archive` in a
# temporary directory first):
#   - libs: the shared libraries it loads (ldd's lines, vdso and the
#     loader included)
#   - help_ms, whoami_ms: the median wall time of one `lockstep --help`
#     (no request) and one `lockstep whoami` (one GET over the Unix socket)
#     and whoami_tcp_ms (over http:// with a token), over CALLS (200)
#     calls each, the binaries and /bin/true (the baseline: what any
#     process start costs here) interleaved call by call, so that a
#     machine whose load drifts touches all alike
#   - submit_per_s: JOBS (200) `lockstep submit` calls one after the other
#     (a user's shell loop) to a local lockstepd over TCP with a token, no
#     nodes (the jobs wait), ROUNDS (3) rounds alternating the binaries;
#     the median round
#   - the floor of such a loop: CALLS fdatasyncs of a 200-byte append in
#     the scheduler's state directory before each round (the median), and
#     1000 / (whoami_tcp_ms + that): the rate a loop would make if a
#     submission cost the scheduler nothing but its one fsync
set -u
N=200 JOBS=200 ROUNDS=3 BEFORE= REV=
while [ $# -gt 0 ]; do
    case $1 in
    -n) N=$2; shift 2 ;;
    -j) JOBS=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    --before-rev) REV=$2; shift 2 ;;
    *) sed -n 2,27p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"

if [ -n "$REV" ]; then
    src=$TEST_DIR/before
    mkdir -p "$src"
    git -C "$SRC_DIR" archive "$REV" | tar -x -C "$src" || exit 1
    echo "# building the CLI of $REV ($(git -C "$SRC_DIR" rev-parse --short "$REV")) in $src" >&2
    (meson setup "$src/build" "$src" -Dtests=false >"$src/setup.log" 2>&1 &&
        ninja -C "$src/build" cli/lockstep >"$src/build.log" 2>&1) ||
        { tail -n 20 "$src/setup.log" "$src/build.log" >&2; exit 1; }
    BEFORE=$src/build/cli/lockstep
fi

declare -a NAMES=(after) BINS=("$CLI")
if [ -n "$BEFORE" ]; then
    NAMES=(before after) BINS=("$BEFORE" "$CLI")
fi

start_scheduler || exit 1
SOCK=$LOCKSTEP_SERVER
TOKEN=$("$CLI" token create --user bob --role user --json | jget 'j["token"]')
[ -n "$TOKEN" ] || exit 1
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)${REV:+, before: $REV}"

# calls LABEL=ARGV...: time each argv (a JSON list) N times, interleaved;
# prints LABEL_ms=MEDIAN LABEL_p90_ms=P90 per label.
calls() {
    "$PY" - "$N" "$@" <<'EOF'
import json, os, statistics, sys, time
n = int(sys.argv[1])
runs = [(a.split("=", 1)[0], json.loads(a.split("=", 1)[1])) for a in sys.argv[2:]]
fa = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
      (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]
times = {label: [] for label, _ in runs}
for _ in range(n):
    for label, argv in runs:
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
        _, st = os.waitpid(pid, 0)
        times[label].append(time.perf_counter() - t0)
        if os.waitstatus_to_exitcode(st) != 0:
            sys.exit("%s failed: %s" % (label, " ".join(argv)))
for label, _ in runs:
    v = sorted(times[label])
    print("%s_ms=%.2f %s_p90_ms=%.2f" % (label, 1000 * statistics.median(v),
          label, 1000 * v[int(0.9 * len(v))]), end=" ")
print()
EOF
}

# submits BIN: JOBS submissions one after the other over TCP; jobs/s.
submits() {
    local t0 t1
    t0=$(date +%s.%N)
    for _ in $(seq 1 "$JOBS"); do
        LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$TOKEN "$1" submit \
            --nodes 1 --name bench -- true >/dev/null 2>&1 || exit 1
    done
    t1=$(date +%s.%N)
    "$PY" -c "print('%.1f' % ($JOBS / ($t1 - $t0)))"
}

# fsyncs: N appends of 200 bytes, each made durable with fdatasync, in
# the scheduler's state directory (its file system); prints the median
# and p90 ms: what one serial acknowledged submission waits for at least.
fsyncs() {
    "$PY" - "$N" "$TEST_DIR/sched/state" <<'EOF'
import os, statistics, sys, time
n, d = int(sys.argv[1]), sys.argv[2]
path = os.path.join(d, "fsync-bench")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
v = []
for _ in range(n):
    os.write(fd, b"x" * 200)
    t0 = time.perf_counter()
    os.fdatasync(fd)
    v.append(time.perf_counter() - t0)
os.close(fd)
os.unlink(path)
v.sort()
print("%.2f %.2f" % (1000 * statistics.median(v), 1000 * v[int(0.9 * len(v))]))
EOF
}

declare -A FIG=()
args=("true=[\"/bin/true\"]")
for i in "${!NAMES[@]}"; do
    x=${NAMES[$i]} b=${BINS[$i]}
    FIG[$x.libs]=$(ldd "$b" | wc -l)
    args+=("$x.help=[\"$b\", \"--help\"]"
        "$x.whoami=[\"$b\", \"--server\", \"$SOCK\", \"whoami\"]"
        "$x.whoami_tcp=[\"$b\", \"--server\", \"$LOCKSTEP_URL\", \"--token\", \"$TOKEN\", \"whoami\"]")
done
line=$(calls "${args[@]}") || exit 1
for kv in $line; do FIG[${kv%%=*}]=${kv#*=}; done
FSYNC=()
for r in $(seq 1 "$ROUNDS"); do
    read -r f50 _ <<<"$(fsyncs)"
    FSYNC+=("$f50")
    for i in "${!NAMES[@]}"; do
        FIG[${NAMES[$i]}.submit_per_s]+="$(submits "${BINS[$i]}") "
    done
done

echo
printf '%-22s | %10s' figure /bin/true
printf ' | %10s' "${NAMES[@]}"
echo
row() { # KEY: the figure of each binary, /bin/true's where it has one
    local k=$1 x v
    printf '%-22s | %10s' "$k" "${FIG[true.$k]:--}"
    for x in "${NAMES[@]}"; do
        v=${FIG[$x.$k]:-}
        case $k in
        submit_per_s) v=$("$PY" -c 'import statistics, sys
print("%.1f" % statistics.median(float(x) for x in sys.argv[1:]))' $v) ;;
        esac
        printf ' | %10s' "$v"
    done
    echo
}
FIG[true.help_ms]=${FIG[true_ms]} FIG[true.help_p90_ms]=${FIG[true_p90_ms]}
for k in libs help_ms help_p90_ms whoami_ms whoami_p90_ms whoami_tcp_ms \
    whoami_tcp_p90_ms submit_per_s; do
    row "$k"
done
echo "(help_ms's /bin/true column: the same process start doing nothing;" \
    "submit_per_s: rounds ${ROUNDS}, each $JOBS calls)"
# The floor of a serial shell loop: one process start and request (the
# whoami over TCP) and one fsync per call.
"$PY" - "${FIG[after.whoami_tcp_ms]}" "${FIG[after.submit_per_s]}" "${FSYNC[@]}" <<'EOF'
import statistics, sys
call, rates, fs = float(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
f = statistics.median(float(x) for x in fs)
rate = statistics.median(float(x) for x in rates)
floor = 1000.0 / (call + f)
print("fdatasync in the state directory: median %.2f ms (rounds: %s); a serial "
      "loop's floor with this CLI (whoami_tcp_ms + fdatasync): %.0f calls/s; "
      "submit_per_s is %.2f of it" % (f, " ".join(fs), floor, rate / floor))
EOF
stop_scheduler
