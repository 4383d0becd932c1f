#!/bin/bash
# fuzz-coverage.sh - the source lines the fuzz corpora reach, per file
#
#   tools/fuzz-coverage.sh [-b COV_BUILD] [-o DIR] CORPUS_ROOT [HARNESS...]
#
# Builds the harnesses with clang's source-based coverage in COV_BUILD
# (default build-fuzz-cov; configured when missing), replays every input
# each harness has (CORPUS_ROOT/corpus/<name>, as tools/fuzz-campaign.sh
# or fuzz/run.sh -o leave it, its seeds and fuzz/corpus/<name>) once,
# without mutating, merges the profiles and prints llvm-cov's report for
# the parsers' source files: regions, functions and lines covered. The
# whole report (every file) is kept in DIR/report.txt (default
# COV_BUILD/fuzz-coverage). Needs llvm-profdata and llvm-cov (Debian's
# llvm-14).
set -u
cov= out=
while getopts "b:o:h" c; do
    case $c in
    b) cov=$OPTARG ;;
    o) out=$OPTARG ;;
    *) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 2; }
root=$1
shift
src=$(cd "$(dirname "$0")/.." && pwd)
cov=${cov:-build-fuzz-cov}
out=${out:-$cov/fuzz-coverage}
profdata=$(command -v llvm-profdata-14 || command -v llvm-profdata) ||
    { echo "fuzz-coverage: no llvm-profdata (apt-get install llvm-14)"; exit 1; }
llvmcov=$(command -v llvm-cov-14 || command -v llvm-cov) ||
    { echo "fuzz-coverage: no llvm-cov (apt-get install llvm-14)"; exit 1; }

if [ ! -f "$cov/build.ninja" ]; then
    flags="-fprofile-instr-generate -fcoverage-mapping"
    # (meson runs what it compiles: its profiles go nowhere)
    LLVM_PROFILE_FILE=/dev/null CC=clang meson setup "$cov" -Dfuzz=true \
        -Dtests=false \
        -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args="$flags" -Dc_link_args="$flags" >/dev/null || exit 1
fi
ninja -C "$cov" fuzzers >/dev/null || exit 1
if [ $# -gt 0 ]; then
    names="$*"
else
    names=$(cd "$src/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
fi
rm -rf "$out"
mkdir -p "$out/prof"
python3 "$src/fuzz/seeds.py" "$out/seeds" >/dev/null || exit 1

objects=()
for n in $names; do
    dirs=()
    for d in "$root/corpus/$n" "$out/seeds/$n" "$src/fuzz/corpus/$n"; do
        [ -d "$d" ] && dirs+=("$d")
    done
    # -runs=0: every input once, then stop.
    LLVM_PROFILE_FILE="$out/prof/$n-%p.profraw" \
        ASAN_OPTIONS=detect_leaks=0 "$cov/fuzz/fuzz_$n" -runs=0 \
        -rss_limit_mb=4096 -timeout=30 "${dirs[@]}" >"$out/$n.log" 2>&1 ||
        echo "# fuzz_$n did not replay cleanly: see $out/$n.log"
    inputs=$(awk '/files found in/ { n += $2 } END { print n + 0 }' \
        "$out/$n.log")
    echo "# fuzz_$n: ${inputs:-0} inputs replayed"
    objects+=(-object "$cov/fuzz/fuzz_$n")
done
"$profdata" merge -sparse "$out"/prof/*.profraw -o "$out/all.profdata" ||
    exit 1
# The first -object is positional for llvm-cov.
"$llvmcov" report -instr-profile="$out/all.profdata" "${objects[@]:1}" \
    -ignore-filename-regex='(/fuzz/fuzz[a-z_]*\.[ch]|^/usr/)$' >"$out/report.txt" ||
    exit 1
# The parsers of untrusted input (docs/fuzzing.md), and the total.
grep -E '^(Filename|-+$|.*(scheduler/http_(parse|conn|resp|url|server)|scheduler/api[a-z_]*|common/(proto[a-z_]*|jsonx|config|b64|witness|ctlfile)|agent/(health_parse|hc_kmsg[a-z_]*|hc_gpu|hc_xid|proc_progress|proc_ckpt|supfile|tail|resources|agentd)|cli/c[a-z_]*)\.c|^TOTAL)' \
    "$out/report.txt"
echo "# the whole report: $out/report.txt"
