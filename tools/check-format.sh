#!/bin/sh
# check-format.sh - check the C sources against .clang-format, or fix them
#
#   tools/check-format.sh [--fix | --diff] [FILE...]
#
# Without FILE, every tracked *.c and *.h file (git ls-files; outside a git
# checkout, those under common/ scheduler/ agent/ cli/ tests/ sdk/).
# Prints the files clang-format would change and exits 1 if there are any,
# 0 if none, 2 on an error (no clang-format, a file it cannot format).
#   --fix   rewrite those files in place (exit 0 unless clang-format fails)
#   --diff  also show what would change, as a unified diff
# CLANG_FORMAT names the binary (default clang-format). The config is
# written for clang-format 14, the one Debian 12 ships; another version may
# format some lines differently, so the script says so.
set -u
cd "$(dirname "$0")/.." || exit 2

mode=check
while [ $# -gt 0 ]; do
    case $1 in
    --fix) mode=fix ;;
    --diff) mode=diff ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) echo "check-format: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done

cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "check-format: '$cf' not found (apt-get install clang-format)" >&2
    exit 2
fi
ver=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')
if [ "$ver" != 14 ]; then
    echo "check-format: warning: clang-format ${ver:-?}, .clang-format is" \
        "written for 14; some lines may differ" >&2
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

if [ $# -gt 0 ]; then
    printf '%s\n' "$@" >"$tmp/files"
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.c' '*.h' >"$tmp/files"
else
    find common scheduler agent cli tests sdk -name '*.[ch]' 2>/dev/null |
        sort >"$tmp/files"
fi
total=$(grep -c . "$tmp/files")

# One clang-format per file, two at a time; each file's formatted text goes
# next to it in $tmp. A file that differs is listed in $tmp/bad, one that
# clang-format fails on in $tmp/err.
tr '\n' '\0' <"$tmp/files" | xargs -0 -r -P "$(nproc 2>/dev/null || echo 2)" \
    -n 16 sh -c '
cf=$1 tmp=$2; shift 2
for f; do
    out="$tmp/out.$$"
    if ! "$cf" --style=file "$f" >"$out" 2>"$out.err"; then
        printf "%s: %s\n" "$f" "$(head -n 1 "$out.err")" >>"$tmp/err.$$"
    elif ! cmp -s "$f" "$out"; then
        printf "%s\n" "$f" >>"$tmp/bad.$$"
    fi
done
rm -f "$out" "$out.err"' sh "$cf" "$tmp"

cat "$tmp"/err.* 2>/dev/null | sort >"$tmp/err"
cat "$tmp"/bad.* 2>/dev/null | sort >"$tmp/bad"
if [ -s "$tmp/err" ]; then
    echo "check-format: clang-format failed:" >&2
    head -n 5 "$tmp/err" >&2
    exit 2
fi
nbad=$(grep -c . "$tmp/bad")
if [ "$nbad" -eq 0 ]; then
    echo "check-format: $total files, all formatted"
    exit 0
fi

if [ "$mode" = fix ]; then
    tr '\n' '\0' <"$tmp/bad" | xargs -0 "$cf" -i --style=file || exit 2
    echo "check-format: reformatted $nbad of $total files"
    exit 0
fi

# Short by default: at most 20 names.
head -n 20 "$tmp/bad" | sed 's/^/  /'
[ "$nbad" -gt 20 ] && echo "  ... and $((nbad - 20)) more"
if [ "$mode" = diff ]; then
    while read -r f; do
        "$cf" --style=file "$f" | diff -u "$f" - | sed "2s|^+++ -|+++ $f|"
    done <"$tmp/bad"
fi
echo "check-format: $nbad of $total files need formatting;" \
    "run tools/check-format.sh --fix (or --diff to see why)"
exit 1
