#!/bin/bash
# fuzz-campaign.sh - a long fuzzing campaign: every harness, in rounds,
# for hours, each round going on from the corpus the last one left
#
#   tools/fuzz-campaign.sh [-d SECONDS] [-r SECONDS] [-j N] [-o DIR] BUILD_DIR
#                          [HARNESS...]
#
#   -d  how long in all (default 14400: 4 hours)
#   -r  how long each harness runs per round (default 600)
#   -j  harnesses run side by side (default 1; one per core to spare)
#   -o  where the corpora, findings and figures go (default
#       BUILD_DIR/fuzz-campaign)
#
# BUILD_DIR is a -Dfuzz=true build (make fuzz-build). Each round is one
# fuzz/run.sh per harness, so the committed regressions and the seeds run
# first every time. A finding does not stop the campaign: its input is
# kept in DIR/findings-kept/ (fix it, then copy it to fuzz/corpus/<name>/
# as a regression input). After every round DIR/figures.tsv holds, per
# harness, the rounds run, executions, the last coverage (libFuzzer's cov:
# edges, ft: features), the corpus size and the findings; at the end they
# are printed as a table with the total.
set -u
dur=14400 round=600 par=1 out=
while getopts "d:r:j:o:h" c; do
    case $c in
    d) dur=$OPTARG ;;
    r) round=$OPTARG ;;
    j) par=$OPTARG ;;
    o) out=$OPTARG ;;
    *) sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 2; }
build=$1
shift
src=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$build/fuzz-campaign}
mkdir -p "$out/findings-kept" "$out/rounds"
if [ $# -gt 0 ]; then
    names="$*"
else
    names=$(cd "$src/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
fi

ninja -C "$build" fuzzers >"$out/build.log" 2>&1 || {
    tail -n 30 "$out/build.log"
    echo "fuzz-campaign: cannot build the harnesses"
    exit 1
}
python3 "$src/fuzz/seeds.py" "$out/seeds" || exit 1

declare -A rounds execs cov ft found
for n in $names; do
    rounds[$n]=0 execs[$n]=0 cov[$n]=- ft[$n]=- found[$n]=0
done

# One round of harness n; its run.sh output goes to DIR/rounds/n.out.
one_round() {
    "$src/fuzz/run.sh" -n -s "$out/seeds" -t "$round" -o "$out" "$build" \
        "$1" >"$out/rounds/$1.out" 2>&1
    # A finding is moved aside before the next round's run.sh clears it.
    for f in "$out/findings/$1"-*; do
        [ -e "$f" ] && mv "$f" "$out/findings-kept/"
    done
}

figures() {
    local n total=0
    printf "harness\trounds\texecutions\tcov\tft\tcorpus\tfindings\n" \
        >"$out/figures.tsv"
    for n in $names; do
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$n" "${rounds[$n]}" \
            "${execs[$n]}" "${cov[$n]}" "${ft[$n]}" \
            "$(ls "$out/corpus/$n" 2>/dev/null | wc -l)" "${found[$n]}" \
            >>"$out/figures.tsv"
        total=$((total + ${execs[$n]}))
    done
    printf "total\t-\t%s\t-\t-\t-\t-\n" "$total" >>"$out/figures.tsv"
}

start=$(date +%s)
r=0
while [ $(($(date +%s) - start)) -lt "$dur" ]; do
    r=$((r + 1))
    echo "# round $r ($(date -u +%H:%M:%S)): ${round}s a harness"
    running=0
    for n in $names; do
        one_round "$n" &
        running=$((running + 1))
        if [ "$running" -ge "$par" ]; then
            wait -n
            running=$((running - 1))
        fi
    done
    wait
    for n in $names; do
        line=$(grep -a -E '^(not )?ok [0-9]+ fuzz_' "$out/rounds/$n.out")
        e=$(echo "$line" | sed -n 's/.* \([0-9]*\) execs.*/\1/p')
        rounds[$n]=$((${rounds[$n]} + 1))
        execs[$n]=$((${execs[$n]} + ${e:-0}))
        c=$(echo "$line" | sed -n 's/.* cov \([0-9]*\) ft \([0-9]*\).*/\1 \2/p')
        [ -n "$c" ] && cov[$n]=${c% *} ft[$n]=${c#* }
        case $line in
        "not ok"*) found[$n]=$((${found[$n]} + 1))
            echo "# finding in $n:"
            grep -a -A 6 '^not ok' "$out/rounds/$n.out" | grep -v passed ;;
        esac
    done
    figures
done

echo "# campaign: $(($(date +%s) - start))s, $r rounds of ${round}s a harness"
column -t -s "$(printf '\t')" "$out/figures.tsv"
nfound=$(ls "$out/findings-kept" | wc -l)
echo "# findings kept: $nfound (in $out/findings-kept)"
[ "$nfound" -eq 0 ]
