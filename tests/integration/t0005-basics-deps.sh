#!/bin/bash
# t0005: `make deps` (tools/apt-install.sh) waits while another install
# holds the package manager's lock instead of failing: apt-get is asked
# to wait for dpkg's lock (-o DPkg::Lock::Timeout), and a run that still
# failed on a lock is retried until LOCKSTEP_APT_LOCK_TIMEOUT; any other
# failure is not retried; installed packages are not installed again.
# apt-get is replaced (APT_GET) by a script that fails on a lock as many
# times as told: the real one would change this machine's packages.
# Runs as root only (the script uses sudo otherwise).
. "$(dirname "$0")/../lib/harness.sh"

if [ "$(id -u)" != 0 ]; then
    echo "ok 1 # SKIP not root: tools/apt-install.sh would run sudo"
    echo "1..1"
    exit 0
fi

INSTALL=$SRC_DIR/tools/apt-install.sh
MISSING=lockstep-t0005-no-such-package

# fake_apt N: an apt-get that fails on the dpkg lock N times, then
# succeeds; it logs its arguments to calls.
fake_apt() {
    echo "$1" >locked
    : >calls
    cat >fake-apt-get <<EOF2
#!/bin/bash
echo "\$*" >>"$TEST_DIR/calls"
n=\$(cat "$TEST_DIR/locked")
if [ "\$n" -gt 0 ]; then
    echo \$((n - 1)) >"$TEST_DIR/locked"
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
    exit 100
fi
[ "\${FAKE_FAIL:-}" = 1 ] && [ "\$3" = install ] &&
    { echo "E: Unable to locate package \$6" >&2; exit 100; }
exit 0
EOF2
    chmod +x fake-apt-get
}

test_expect_success 'nothing is installed when nothing is missing' '
    fake_apt 0 &&
    APT_GET=$TEST_DIR/fake-apt-get "$INSTALL" bash coreutils >out 2>&1 &&
    ! test -s calls && ! test -s out
'

test_expect_success 'a held lock is waited out, then the install runs' '
    fake_apt 1 &&
    APT_GET=$TEST_DIR/fake-apt-get "$INSTALL" bash $MISSING >out 2>&1; rc=$?
    cat out calls && test $rc = 0 &&
    grep -q "waiting" out &&
    test "$(grep -c "^-o DPkg::Lock::Timeout=600 update" calls)" = 2 &&
    grep -qx -- "-o DPkg::Lock::Timeout=600 install -y -q $MISSING" calls
'

test_expect_success 'a lock held past LOCKSTEP_APT_LOCK_TIMEOUT fails' '
    fake_apt 1000 &&
    LOCKSTEP_APT_LOCK_TIMEOUT=0 APT_GET=$TEST_DIR/fake-apt-get \
        "$INSTALL" $MISSING >out 2>&1; rc=$?
    cat out && test $rc != 0 && grep -q "still held after 0s" out &&
    test "$(wc -l <calls)" = 1
'

test_expect_success 'another failure is not retried' '
    fake_apt 0 &&
    FAKE_FAIL=1 APT_GET=$TEST_DIR/fake-apt-get "$INSTALL" $MISSING >out 2>&1; rc=$?
    cat out calls && test $rc != 0 && grep -q "Unable to locate" out &&
    test "$(grep -c install calls)" = 1
'

test_done
