#!/bin/bash
# t0004: `meson install` into a DESTDIR gives an operator what
# docs/operations.md says: the binaries, the systemd units (verified by
# systemd-analyze where it is installed), the sysusers.d entry, the example
# configs (which pass --check-config), the documentation with every
# relative link resolving, and the Python SDK where Debian's
# /usr/bin/python3 imports it. Then every `sh` block of
# docs/operations.md runs, in order, in a sandbox under the DESTDIR
# (tests/helpers/doc-sandbox.sh says what stands in for what): install,
# a scheduler (serving TLS with a certificate of the cluster's own CA)
# and an agent (over https://) started from the installed units, tokens,
# a job, a certificate rotation, cordon, upgrade, backup and restore
# while running, monitoring.
. "$(dirname "$0")/../lib/harness.sh"

ROOT=$TEST_DIR/root
UNITS=$TEST_DIR/units
mkdir -p "$UNITS" "$TEST_DIR/work"
PREFIX=$(meson introspect "$BUILD_DIR" --buildoptions |
    "$PY" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
DATADIR=$(meson introspect "$BUILD_DIR" --buildoptions |
    "$PY" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "datadir"))')
DOCDIR=$ROOT$PREFIX/$DATADIR/doc/lockstep
UNITDIR=$ROOT$PREFIX/lib/systemd/system
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export ROOT PREFIX PORT BUILD_DIR UNITS

test_expect_success 'meson install --destdir installs the tree' '
    meson install -C "$BUILD_DIR" --no-rebuild --quiet --destdir "$ROOT" &&
    for b in lockstepd lockstep-agent lockstep-supervisor lockstep; do
        test -x "$ROOT$PREFIX/bin/$b" || { echo "no $b"; return 1; }
    done &&
    test -f "$UNITDIR/lockstepd.service" &&
    test -f "$UNITDIR/lockstep-agent.service" &&
    test -f "$ROOT$PREFIX/lib/sysusers.d/lockstep.conf" &&
    test -x "$ROOT$PREFIX/share/lockstep/tls-certs.sh" &&
    for d in README.md config.md api.md architecture.md cadence.md \
        fault-tolerance.md operations.md examples/lockstepd.conf \
        examples/lockstep-agent.conf; do
        test -s "$DOCDIR/$d" || { echo "no $DOCDIR/$d"; return 1; }
    done
'

test_expect_success 'every relative link of the installed docs resolves' '
    "$PY" - "$DOCDIR" <<-PYEOF
	import os, re, sys
	bad, n = [], 0
	for dp, _, files in os.walk(sys.argv[1]):
	    for f in files:
	        if not f.endswith(".md"):
	            continue
	        path = os.path.join(dp, f)
	        for m in re.finditer(r"\]\(([^)\s]+)\)", open(path).read()):
	            t = m.group(1)
	            if re.match(r"[a-z]+:", t) or t.startswith("#"):
	                continue
	            n += 1
	            if not os.path.exists(os.path.join(dp, t.split("#")[0])):
	                bad.append("%s: %s" % (path, t))
	print("%d relative links checked" % n)
	if bad or n == 0:
	    sys.exit("broken links:\n  " + "\n  ".join(bad))
	PYEOF
'

test_expect_success 'the installed fault-tolerance.md links resolve' '
    grep -q "](README.md#how-it-works)" "$DOCDIR/fault-tolerance.md" &&
    grep -q "](architecture.md)" "$DOCDIR/fault-tolerance.md"
'

