#!/bin/bash
# t0002: the shipped example configs pass --check-config, and document
# every key the daemons know (so the examples and docs/config.md cannot
# fall behind the code); a config error exits 78 naming file:line.
. "$(dirname "$0")/../lib/harness.sh"

EX=$SRC_DIR/deploy/examples

# keys_of FILE: the settings an example shows, commented out or not
# ("#key = value" or "key = value"; prose comments have "# " first).
keys_of() {
    sed -n 's/^#\{0,1\}\([a-z_][a-z_]*\) = .*/\1/p; s/^#\{0,1\}\([a-z_][a-z_]*\) =$/\1/p' \
        "$1" | sort -u
}

doc_keys() { # SECTION: the keys of one table in docs/config.md
    awk -v sec="$1" '/^## /{on = ($2 == sec)} on && /^\| `/' \
        "$SRC_DIR/docs/config.md" | sed 's/^| `\([a-z_]*\)`.*/\1/' | sort -u
}

# The example's defaults listen on TCP with TLS: the certificate is the
# operator's to make, as the secret is.
test_expect_success 'lockstepd.conf passes --check-config' '
    tls_certs &&
    $LOCKSTEPD -c $EX/lockstepd.conf -o cluster_secret_file=$CLUSTER_SECRET \
        -o tls_cert=$TLS_DIR/server.pem -o tls_key=$TLS_DIR/server.key \
        -o tls_ca=$TLS_DIR/ca.pem --check-config | grep -qx "configuration OK"
'

test_expect_success 'TLS is on by default: no certificate, no start' '
    $LOCKSTEPD -c $EX/lockstepd.conf -o cluster_secret_file=$CLUSTER_SECRET \
        --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "needs tls_cert and tls_key" err &&
    grep -q "tls = off" err &&
    $LOCKSTEPD -c $EX/lockstepd.conf -o cluster_secret_file=$CLUSTER_SECRET \
        -o tls=off --check-config | grep -qx "configuration OK" &&
    $LOCKSTEPD -c $EX/lockstepd.conf -o cluster_secret_file=$CLUSTER_SECRET \
        -o listen= --check-config | grep -qx "configuration OK"
'

test_expect_success 'a TLS key others can read, or from another CA, is refused' '
    cp $TLS_DIR/server.key open.key && chmod 644 open.key &&
    $LOCKSTEPD -o cluster_secret_file=$CLUSTER_SECRET \
        -o tls_cert=$TLS_DIR/server.pem -o tls_key=open.key \
        --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "chmod 600" err &&
    "$SRC_DIR/deploy/tls-certs.sh" other 127.0.0.1 >/dev/null &&
    $LOCKSTEPD -o cluster_secret_file=$CLUSTER_SECRET \
        -o tls_cert=$TLS_DIR/server.pem -o tls_key=$TLS_DIR/server.key \
        -o tls_ca=other/ca.pem --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "does not verify against the CA" err
'

test_expect_success 'lockstep-agent.conf passes --check-config' '
    $AGENTD -c $EX/lockstep-agent.conf -o cluster_secret_file=$CLUSTER_SECRET \
        --check-config | grep -qx "configuration OK"
'

test_expect_success 'the examples and docs/config.md list the same keys' '
    diff <(keys_of $EX/lockstepd.conf) <(doc_keys lockstepd) &&
    diff <(keys_of $EX/lockstep-agent.conf) <(doc_keys lockstep-agent)
'

test_expect_success 'every documented key is one the daemons accept' '
    for k in $(doc_keys lockstepd); do
        $LOCKSTEPD -o cluster_secret_file=$CLUSTER_SECRET -o "$k=" \
            --check-config 2>&1 | grep -q "unknown key" &&
            { echo "lockstepd does not know $k"; return 1; }
    done
    for k in $(doc_keys lockstep-agent); do
        $AGENTD -o cluster_secret_file=$CLUSTER_SECRET -o "$k=" \
            --check-config 2>&1 | grep -q "unknown key" &&
            { echo "lockstep-agent does not know $k"; return 1; }
    done
    $LOCKSTEPD -o no_such_key=1 --check-config 2>&1 | grep -q "unknown key"
'

test_expect_success 'a config error exits 78 and names file:line' '
    printf "listen = 127.0.0.1:0\nbogus_key = 1\n" >bad.conf &&
    $LOCKSTEPD -c bad.conf --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q "bad.conf:2" err && grep -q bogus_key err
'

test_expect_success 'lease_ms not below node_timeout_ms is refused' '
    $LOCKSTEPD -o cluster_secret_file=$CLUSTER_SECRET -o lease_ms=10000 \
        -o node_timeout_ms=10000 --check-config 2>err; rc=$?; cat err &&
    test $rc = 78 && grep -q lease_ms err
'

test_expect_success 'a world-readable cluster secret is refused' '
    cp $CLUSTER_SECRET open.secret && chmod 644 open.secret &&
    $AGENTD -o cluster_secret_file=open.secret --check-config 2>err; rc=$?;
    cat err && test $rc = 78 && grep -q "chmod 600" err
'

test_done