test_expect_success '/usr/bin/python3 imports the installed SDK from its own path' '
    test -x /usr/bin/python3 || { echo "no /usr/bin/python3"; return 1; }
    # The directories under the prefix that this interpreter searches,
    # moved into the DESTDIR: the SDK must be in one of them.
    dirs=$(/usr/bin/python3 -c "import sys; print(\":\".join(\"$ROOT\" + p for p in sys.path if p.startswith(\"$PREFIX/\")))") &&
    echo "searched: $dirs" && test -n "$dirs" &&
    f=$(cd / && env -u PYTHONPATH PYTHONPATH="$dirs" PYTHONNOUSERSITE=1 \
        /usr/bin/python3 -c "import lockstep; print(lockstep.__file__)") &&
    echo "imported $f" &&
    case $f in "$ROOT$PREFIX"/*) ;; *) return 1 ;; esac
'

test_expect_success 'the installed example configs pass --check-config' '
    "$ROOT$PREFIX/share/lockstep/tls-certs.sh" "$TEST_DIR/tls" 127.0.0.1 \
        >/dev/null &&
    "$ROOT$PREFIX/bin/lockstepd" -c "$DOCDIR/examples/lockstepd.conf" \
        -o cluster_secret_file="$CLUSTER_SECRET" \
        -o tls_cert="$TEST_DIR/tls/server.pem" \
        -o tls_key="$TEST_DIR/tls/server.key" --check-config |
        grep -qx "configuration OK" &&
    "$ROOT$PREFIX/bin/lockstep-agent" -c "$DOCDIR/examples/lockstep-agent.conf" \
        -o cluster_secret_file="$CLUSTER_SECRET" --check-config |
        grep -qx "configuration OK"
'

test_expect_success 'the installed units pass systemd-analyze verify' '
    if ! command -v systemd-analyze >/dev/null; then
        echo "# skipped: systemd-analyze is not installed" >&3
        return 0
    fi
    (. "$SRC_DIR/tests/helpers/doc-sandbox.sh" &&
        systemd-analyze verify "$UNITDIR/lockstepd.service" \
            "$UNITDIR/lockstep-agent.service") &&
    # It fails on a broken unit.
    sed "s/^Type=simple/Type=bogus/" \
        "$UNITDIR/lockstepd.service" >"$UNITS/broken.service" &&
    ! (. "$SRC_DIR/tests/helpers/doc-sandbox.sh" &&
        systemd-analyze verify "$UNITS/broken.service")
' 3>&1

# docs/operations.md, block by block, rewritten for the sandbox.
sandbox_text() {
    sed -E \
        -e 's#^meson setup build .*#: the suite built the tree#' \
        -e 's#^ninja -C build$#: the suite built the tree#' \
        -e "s#^meson install -C build\$#meson install -C \"\$BUILD_DIR\" --no-rebuild --quiet --destdir \"\$ROOT\"#" \
        -e "s#(^|[^A-Za-z0-9_.-])/(usr/local|etc/lockstep|var/lib/lockstep|run/lockstep|var/backups)#\\1$ROOT/\\2#g" \
        -e "s#(sched\\.example\\.org|0\\.0\\.0\\.0):7300#127.0.0.1:$PORT#g" \
        -e "s#sched\\.example\\.org#127.0.0.1#g"
}

"$PY" "$SRC_DIR/tests/helpers/doc-blocks.py" "$SRC_DIR/docs/operations.md" sh |
    sandbox_text >"$TEST_DIR/operations.sh"
blocks=$(grep -c '^# --- ' "$TEST_DIR/operations.sh")

test_expect_success "docs/operations.md has command blocks ($blocks)" '
    test "$blocks" -ge 10
'

for ((b = 1; b <= blocks; b++)); do
    awk -v b="$b" '/^# --- /{n++} n == b' "$TEST_DIR/operations.sh" \
        >"$TEST_DIR/block-$b.sh"
    where=$(head -n 1 "$TEST_DIR/block-$b.sh" | sed "s|^# --- $SRC_DIR/||")
    test_expect_success "$where runs as written" '
        cat "$TEST_DIR/block-$b.sh" &&
        (cd "$TEST_DIR/work" &&
            bash -e -o pipefail -c ". \"\$1\"; . \"\$2\"" bash \
                "$SRC_DIR/tests/helpers/doc-sandbox.sh" "$TEST_DIR/block-$b.sh")
    '
done

test_expect_success 'the sandbox ran what the document promises' '
    . "$SRC_DIR/tests/helpers/doc-sandbox.sh" &&
    grep -q "^lockstep:" "$ROOT/etc/passwd" &&
    grep -q "server=https://127.0.0.1:$PORT" "$UNITS/lockstep-agent.log" &&
    grep -q "started: tcp=127.0.0.1:$PORT (tls)" "$UNITS/lockstepd.log" &&
    grep -q "reloaded TLS certificate" "$UNITS/lockstepd.log" &&
    test "$(stat -c %a "$ROOT/etc/lockstep/node.key")" = 600 &&
    test "$(stat -c %a "$ROOT/etc/lockstep/cluster.secret")" = 640 &&
    ! test -e "$ROOT/etc/lockstep/cluster.secret.previous" &&
    grep -q "^node = $(hostname)$" "$ROOT/etc/lockstep/node.key" &&
    command lockstep jobs --all --json | jget "[j[0][\"name\"], j[0][\"state\"]]" |
        grep -qF "[\"smoke\", \"SUCCEEDED\"]" &&
    test "$(command lockstep nodes --json | jget "[n[\"state\"] for n in j]")" = "[\"UP\"]" &&
    "$PY" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute(\"PRAGMA integrity_check\").fetchone()[0])" \
        "$ROOT/var/backups/lockstep/lockstep.db" | grep -qx ok
'

test_expect_success 'the daemons stop' '
    . "$SRC_DIR/tests/helpers/doc-sandbox.sh" &&
    systemctl stop lockstep-agent && systemctl stop lockstepd
'

test_done
